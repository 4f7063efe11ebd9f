/**
 * Real elapsed time, injected so that tests drive retries and wake-ups without sleeping. It is not
 * the certificate clock (the adapter's `now`), which tests move forward by days: these measure how
 * long a watch ran and when to try again, on a clock that never jumps with NTP.
 */
export interface MonotonicClock {
  /** Milliseconds on a monotonic clock with an arbitrary origin. */
  monotonicMs(): number;
}

/** A callback waiting in a {@link TimerScheduler}. */
export interface ScheduledTimer {
  /** Stops it from running; harmless once it has run. */
  cancel(): void;
  /** Lets the process exit while it waits (Node's `unref`). */
  unref(): void;
}

/** Runs callbacks after a delay measured on the monotonic clock. */
export interface TimerScheduler {
  /** Calls `callback` once after `ms`, taken within [0, 2^31 - 1], Node's longest timer. */
  setTimer(ms: number, callback: () => void): ScheduledTimer;
}

/** A monotonic clock and the timers that run on it: what the informer and the reconciler wait with. */
export interface Timers extends MonotonicClock, TimerScheduler {}

/** Node's setTimeout fires at once, with a warning, for any delay above this. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The process's own: `process.hrtime` and `setTimeout`. */
export const systemTimers: Timers = {
  monotonicMs: () => Number(process.hrtime.bigint() / 1_000_000n),
  setTimer: (ms, callback) => {
    const timer = setTimeout(callback, Math.min(MAX_TIMER_MS, Math.max(0, ms)));
    return { cancel: () => clearTimeout(timer), unref: () => void timer.unref() };
  },
};

/**
 * Resolves after `ms`, or at once when `signal` aborts (never rejects), so that loops waiting
 * for their next attempt stop promptly on shutdown.
 *
 * @internal Shared with \@eso-mtls/controller; not part of the supported API.
 */
export function sleep(ms: number, signal?: AbortSignal, timers: TimerScheduler = systemTimers): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = (): void => {
      timer.cancel();
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = timers.setTimer(ms, done);
    signal?.addEventListener('abort', done, { once: true });
  });
}

// A loop over thousands of cached objects runs to its end before any I/O callback does: the probe
// server's `/healthz` answer, a watch event, a Lease renewal. Such loops yield every ITEMS_PER_TURN
// items (nextTurn), so a burst makes those late by one chunk of work, not by the whole walk: the
// kubelet restarts a controller that does not answer its probe.

/** Items handled per turn of the event loop: about a millisecond of work, a few on a loaded machine. */
export const ITEMS_PER_TURN = 256;

/** Resolves on a later turn of the event loop, after the I/O callbacks waiting now have run. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
