import { beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { createSecretStoreProviderClient } from '@eso-mtls/grpc';
import { issueTestCa, issueTestClient, issueTestServer, type KeyPair, type TestCa } from '@eso-mtls/test-kit/pki';
import { writeAtomically } from '@eso-mtls/test-kit/demo';
import { kubeletCertDir, useProviderDirs } from './support/provider-dirs.js';
import { LABELS, startProviderProcess, until } from './support/provider-process.js';
import { clientChannel } from '@eso-mtls/test-kit/provider-fixture';

// The kubelet sends SIGKILL after the pod's terminationGracePeriodSeconds, 30 s by default.
const TERMINATION_GRACE_MS = 30_000;

/** A kubelet-style swap of `..data` to a new version whose tls.crt is a FIFO (one folder event, like a real update). */
function swapToFifoVersion(certDir: string, ca: string, key: string): void {
  const version = mkdtempSync(join(certDir, '..fifo.'));
  writeFileSync(join(version, 'ca.crt'), ca);
  writeFileSync(join(version, 'tls.key'), key);
  execFileSync('mkfifo', [join(version, 'tls.crt')]);
  symlinkSync(basename(version), join(certDir, '..data_tmp'));
  renameSync(join(certDir, '..data_tmp'), join(certDir, '..data'));
}

describe('main, as a process, with a FIFO where tls.crt belongs', () => {
  let ca: TestCa, first: KeyPair, second: KeyPair, client: KeyPair;

  beforeAll(async () => {
    ca = await issueTestCa();
    [first, second, client] = await Promise.all([issueTestServer(ca), issueTestServer(ca), issueTestClient(ca)]);
  });
  const dirs = useProviderDirs('fifo', { secrets: { greeting: { value: 'hello' } } }, () => kubeletCertDir('fifo', ca.cert, first));

  it('refuses it once (logged with namespace and service, counted), keeps serving, reloads once the file is good, and exits 0 on SIGTERM', async () => {
    const dir = dirs.dataDir();
    const certDir = dirs.certDir();
    const provider = startProviderProcess(join(dir, 'secrets.json'), certDir);
    const { child, exited, lines } = provider;
    const refusals = () => lines().filter((l) => l.level === 'warn');
    let terminated = false;
    try {
      const serving = await until('the serving line', () => {
        if (child.exitCode !== null) throw new Error(`main exited with ${child.exitCode}: ${provider.stderr()}`);
        return lines().find((l) => l.message === 'serving') as { port: number; healthPort: number } | undefined;
      });
      const failuresCounted = async () => {
        const text = await (await fetch(`http://127.0.0.1:${serving.healthPort}/metrics`)).text();
        const line = text.split('\n').find((l) => l.startsWith(`eso_provider_certificate_hot_reload_failures_total${LABELS} `));
        return Number(line!.slice(line!.lastIndexOf(' ') + 1));
      };
      const call = async (key: string) => {
        const channel = clientChannel(`127.0.0.1:${serving.port}`, ca.cert, client);
        try {
          return (await createSecretStoreProviderClient(channel, { retry: false }).getSecret({ remoteRef: { key } })).toString();
        } finally {
          channel.close();
        }
      };

      swapToFifoVersion(certDir, ca.cert, first.key);
      const refused = await until('the FIFO refusal', () => refusals()[0]);
      expect(refused).toMatchObject({
        message: 'certificate reload refused; serving the last good certificate',
        namespace: 'provider-system',
        service: 'file-provider',
        reason: 'fifo',
        serialNumber: new X509Certificate(first.cert).serialNumber.toLowerCase(),
      });
      expect(refused.detail).toContain(`cannot read ${join(certDir, 'tls.crt')}: is a FIFO (named pipe), not a regular file`);
      expect(await failuresCounted()).toBe(1);
      expect(await call('greeting')).toBe('hello');
      expect((await fetch(`http://127.0.0.1:${serving.healthPort}/readyz`)).status).toBe(200);

      await writeAtomically(certDir, { 'ca.crt': ca.cert, 'tls.crt': second.cert, 'tls.key': second.key });
      const reloaded = await until('the reload line', () => lines().find((l) => l.message === 'certificate reloaded'));
      expect(reloaded.serialNumber).toBe(new X509Certificate(second.cert).serialNumber.toLowerCase());
      expect(await call('greeting')).toBe('hello');
      expect(refusals()).toHaveLength(1);

      // The FIFO back on disk when the pod is deleted: the process must still end.
      swapToFifoVersion(certDir, ca.cert, second.key);
      await until('the second FIFO refusal', () => refusals()[1]);
      expect(await failuresCounted()).toBe(2);
      child.kill('SIGTERM');
      terminated = true;
      const deadline = new Promise<'still running'>((r) => setTimeout(() => r('still running'), TERMINATION_GRACE_MS).unref());
      expect(await Promise.race([exited, deadline])).toBe(0);
    } finally {
      if (!terminated) child.kill('SIGTERM');
      // Nothing may outlive the test, whatever happened above.
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    expect(await exited).toBe(0);
    expect(provider.stderr()).toBe('');
  }, 90_000);
});
