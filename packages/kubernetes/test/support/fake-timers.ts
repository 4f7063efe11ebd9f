import type { ScheduledTimer, Timers } from '../../src/index.js';

interface Waiting {
  readonly at: number;
  readonly callback: () => void;
  unref: boolean;
}

/** Timers on a monotonic clock that only moves when a test says so: retries without sleeping. */
export class FakeTimers implements Timers {
  private nowMs = 1_000_000;
  private readonly waiting = new Set<Waiting>();

  readonly monotonicMs = (): number => this.nowMs;

  readonly setTimer = (ms: number, callback: () => void): ScheduledTimer => {
    const timer: Waiting = { at: this.nowMs + Math.max(0, ms), callback, unref: false };
    this.waiting.add(timer);
    return { cancel: () => this.waiting.delete(timer), unref: () => void (timer.unref = true) };
  };

  /** The timers still waiting, soonest first: how far ahead each is due, and whether it was unref'd. */
  pending(): { inMs: number; unref: boolean }[] {
    return [...this.waiting].sort((a, b) => a.at - b.at).map((t) => ({ inMs: t.at - this.nowMs, unref: t.unref }));
  }

  /** Moves the clock forward by `ms`, running each timer that comes due on the way, in order. */
  advance(ms: number): void {
    const until = this.nowMs + ms;
    for (;;) {
      const next = [...this.waiting].sort((a, b) => a.at - b.at)[0];
      if (!next || next.at > until) break;
      this.waiting.delete(next);
      this.nowMs = next.at;
      next.callback();
    }
    this.nowMs = until;
  }
}
