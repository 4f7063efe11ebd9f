/**
 * Key generation under the Node backend's concurrency limit: RSA-3072 keys per second, and how long
 * the event loop stalls meanwhile (what /healthz and Lease renewals feel), for several limits. The
 * speed figures that tests must not assert (mass-reissue.test.ts asserts only the kubelet's and
 * the Lease's deadlines).
 *
 *   node --import ./scripts/register-ts.mjs bench/keygen.bench.ts [keys]
 */
import { availableParallelism } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { createNodeSigner, defaultKeyGenerationConcurrency } from '@eso-mtls/core/node';

/** One limit's figures. */
export interface KeygenRun {
  readonly concurrency: number;
  readonly keysPerSecond: number;
  /** Event-loop delay while the keys were made, from monitorEventLoopDelay (10 ms resolution). */
  readonly loopDelayP99Ms: number;
  readonly loopDelayMaxMs: number;
}

/** What {@link runKeygenBenchmark} measures. */
export interface KeygenBenchmark {
  readonly keys: number;
  readonly defaultConcurrency: number;
  readonly runs: readonly KeygenRun[];
}

async function measure(concurrency: number, keys: number): Promise<KeygenRun> {
  const signer = createNodeSigner({ keyGenerationConcurrency: concurrency });
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const started = performance.now();
  // All at once, as a mass re-issue asks for them; the signer's limit decides how many run.
  await Promise.all(Array.from({ length: keys }, () => signer.generateKey('RSA-3072')));
  const seconds = (performance.now() - started) / 1000;
  delay.disable();
  return { concurrency, keysPerSecond: keys / seconds, loopDelayP99Ms: delay.percentile(99) / 1e6, loopDelayMaxMs: delay.max / 1e6 };
}

/** Generates `keys` RSA-3072 keys with each limit in turn: 1, the default, the CPUs, and 16 (libuv's pool is then the only limit). */
export async function runKeygenBenchmark(keys = 24): Promise<KeygenBenchmark> {
  const defaultConcurrency = defaultKeyGenerationConcurrency();
  const limits = [...new Set([1, defaultConcurrency, availableParallelism(), 16])].sort((a, b) => a - b);
  const runs: KeygenRun[] = [];
  for (const limit of limits) runs.push(await measure(limit, keys));
  return { keys, defaultConcurrency, runs };
}

/** The figures as a small markdown table. */
export function formatKeygenBenchmark(b: KeygenBenchmark): string {
  return [
    `| RSA-3072, ${b.keys} keys requested at once: keyGenerationConcurrency | keys/s | event-loop delay p99 ms | max ms |`,
    '|---|---:|---:|---:|',
    ...b.runs.map(
      (r) =>
        `| ${r.concurrency}${r.concurrency === b.defaultConcurrency ? ' (default here)' : ''} | ${r.keysPerSecond.toFixed(1)} | ` +
        `${r.loopDelayP99Ms.toFixed(0)} | ${r.loopDelayMaxMs.toFixed(0)} |`,
    ),
    '',
    'Above the number of cores, more concurrency adds no keys per second; it takes CPU from the event loop and fills the thread pool RSA signatures need.',
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(formatKeygenBenchmark(await runKeygenBenchmark(Number(process.argv[2] ?? 24))));
}
