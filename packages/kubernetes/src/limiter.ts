/**
 * Runs async tasks with at most `limit` in flight, so a mass re-issue cannot open thousands of
 * requests at once against the apiserver (or its priority-and-fairness limits).
 */
export class Limiter {
  private active = 0;
  private readonly queue: (() => void)[] = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`concurrency limit must be a positive integer, got ${limit}`);
  }

  /** Runs `task` when a slot is free; resolves or rejects with its result. */
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((r) => this.queue.push(r));
    this.active++;
    try {
      return await task();
    } finally {
      this.active--;
      this.queue.shift()?.();
    }
  }

  /** Tasks running or waiting. */
  get pending(): number {
    return this.active + this.queue.length;
  }
}
