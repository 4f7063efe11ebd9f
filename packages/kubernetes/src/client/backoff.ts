/** Options of the exponential backoff: first delay, longest delay and jitter source. */
export interface BackoffOptions {
  /** First delay (default 200 ms). */
  readonly initialMs?: number;
  /** Longest delay (default 30 s). */
  readonly maxMs?: number;
  /** Randomness in [0, 1) for jitter; injectable for tests. */
  readonly random?: () => number;
}

/**
 * Exponential backoff with jitter: each failure doubles the ceiling, and the delay is drawn
 * between half of it and all of it, so replicas that failed together do not retry together.
 */
export class Backoff {
  private failures = 0;
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly random: () => number;

  constructor(options: BackoffOptions = {}) {
    this.initialMs = options.initialMs ?? 200;
    this.maxMs = options.maxMs ?? 30_000;
    this.random = options.random ?? Math.random;
  }

  /** The delay before the next attempt, counting one more failure. */
  next(): number {
    const ceiling = Math.min(this.maxMs, this.initialMs * 2 ** Math.min(this.failures, 30));
    this.failures++;
    return Math.round(ceiling / 2 + (this.random() * ceiling) / 2);
  }

  /** Forgets the failures after a success. */
  reset(): void {
    this.failures = 0;
  }

  /** Failures since the last reset. */
  get attempts(): number {
    return this.failures;
  }
}
