import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { resolveProviderServerOptions, stderrProviderLogger, type SecretStoreProvider } from '@eso-mtls/grpc';
import { issueTestCa, issueTestServer, type KeyPair, type TestCa } from '@eso-mtls/test-kit/pki';
import { startReloadingProvider, type ReloadingProvider } from '@eso-mtls/test-kit/reloading-provider';

// The runbook says "the provider's logs name the problem": a provider that configures no logger
// still writes one line per reload and per refused reload, on stderr; `log: false` silences them.

const implementation: SecretStoreProvider = { getSecret: () => ({ value: Buffer.from('v') }), getSecretMap: () => ({ secrets: {} }) };

let ca: TestCa;
let leaves: KeyPair[];
const providers: ReloadingProvider[] = [];
let written: string[];

beforeAll(async () => {
  ca = await issueTestCa();
  leaves = await Promise.all([0, 1, 2].map(() => issueTestServer(ca)));
});
afterEach(() => {
  jest.restoreAllMocks();
});
afterAll(async () => {
  await Promise.all(providers.map((p) => p.stop()));
});

// The provider server's lines on stderr; whatever else writes there (jest) is passed through.
function captureStderr(): void {
  written = [];
  const original = process.stderr.write.bind(process.stderr);
  jest.spyOn(process.stderr, 'write').mockImplementation(((chunk: string | Uint8Array, ...rest: never[]) => {
    const text = String(chunk);
    if (text.includes('"component":"eso-mtls-provider"')) {
      written.push(text);
      return true;
    }
    return original(chunk, ...rest);
  }) as typeof process.stderr.write);
}

const lines = () => written.flatMap((w) => w.split('\n').filter((l) => l !== '')).map((l) => JSON.parse(l) as Record<string, unknown>);

describe('the provider server logs reloads and refusals by default', () => {
  it('writes one JSON line per reload and per refused reload on stderr, naming the reason, never key text', async () => {
    captureStderr();
    const provider = await startReloadingProvider(ca.cert, leaves[0]!, { implementation, metrics: { namespace: 'team-a', service: 'vault' } });
    providers.push(provider);
    expect(lines()).toEqual([]); // the first load is no reload

    await provider.publish(ca.cert, leaves[1]!);
    // tls.crt of one leaf with the key of another: refused, the last good pair stays.
    await provider.publish(ca.cert, { cert: leaves[2]!.cert, key: leaves[0]!.key });
    const logged = lines();
    expect(logged).toHaveLength(2);
    expect(logged[0]).toMatchObject({
      level: 'info',
      message: 'certificate reloaded',
      reason: 'reloaded',
      namespace: 'team-a',
      service: 'vault',
      serialNumber: new X509Certificate(leaves[1]!.cert).serialNumber.toLowerCase(),
    });
    expect(logged[1]).toMatchObject({
      level: 'warn',
      message: 'certificate reload refused; serving the last good certificate',
      namespace: 'team-a',
      service: 'vault',
    });
    expect(typeof logged[1]!.reason).toBe('string');
    expect(logged[1]!.reason).not.toBe('unknown');
    expect(String(logged[1]!.detail)).toContain(provider.certDir);
    for (const l of logged) expect(Date.parse(String(l.time))).not.toBeNaN();
    expect(written.join('')).not.toMatch(/BEGIN|PRIVATE KEY/);
  });

  it('log: false silences them; a logger of your own replaces the default', async () => {
    expect(resolveProviderServerOptions({ implementation }).log).toBe(stderrProviderLogger);
    expect(resolveProviderServerOptions({ implementation, log: false }).log).toBeUndefined();
    const own = (): void => undefined;
    expect(resolveProviderServerOptions({ implementation, log: own }).log).toBe(own);

    captureStderr();
    const quiet = await startReloadingProvider(ca.cert, leaves[0]!, { implementation, log: false });
    providers.push(quiet);
    await quiet.publish(ca.cert, leaves[1]!);
    await quiet.publish(ca.cert, { cert: leaves[2]!.cert, key: leaves[0]!.key });
    expect(quiet.watcher.stats).toMatchObject({ reloads: 1, failures: 1 });
    expect(written).toEqual([]);
  });

  it('stderrProviderLogger writes exactly one line per record', () => {
    const out: string[] = [];
    stderrProviderLogger({ level: 'warn', message: 'certificate reload refused', reason: 'key_mismatch', detail: 'a\nb' }, (l) => out.push(l));
    expect(out).toHaveLength(1);
    expect(out[0]!.endsWith('\n')).toBe(true);
    expect(out[0]!.slice(0, -1)).not.toContain('\n');
    expect(JSON.parse(out[0]!)).toMatchObject({ component: 'eso-mtls-provider', level: 'warn', reason: 'key_mismatch', detail: 'a\nb' });
  });
});
