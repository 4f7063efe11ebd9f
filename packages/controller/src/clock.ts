/**
 * Time as the controller needs it, injected so tests can make a process "oversleep" without
 * stopping it. Deadlines use the monotonic clock: it never jumps with NTP and keeps counting while
 * the process is stopped (SIGSTOP), which is exactly what a leader must notice.
 */
export interface Clock {
  /** Milliseconds on a monotonic clock with an arbitrary origin. */
  monotonicMs(): number;
  /** Wall-clock time, only for timestamps written into Leases and logs. */
  now(): Date;
}

/** The process's real clocks: `process.hrtime.bigint()` and `Date`. */
export const systemClock: Clock = {
  monotonicMs: () => Number(process.hrtime.bigint() / 1_000_000n),
  now: () => new Date(),
};

/**
 * Resolves after `ms`, or at once when `signal` aborts (never rejects), so that loops waiting
 * for their next round stop promptly on shutdown.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener('abort', done, { once: true });
  });
}
