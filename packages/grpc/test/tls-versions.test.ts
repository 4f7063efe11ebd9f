// What the provider server offers, seen from outside with `openssl s_client` (a TLS stack other
// than the server's): TLS 1.3 only by default; with `minTlsVersion: 'TLSv1.2'`, TLS 1.2 as well,
// but only with ECDHE and an AEAD cipher. Every TLS 1.2 suite the openssl CLI knows is tried.
// ESO's side, ProviderChannel, asks for TLS 1.3 as well.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createSecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clientTlsMaterial, createSecretStoreProviderClient, ProviderChannel, type SecretStoreProvider, TLS12_CIPHERS } from '@eso-mtls/grpc';
import { failureOf } from '@eso-mtls/test-kit/failure';
import { TEST_SERVER_NAME, type KeyPair } from '@eso-mtls/test-kit/pki';
import { opensslP256Ca, opensslPodLeaf } from '@eso-mtls/test-kit/pod-certificates';
import { startReloadingProvider, type ReloadingProvider } from '@eso-mtls/test-kit/reloading-provider';
import { sClient, type SClientOutcome } from './support/openssl-tls.js';

const implementation: SecretStoreProvider = { getSecret: () => ({}) };

let ca: KeyPair;
let client: KeyPair;
let files: { caFile: string; certFile: string; keyFile: string };
let scratch: string;
const providers: ReloadingProvider[] = [];

/** A provider serving a `keyType` server leaf, with the given floor (undefined: the default). */
async function providerWith(keyType: 'ECDSAP256' | 'RSA3072', minTlsVersion?: 'TLSv1.2'): Promise<ReloadingProvider> {
  const leaf = await opensslPodLeaf(ca, keyType, 'server');
  const p = await startReloadingProvider(ca.cert, leaf, {
    implementation,
    certLayout: 'pod-certificate',
    log: false,
    ...(minTlsVersion ? { minTlsVersion } : {}),
  });
  providers.push(p);
  return p;
}

const dial = (p: ReloadingProvider, ...args: string[]): Promise<SClientOutcome> => sClient(p.port, files, TEST_SERVER_NAME, args);

/** The protocol and suite s_client reports ("New, TLSv1.3, Cipher is TLS_AES_256_GCM_SHA384"; "(NONE)" when refused). */
const negotiated = (o: SClientOutcome): string | undefined => /^New, (\S+), Cipher is (\S+)$/m.exec(o.stdout)?.slice(1).join(' ');
const NOTHING = '(NONE) (NONE)';

// OpenSSL's alert numbers: the server refused in the handshake, not s_client before it.
const PROTOCOL_VERSION_ALERT = /alert protocol version|alert number 70/;

/** Every suite the openssl CLI can offer in TLS 1.2 (all but the TLS 1.3 ones), weak ones included. */
function tls12SuitesOfTheCli(): string[] {
  const all = execFileSync('openssl', ['ciphers', 'ALL:COMPLEMENTOFALL:@SECLEVEL=0'], { encoding: 'utf8' }).trim().split(':');
  return all.filter((s) => !s.startsWith('TLS_'));
}

