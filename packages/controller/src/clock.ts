import { type MonotonicClock, sleep, systemTimers } from '@eso-mtls/kubernetes';

/**
 * Time as the controller needs it, injected so tests can make a process "oversleep" without
 * stopping it. Deadlines use the monotonic clock: it never jumps with NTP and keeps counting while
 * the process is stopped (SIGSTOP), which is exactly what a leader must notice.
 */
export interface Clock extends MonotonicClock {
  /** Wall-clock time, only for timestamps written into Leases and logs. */
  now(): Date;
}

/** The process's real clocks: `process.hrtime.bigint()` and `Date`. */
export const systemClock: Clock = {
  monotonicMs: () => systemTimers.monotonicMs(),
  now: () => new Date(),
};

/**
 * Resolves after `ms`, or at once when `signal` aborts (never rejects). The one sleep is the
 * kubernetes package's; this name stays for embedders that import it from the controller.
 */
export { sleep };
