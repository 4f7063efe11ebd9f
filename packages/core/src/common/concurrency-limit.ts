/**
 * Runs async tasks with at most `limit` in flight, the rest in arrival order (a semaphore for
 * promises): a mass re-issue neither opens thousands of requests against the apiserver nor
 * generates more keys at once than there are CPUs.
 */
export class ConcurrencyLimit {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  /** @param limit - How many tasks may run at once. */
  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`concurrency limit must be a positive integer, got ${limit}`);
  }

  /** Runs `task` when a slot is free; resolves or rejects with its result. */
  async run<T>(task: () => Promise<T>): Promise<T> {
    // A finishing task hands its slot straight to the next waiter, so a newcomer cannot slip in
    // between and run one task over the limit.
    if (this.active < this.limit) this.active++;
    else await new Promise<void>((r) => this.waiting.push(r));
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }

  /** Tasks running or waiting. */
  get pending(): number {
    return this.active + this.waiting.length;
  }
}