/** Which of `suites` the provider accepts in a TLS 1.2 handshake (certificate, then the server's SETTINGS), four dials at a time. */
async function acceptedTls12Suites(p: ReloadingProvider, suites: readonly string[]): Promise<string[]> {
  const accepted: string[] = [];
  const queue = [...suites];
  const worker = async (): Promise<void> => {
    for (let suite = queue.shift(); suite !== undefined; suite = queue.shift()) {
      // SECLEVEL=0 lets s_client offer what its own defaults would hold back; the server must refuse it.
      const o = await dial(p, '-tls1_2', '-cipher', `${suite}:@SECLEVEL=0`);
      if (o.accepted) accepted.push(suite);
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  return accepted.sort();
}

beforeAll(async () => {
  ca = await opensslP256Ca('scratch TLS versions CA');
  client = await opensslPodLeaf(ca, 'ECDSAP256', 'client');
  scratch = mkdtempSync(join(tmpdir(), 'tls-versions-'));
  files = { caFile: join(scratch, 'ca.crt'), certFile: join(scratch, 'client.crt'), keyFile: join(scratch, 'client.key') };
  writeFileSync(files.caFile, ca.cert);
  writeFileSync(files.certFile, client.cert);
  writeFileSync(files.keyFile, client.key, { mode: 0o600 });
});

afterAll(async () => {
  await Promise.all(providers.map((p) => p.stop()));
  rmSync(scratch, { recursive: true, force: true });
});

describe('by default: TLS 1.3 only', () => {
  let provider: ReloadingProvider;
  beforeAll(async () => {
    provider = await providerWith('ECDSAP256');
  });

  it('TLS 1.3 is accepted', async () => {
    const o = await dial(provider, '-tls1_3');
    expect([o.accepted, negotiated(o)]).toEqual([true, 'TLSv1.3 TLS_AES_256_GCM_SHA384']);
  });

  it('TLS 1.2 is refused with a protocol_version alert, whatever the suite', async () => {
    for (const suite of ['ECDHE-ECDSA-AES128-GCM-SHA256', 'ECDHE-ECDSA-AES128-SHA']) {
      const o = await dial(provider, '-tls1_2', '-cipher', suite);
      expect([suite, o.accepted, negotiated(o)]).toEqual([suite, false, NOTHING]);
      expect(o.stderr).toMatch(PROTOCOL_VERSION_ALERT);
    }
  });

  it('TLS 1.1 is refused with a protocol_version alert', async () => {
    const o = await dial(provider, '-tls1_1', '-cipher', 'DEFAULT@SECLEVEL=0');
    expect([o.accepted, negotiated(o)]).toEqual([false, NOTHING]);
    expect(o.stderr).toMatch(PROTOCOL_VERSION_ALERT);
  });
});

describe("with minTlsVersion: 'TLSv1.2': TLS 1.3, and TLS 1.2 with ECDHE and an AEAD cipher only", () => {
  const suites = tls12SuitesOfTheCli();
  // What the scanner found on offer, and a suite without ECDHE: each must be among those tried.
  const flagged = [
    'ECDHE-ECDSA-AES128-SHA',
    'ECDHE-ECDSA-AES256-SHA',
    'ECDHE-ECDSA-AES128-SHA256',
    'ECDHE-ECDSA-AES256-SHA384',
    'ECDHE-ECDSA-ARIA128-GCM-SHA256',
    'ECDHE-ECDSA-AES128-CCM',
    'AES128-GCM-SHA256',
    'DHE-RSA-AES128-GCM-SHA256',
  ];

  it('the openssl CLI knows the suites to try, the flagged ones among them', () => {
    expect(suites).toEqual(expect.arrayContaining(flagged));
    expect(suites.length).toBeGreaterThan(60);
  });

  it.each([
    ['ECDSAP256', ['ECDHE-ECDSA-AES128-GCM-SHA256', 'ECDHE-ECDSA-AES256-GCM-SHA384', 'ECDHE-ECDSA-CHACHA20-POLY1305']],
    ['RSA3072', ['ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES256-GCM-SHA384', 'ECDHE-RSA-CHACHA20-POLY1305']],
  ] as const)('%s server key: TLS 1.3, TLS 1.2 with exactly %j of every suite tried, no TLS 1.1, no SHA-1 signatures', async (keyType, expected) => {
    const provider = await providerWith(keyType, 'TLSv1.2');
    const v13 = await dial(provider, '-tls1_3');
    expect([v13.accepted, negotiated(v13)]).toEqual([true, 'TLSv1.3 TLS_AES_256_GCM_SHA384']);

    const v12 = await dial(provider, '-tls1_2');
    expect(v12.accepted).toBe(true);
    expect(expected.map((suite) => `TLSv1.2 ${suite}`)).toContain(negotiated(v12));

    expect(await acceptedTls12Suites(provider, suites)).toEqual([...expected].sort());
    expect(TLS12_CIPHERS.split(':')).toEqual(expect.arrayContaining([...expected]));

    const v11 = await dial(provider, '-tls1_1', '-cipher', 'DEFAULT@SECLEVEL=0');
    expect(v11.accepted).toBe(false);
    expect(v11.stderr).toMatch(PROTOCOL_VERSION_ALERT);

    // SHA-1 handshake signatures are not among those the server offers (OpenSSL 3 drops them at security level 1).
    const sha1 = await dial(provider, '-tls1_2', '-sigalgs', 'ECDSA+SHA1:RSA+SHA1', '-cipher', 'ALL:@SECLEVEL=0');
    expect(sha1.accepted).toBe(false);
    expect(sha1.stderr).toMatch(/alert handshake failure|alert number 40/);
  });
});

describe("ESO's side asks for TLS 1.3 too", () => {
  it('ProviderChannel: a provider offering only TLS 1.2 answers alert protocol_version, and the call is UNAVAILABLE', async () => {
    const leaf = await opensslPodLeaf(ca, 'ECDSAP256', 'server');
    const tls12Only = createSecureServer({ cert: leaf.cert, key: leaf.key, maxVersion: 'TLSv1.2' }, (_request, response) => response.end());
    await new Promise<void>((resolve) => tls12Only.listen(0, '127.0.0.1', resolve));
    const channel = new ProviderChannel({
      address: `${TEST_SERVER_NAME}:8080`,
      connectTo: `127.0.0.1:${(tls12Only.address() as AddressInfo).port}`,
      material: clientTlsMaterial({ 'tls.crt': client.cert, 'tls.key': client.key, 'ca.crt': ca.cert }),
    });
    try {
      const error = await failureOf(createSecretStoreProviderClient(channel, { retry: false, waitForReady: false }).getSecret({ remoteRef: { key: 'x' } }));
      expect(error.code).toBe(grpc.status.UNAVAILABLE);
      expect(error.details).toMatch(PROTOCOL_VERSION_ALERT);
    } finally {
      await channel.close();
      tls12Only.close();
    }
  });
});
