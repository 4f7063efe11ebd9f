import type { MonotonicClock } from './clock.js';

/**
 * Lets the first report of each key through per window, and holds back the repeats: what a tenant
 * can repeat without end (a denied request, a request past the bound) is logged once per namespace
 * and reason, not once per request. Memory is bounded by the keys seen within one window.
 */
export class OncePerWindow {
  private readonly lastAt = new Map<string, number>();
  private prunedAt = -Infinity;

  constructor(
    private readonly windowMs: number,
    private readonly clock: MonotonicClock,
  ) {}

  /** True when `key` was not let through within the last window (and it is now). */
  first(key: string): boolean {
    const now = this.clock.monotonicMs();
    this.prune(now);
    const last = this.lastAt.get(key);
    if (last !== undefined && now - last < this.windowMs) return false;
    this.lastAt.set(key, now);
    return true;
  }

  private prune(now: number): void {
    if (now - this.prunedAt < this.windowMs) return;
    this.prunedAt = now;
    for (const [key, at] of this.lastAt) if (now - at >= this.windowMs) this.lastAt.delete(key);
  }
}
