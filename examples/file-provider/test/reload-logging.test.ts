import { beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import { issueTestCa, issueTestServer, type KeyPair, type TestCa } from '@eso-mtls/test-kit/pki';
import { writeAtomically } from '@eso-mtls/test-kit/demo';
import { kubeletCertDir, useProviderDirs } from './support/provider-dirs.js';
import { sample, startProviderProcess, until } from './support/provider-process.js';

describe('main, as a process, across certificate swaps', () => {
  let ca: TestCa, first: KeyPair, second: KeyPair, third: KeyPair;

  beforeAll(async () => {
    ca = await issueTestCa();
    [first, second, third] = await Promise.all([issueTestServer(ca), issueTestServer(ca), issueTestServer(ca)]);
  });
  const dirs = useProviderDirs('reload', { secrets: {} }, () => kubeletCertDir('reload', ca.cert, first));

  it('a good swap moves the reload counter by one and logs it; a bad one moves the failure counter by one and warns; no key text is logged', async () => {
    const dir = dirs.dataDir();
    const certDir = dirs.certDir();
    const provider = startProviderProcess(join(dir, 'secrets.json'), certDir);
    const { child, exited, lines } = provider;
    try {
      const serving = await until('the serving line', () => {
        if (child.exitCode !== null) throw new Error(`main exited with ${child.exitCode}: ${provider.stderr()}`);
        return lines().find((l) => l.message === 'serving') as { healthPort?: number } | undefined;
      });
      const scrape = async (): Promise<{ reloads: number; failures: number }> => {
        const text = await (await fetch(`http://127.0.0.1:${serving.healthPort}/metrics`)).text();
        return {
          reloads: sample(text, 'eso_provider_certificate_hot_reload_total'),
          failures: sample(text, 'eso_provider_certificate_hot_reload_failures_total'),
        };
      };
      const before = await scrape();

      await writeAtomically(certDir, { 'ca.crt': ca.cert, 'tls.crt': second.cert, 'tls.key': second.key });
      const reloaded = await until('the reload log line', () => lines().find((l) => l.message === 'certificate reloaded'));
      const leaf = new X509Certificate(second.cert);
      expect(reloaded).toMatchObject({
        level: 'info',
        namespace: 'provider-system',
        service: 'file-provider',
        reason: 'reloaded',
        notAfter: new Date(leaf.validTo).toISOString(),
        serialNumber: leaf.serialNumber.toLowerCase(),
      });
      expect(await scrape()).toEqual({ reloads: before.reloads + 1, failures: before.failures });

      // A half-updated pair: the third leaf with the second leaf's key.
      await writeAtomically(certDir, { 'ca.crt': ca.cert, 'tls.crt': third.cert, 'tls.key': second.key });
      const refused = await until('the refusal log line', () => lines().find((l) => l.level === 'warn'));
      expect(refused).toMatchObject({
        message: 'certificate reload refused; serving the last good certificate',
        namespace: 'provider-system',
        service: 'file-provider',
        reason: 'key_mismatch',
        notAfter: reloaded.notAfter,
        serialNumber: reloaded.serialNumber,
      });
      expect(await scrape()).toEqual({ reloads: before.reloads + 1, failures: before.failures + 1 });
      expect(lines().filter((l) => l.message.startsWith('certificate'))).toHaveLength(2);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(provider.stderr()).toBe('');
    expect(provider.stdout()).not.toContain('PRIVATE KEY');
    expect(provider.stdout()).not.toContain(second.key.split('\n')[1]);
  }, 60_000);
});
