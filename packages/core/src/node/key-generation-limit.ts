import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/**
 * Whole CPUs a cgroup CPU quota allows (a pod's `limits.cpu`, rounded up), or undefined without a
 * quota. Node 20's availableParallelism() counts the node's cores and ignores the quota, so a pod
 * limited to 1 CPU on a 16-core node would otherwise run 3 keygens and be throttled, event loop and all.
 * `read` returns a file's text or throws; cgroup v2 first, then v1.
 */
export function cpuQuotaCores(read: (path: string) => string = (path) => readFileSync(path, 'utf8')): number | undefined {
  const cores = (quota: number, period: number) => (quota > 0 && period > 0 ? Math.ceil(quota / period) : undefined);
  try {
    const [quota, period] = read('/sys/fs/cgroup/cpu.max').trim().split(/\s+/);
    return quota === 'max' ? undefined : cores(Number(quota), Number(period));
  } catch {
    // not cgroup v2
  }
  try {
    return cores(Number(read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us')), Number(read('/sys/fs/cgroup/cpu/cpu.cfs_period_us')));
  } catch {
    return undefined; // no cgroup CPU controller visible: no quota to honour
  }
}

/**
 * How many key generations may run at once by default: no more than the CPUs the process may use,
 * and one thread of libuv's pool always left for RSA signatures and file reads. RSA keygen is
 * CPU-bound on that pool; more of them than cores adds no keys per second, only runnable threads
 * that take CPU from the one answering /healthz and renewing the Lease, and a pool queue that RSA
 * signatures wait behind.
 */
export function defaultKeyGenerationConcurrency(
  cores: number = Math.min(availableParallelism(), cpuQuotaCores() ?? Infinity),
  threadPoolSize: number = Number(process.env.UV_THREADPOOL_SIZE) || 4,
): number {
  return Math.max(1, Math.min(cores, threadPoolSize - 1));
}

/** Checks a configured concurrency; the error names the value and what is accepted. */
export function checkKeyGenerationConcurrency(value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(
      `keyGenerationConcurrency must be a positive integer, got ${value}; leave it unset for the number of CPUs, at most one less than UV_THREADPOOL_SIZE`,
    );
  }
  return value;
}
