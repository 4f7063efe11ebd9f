// --min-tls-version / MIN_TLS_VERSION, from the flag to the handshake: TLS 1.3 only by default,
// TLS 1.2 as well when asked for (for an ESO built to speak only TLS 1.2).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseFileProviderConfig } from '../src/config.js';
import { runFileProvider } from '../src/main.js';
import { TEST_SERVER_NAME, writeCertDir } from '@eso-mtls/test-kit/pki';
import { createTestPkiSet, type TestPkiSet } from '@eso-mtls/test-kit/provider-fixture';
import { probe } from '@eso-mtls/test-kit/tls-probe';

describe('configuration of the TLS floor', () => {
  const floor = (argv: string[], env: Record<string, string> = {}) => parseFileProviderConfig(['--data-file', '/d.yaml', ...argv], env).minTlsVersion;

  it('--min-tls-version wins over MIN_TLS_VERSION; the default is TLS 1.3', () => {
    expect(floor([])).toBe('TLSv1.3');
    expect(floor([], { MIN_TLS_VERSION: 'TLSv1.2' })).toBe('TLSv1.2');
    expect(floor(['--min-tls-version', 'TLSv1.3'], { MIN_TLS_VERSION: 'TLSv1.2' })).toBe('TLSv1.3');
  });

  it('names a version it does not accept', () => {
    expect(() => floor(['--min-tls-version', '1.2'])).toThrow('min-tls-version="1.2" is not one of TLSv1.3, TLSv1.2');
    expect(() => floor([], { MIN_TLS_VERSION: 'TLSv1.1' })).toThrow('min-tls-version="TLSv1.1" is not one of TLSv1.3, TLSv1.2');
  });
});

describe('the flag reaches the gRPC port', () => {
  let pki: TestPkiSet;
  let dir: string;
  let certDir: string;
  beforeAll(async () => {
    pki = await createTestPkiSet();
    dir = mkdtempSync(join(tmpdir(), 'file-provider-tls-'));
    writeFileSync(join(dir, 'secrets.yaml'), 'secrets: {}\n');
    certDir = writeCertDir({ ca: pki.ca.cert, cert: pki.server.cert, key: pki.server.key });
  });
  afterAll(() => {
    for (const d of [dir, certDir]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it.each([
    [[], false],
    [['--min-tls-version', 'TLSv1.2'], true],
  ])('%j: a client capped at TLS 1.2 accepted: %s; TLS 1.3 always', async (flags, tls12) => {
    const args = ['--data-file', join(dir, 'secrets.yaml'), '--cert-dir', certDir, '--host', '127.0.0.1', '--port', '0', '--health-port', '0', ...flags];
    const running = await runFileProvider(parseFileProviderConfig(args, {}));
    try {
      const client = { ca: pki.ca.cert, cert: pki.client.cert, key: pki.client.key, servername: TEST_SERVER_NAME };
      const v13 = await probe(running.server.port, client);
      expect([v13.accepted, v13.protocol]).toEqual([true, 'TLSv1.3']);
      const v12 = await probe(running.server.port, { ...client, maxVersion: 'TLSv1.2' });
      expect([v12.accepted, v12.protocol ?? v12.errorCode]).toEqual(tls12 ? [true, 'TLSv1.2'] : [false, 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION']);
    } finally {
      await running.close();
    }
  });
});
