import { beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSecretStoreProviderClient } from '@eso-mtls/grpc';
import { parseFileProviderConfig } from '../src/config.js';
import { parseSecretFile } from '../src/secret-file.js';
import { writeCertDir } from '@eso-mtls/test-kit/pki';
import { clientChannel, createTestPkiSet, type TestPkiSet } from '@eso-mtls/test-kit/provider-fixture';
import { useProviderDirs } from './support/provider-dirs.js';
import { startProviderProcess, until } from './support/provider-process.js';

describe('configuration', () => {
  it('flags win over the environment, which wins over the defaults', () => {
    expect(
      parseFileProviderConfig(['--data-file', '/d.yaml', '--port', '9000'], {
        PORT: '7000',
        HEALTH_PORT: '7001',
        POD_NAMESPACE: 'p',
        PROVIDER_SERVICE_NAME: 's',
      }),
    ).toEqual({
      dataFile: '/d.yaml',
      certDir: '/etc/provider/certs',
      certLayout: 'secret',
      minTlsVersion: 'TLSv1.3',
      host: '0.0.0.0',
      port: 9000,
      healthPort: 7001,
      metrics: { namespace: 'p', service: 's' },
    });
  });

  it('names what is missing or wrong', () => {
    expect(() => parseFileProviderConfig([], {})).toThrow('no data file: pass --data-file or set DATA_FILE');
    expect(() => parseFileProviderConfig(['--data-file', 'x', '--port', 'http'], {})).toThrow('port="http" is not a TCP port');
    expect(() => parseFileProviderConfig(['--data-file', 'x'], { POD_NAMESPACE: 'p' })).toThrow('metrics need both --namespace (POD_NAMESPACE) and --service');
    expect(() => parseFileProviderConfig(['--data-fil', 'x'], {})).toThrow("Unknown option '--data-fil'");
  });
});

describe('the data file format', () => {
  it('rejects bad entries naming the file and the key', () => {
    const bad = (text: string) => () => parseSecretFile(text, 'yaml', '/data/s.yaml');
    expect(bad('secrets:\n  a: { value: 1 }\n')).toThrow('/data/s.yaml: secrets["a"].value must be a string');
    expect(bad('secrets:\n  a: { valu: x }\n')).toThrow('secrets["a"] has unknown field(s) valu; allowed: value, valueBase64, properties, tags');
    expect(bad('secrets:\n  a: { value: x, valueBase64: eA== }\n')).toThrow('has both value and valueBase64');
    expect(bad('secrets:\n  a: { tags: { env: [1] } }\n')).toThrow('secrets["a"].tags must map names to strings');
    expect(bad('secrets: [1]\n')).toThrow('expected an object with a "secrets" map');
    expect(() => parseSecretFile('{"secrets": ', 'json', '/d.json')).toThrow('/d.json: not valid JSON');
    expect(parseSecretFile('', 'yaml', '/e.yaml')).toEqual({ secrets: {} });
  });
});

describe('main, as a process, with a JSON data file', () => {
  let pki: TestPkiSet;

  beforeAll(async () => {
    pki = await createTestPkiSet();
  });
  const dirs = useProviderDirs('main', { secrets: { greeting: { value: 'hello' } } }, () =>
    writeCertDir({ ca: pki.ca.cert, cert: pki.server.cert, key: pki.server.key }),
  );

  it('serves, reports ready with metrics, persists a push as JSON and exits 0 on SIGTERM', async () => {
    const dir = dirs.dataDir();
    const certDir = dirs.certDir();
    const provider = startProviderProcess(join(dir, 'secrets.json'), certDir);
    const { child, exited } = provider;
    const serving = await until('the serving line', () => {
      if (child.exitCode !== null) throw new Error(`main exited with ${child.exitCode}: ${provider.stderr()}`);
      return provider.lines().find((l) => l.message === 'serving') as { port: number; healthPort: number } | undefined;
    });
    const channel = clientChannel(`127.0.0.1:${serving.port}`, pki.ca.cert, pki.client);
    try {
      const client = createSecretStoreProviderClient(channel, { retry: false });
      expect(await client.getSecret({ remoteRef: { key: 'greeting' } })).toEqual(Buffer.from('hello'));
      await client.pushSecret({ secretData: { v: Buffer.from('hi') }, pushSecretData: { remoteKey: 'pushed', secretKey: 'v' } });
      expect(JSON.parse(readFileSync(join(dir, 'secrets.json'), 'utf8'))).toEqual({
        secrets: { greeting: { value: 'hello' }, pushed: { valueBase64: 'aGk=' } },
      });
      const health = `http://127.0.0.1:${serving.healthPort}`;
      expect((await fetch(`${health}/readyz`)).status).toBe(200);
      expect(await (await fetch(`${health}/metrics`)).text()).toMatch(
        /eso_provider_served_certificate_expiry_seconds\{namespace="provider-system",service="file-provider",source="secret"\} \d+/,
      );
    } finally {
      channel.close();
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(provider.stderr()).toBe('');
  });
});
