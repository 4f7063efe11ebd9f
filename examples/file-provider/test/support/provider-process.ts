// The file provider run as the kubelet runs it: a process of its own, logging JSON lines.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ProviderLogRecord } from '@eso-mtls/grpc';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
/** The labels of the provider's own series in a scrape. */
export const LABELS = '{namespace="provider-system",service="file-provider"}';

/** One JSON log line of the provider: a record of the provider server, or one of main's own lines. */
export type LogLine = Partial<ProviderLogRecord> & { readonly message: string };

/** A running provider process and what it has printed so far. */
export interface ProviderProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** Resolves with the exit code. */
  readonly exited: Promise<number | null>;
  stdout(): string;
  stderr(): string;
  lines(): LogLine[];
}

/** Starts examples/file-provider/src/main.ts on loopback, any free ports, as provider-system/file-provider, with `extraArgs` last. */
export function startProviderProcess(dataFile: string, certDir: string, extraArgs: readonly string[] = []): ProviderProcess {
  const child = spawn(
    process.execPath,
    [
      '--import',
      './scripts/register-ts.mjs',
      'examples/file-provider/src/main.ts',
      '--data-file',
      dataFile,
      '--cert-dir',
      certDir,
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--health-port',
      '0',
      '--namespace',
      'provider-system',
      '--service',
      'file-provider',
      ...extraArgs,
    ],
    { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return {
    child,
    exited: new Promise((resolve) => child.once('exit', resolve)),
    stdout: () => stdout,
    stderr: () => stderr,
    lines: () =>
      stdout
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as LogLine),
  };
}

/** Polls `probe` until it returns a value, failing after `timeoutMs` with what it waited for. */
export async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The value of one of the provider's series in a Prometheus text scrape; the name is matched exactly. */
export function sample(scrape: string, name: string): number {
  const line = scrape.split('\n').find((l) => l.startsWith(`${name}${LABELS} `));
  if (line === undefined) throw new Error(`no ${name}${LABELS} in the scrape:\n${scrape}`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}
