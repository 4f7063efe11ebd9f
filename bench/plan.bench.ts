/**
 * Steady-state planning: CPU milliseconds (process.cpuUsage) for one plan over N namespaces that
 * are all valid, first with a cold CertificateCache (every leaf parsed, key-checked and verified)
 * and then warm (nothing re-verified). Target: under 200 ms warm for 10,000 namespaces.
 *
 *   node --import ./scripts/register-ts.mjs bench/plan.bench.ts [namespaces]
 */
import 'reflect-metadata';
import { pathToFileURL } from 'node:url';
import {
  CertificateCache,
  type CertificateCacheStats,
  MemoryStore,
  type Snapshot,
  executePlan,
  isPlanEmpty,
  minutes,
  planRotation,
  resolvePolicy,
} from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';

/** What {@link runPlanBenchmark} measures. */
export interface PlanBenchmark {
  readonly namespaces: number;
  /** Wall-clock seconds to issue the converged state the plans run over (not part of the target). */
  readonly setupSeconds: number;
  /** CPU ms of the first plan, cache empty. */
  readonly coldCpuMs: number;
  /** CPU ms of the next plan over the same snapshot, cache warm (the first warm run still pays for JIT compilation). */
  readonly warmCpuMs: number;
  /** Median CPU ms of five more warm plans. */
  readonly warmMedianCpuMs: number;
  /** CPU ms of a plan over a freshly built snapshot (new objects, same Secret texts), cache warm. */
  readonly warmFreshSnapshotCpuMs: number;
  /** Work the warm plans did (should be zero parses and verifications). */
  readonly warmWork: CertificateCacheStats;
}

function cpuMs<T>(fn: () => T): { result: T; ms: number } {
  const before = process.cpuUsage();
  const result = fn();
  const used = process.cpuUsage(before);
  return { result, ms: (used.user + used.system) / 1000 };
}

/** Converges `namespaces` namespaces (one labelled Service each), then measures steady-state plans. */
export async function runPlanBenchmark(namespaces = 10_000): Promise<PlanBenchmark> {
  const policy = resolvePolicy();
  const crypto = createNodeCryptoBackend();
  const store = new MemoryStore();
  for (let i = 0; i < namespaces; i++) store.setServices(`team-${i}`, [{ name: 'provider' }]);
  const now = Date.UTC(2026, 0, 1);
  const setupStart = performance.now();
  const setupCache = new CertificateCache(crypto.verifier);
  const initial = planRotation(store.snapshot(), { now, policy, cache: setupCache });
  for (const write of await executePlan(initial, { crypto, concurrency: 8 })) store.apply(write);
  const setupSeconds = (performance.now() - setupStart) / 1000;

  const later = now + minutes(10);
  const snapshot: Snapshot = store.snapshot();
  const cache = new CertificateCache(crypto.verifier);
  const cold = cpuMs(() => planRotation(snapshot, { now: later, policy, cache }));
  const before = { ...cache.stats };
  const warm = cpuMs(() => planRotation(snapshot, { now: later, policy, cache }));
  const more = Array.from({ length: 5 }, () => cpuMs(() => planRotation(snapshot, { now: later, policy, cache })).ms).sort((a, b) => a - b);
  const fresh = store.snapshot();
  const warmFresh = cpuMs(() => planRotation(fresh, { now: later, policy, cache }));
  for (const plan of [cold.result, warm.result, warmFresh.result]) {
    if (!isPlanEmpty(plan)) throw new Error('the benchmark state is not steady: a plan has actions');
  }
  const warmWork = {
    parses: cache.stats.parses - before.parses,
    verifications: cache.stats.verifications - before.verifications,
    keyChecks: cache.stats.keyChecks - before.keyChecks,
    evictions: cache.stats.evictions - before.evictions,
  };
  return { namespaces, setupSeconds, coldCpuMs: cold.ms, warmCpuMs: warm.ms, warmMedianCpuMs: more[2]!, warmFreshSnapshotCpuMs: warmFresh.ms, warmWork };
}

/** The figures as a small markdown table. */
export function formatPlanBenchmark(b: PlanBenchmark): string {
  return [
    `| steady-state plan, ${b.namespaces.toLocaleString('en')} valid namespaces | CPU ms |`,
    '|---|---:|',
    `| cold cache (parse, key check, verify every leaf) | ${b.coldCpuMs.toFixed(0)} |`,
    `| warm cache, same snapshot, first run | ${b.warmCpuMs.toFixed(0)} |`,
    `| warm cache, same snapshot, median of 5 more | ${b.warmMedianCpuMs.toFixed(0)} |`,
    `| warm cache, freshly built snapshot | ${b.warmFreshSnapshotCpuMs.toFixed(0)} |`,
    '',
    `Warm plans re-did ${b.warmWork.parses} parses, ${b.warmWork.verifications} verifications, ${b.warmWork.keyChecks} key checks. ` +
      `Target: under 200 ms of CPU warm. (Issuing the ${b.namespaces.toLocaleString('en')} leaves took ${b.setupSeconds.toFixed(1)} s.)`,
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(formatPlanBenchmark(await runPlanBenchmark(Number(process.argv[2] ?? 10_000))));
}
