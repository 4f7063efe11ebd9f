import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { issueTestCa, issueTestServer, type KeyPair, type TestCa } from '../../../packages/grpc/test/support/pki.js';
import { writeAtomically } from '../../../packages/grpc/test/support/atomic-writer.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const LABELS = '{namespace="provider-system",service="file-provider"}';

interface LogLine { readonly level?: string; readonly message: string; readonly namespace?: string; readonly service?: string; readonly reason?: string; readonly notAfter?: string; readonly serialNumber?: string }

/** The value of one series of a Prometheus text scrape; the name is matched exactly (no prefix match). */
function sample(scrape: string, name: string): number {
  const line = scrape.split('\n').find((l) => l.startsWith(`${name}${LABELS} `));
  if (line === undefined) throw new Error(`no ${name}${LABELS} in the scrape:\n${scrape}`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('main, as a process, across certificate swaps', () => {
  let ca: TestCa;
  let first: KeyPair;
  let second: KeyPair;
  let third: KeyPair;
  let dir: string;
  let certDir: string;

  beforeAll(async () => {
    ca = await issueTestCa();
    [first, second, third] = await Promise.all([issueTestServer(ca), issueTestServer(ca), issueTestServer(ca)]);
    dir = mkdtempSync(join(tmpdir(), 'file-provider-reload-'));
    certDir = mkdtempSync(join(tmpdir(), 'file-provider-reload-certs-'));
    writeFileSync(join(dir, 'secrets.json'), JSON.stringify({ secrets: {} }));
    await writeAtomically(certDir, { 'ca.crt': ca.cert, 'tls.crt': first.cert, 'tls.key': first.key });
  });

  afterAll(() => {
    for (const d of [dir, certDir]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it('a good swap moves the reload counter by one and logs it; a bad one moves the failure counter by one and warns; no key text is logged', async () => {
    const child = spawn(process.execPath, ['--import', './scripts/register-ts.mjs', 'examples/file-provider/src/main.ts',
      '--data-file', join(dir, 'secrets.json'), '--cert-dir', certDir, '--host', '127.0.0.1', '--port', '0', '--health-port', '0',
      '--namespace', 'provider-system', '--service', 'file-provider'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const lines = (): LogLine[] => stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as LogLine);
    try {
      const serving = await until('the serving line', () => {
        if (child.exitCode !== null) throw new Error(`main exited with ${child.exitCode}: ${stderr}`);
        return lines().find((l) => l.message === 'serving') as { healthPort?: number } | undefined;
      });
      const scrape = async (): Promise<{ reloads: number; failures: number }> => {
        const text = await (await fetch(`http://127.0.0.1:${serving.healthPort}/metrics`)).text();
        return { reloads: sample(text, 'eso_provider_certificate_hot_reload_total'), failures: sample(text, 'eso_provider_certificate_hot_reload_failures_total') };
      };
      const before = await scrape();

      await writeAtomically(certDir, { 'ca.crt': ca.cert, 'tls.crt': second.cert, 'tls.key': second.key });
      const reloaded = await until('the reload log line', () => lines().find((l) => l.message === 'certificate reloaded'));
      const leaf = new X509Certificate(second.cert);
      expect(reloaded).toMatchObject({
        level: 'info', namespace: 'provider-system', service: 'file-provider', reason: 'reloaded',
        notAfter: new Date(leaf.validTo).toISOString(), serialNumber: leaf.serialNumber.toLowerCase(),
      });
      expect(await scrape()).toEqual({ reloads: before.reloads + 1, failures: before.failures });

      // A half-updated pair: the third leaf with the second leaf's key.
      await writeAtomically(certDir, { 'ca.crt': ca.cert, 'tls.crt': third.cert, 'tls.key': second.key });
      const refused = await until('the refusal log line', () => lines().find((l) => l.level === 'warn'));
      expect(refused).toMatchObject({
        message: 'certificate reload refused; serving the last good certificate',
        namespace: 'provider-system', service: 'file-provider', reason: 'key_mismatch', notAfter: reloaded.notAfter, serialNumber: reloaded.serialNumber,
      });
      expect(await scrape()).toEqual({ reloads: before.reloads + 1, failures: before.failures + 1 });
      expect(lines().filter((l) => l.message.startsWith('certificate'))).toHaveLength(2);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).not.toContain('PRIVATE KEY');
    expect(stdout).not.toContain(second.key.split('\n')[1]);
  }, 60_000);
});
