import type { Instant } from '@eso-mtls/core';
import { Backoff } from '../client/backoff.js';
import { type ScheduledTimer, type Timers, systemTimers } from '../runtime/clock.js';
import type { Logger } from '../runtime/logger.js';
import type { ReconcileRound } from './reconcile-round.js';
import type { RoundResult } from './round.js';
import { StandingStates } from './standing-states.js';

/** Timing of {@link Reconciler}. */
export interface ReconcilerOptions {
  readonly now: () => Instant;
  /**
   * When to wake up (debounce, retries, the next due time), on real elapsed time: not `now`, the
   * certificate clock that tests move forward (default: the process's own timers).
   */
  readonly timers?: Timers;
  /** Safety-net period: a reconcile runs at least this often. */
  readonly reconcileIntervalMs: number;
  /** Events within this window are coalesced into one reconcile (default 100 ms). */
  readonly debounceMs?: number;
  /** False stops reconciling (a replica that is not the leader plans nothing). */
  readonly writesAllowed: () => boolean;
  readonly logger: Logger;
}

/**
 * Decides when to reconcile: shortly after a burst of events (debounced), when the last plan said
 * something comes due, every reconcile interval regardless, and again soon after a write found its
 * Secret moved on (with backoff). Rounds never overlap.
 */
export class Reconciler {
  private readonly timers: Timers;
  private timer: ScheduledTimer | undefined;
  private timerAt = Infinity;
  private running: Promise<RoundResult | undefined> | undefined;
  private dirty = false;
  private stopped = true;
  private readonly retry = new Backoff({ initialMs: 100, maxMs: 30_000 });
  private lastResult: RoundResult | undefined;
  private settledWaiters: (() => void)[] = [];
  // A round that keeps failing is retried every few seconds: log its error when it changes, and
  // again once per reconcile interval, not on every retry.
  private readonly failure: StandingStates;
  /** Rounds run so far. */
  rounds = 0;

  constructor(
    private readonly round: ReconcileRound,
    private readonly options: ReconcilerOptions,
  ) {
    this.failure = new StandingStates({ repeatMs: options.reconcileIntervalMs });
    this.timers = options.timers ?? systemTimers;
  }

  /** Starts scheduling with an immediate reconcile. */
  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Stops scheduling and waits for a round in flight to finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.clearTimer();
    await this.running;
  }

  /** Asks for a reconcile soon (debounced): call on every relevant event. */
  trigger(): void {
    if (this.stopped) return;
    if (this.running) {
      this.dirty = true;
      return;
    }
    this.schedule(this.options.debounceMs ?? 100);
  }

  /** Runs a round now (after the one in flight, if any) and returns its result. */
  async reconcileNow(): Promise<RoundResult | undefined> {
    while (this.running) await this.running;
    this.clearTimer();
    return this.runRound();
  }

  /** The last round's result. */
  get last(): RoundResult | undefined {
    return this.lastResult;
  }

  /** Resolves after the next round that planned nothing and left nothing pending. */
  whenSettled(): Promise<void> {
    return new Promise((r) => this.settledWaiters.push(r));
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    const at = this.timers.monotonicMs() + Math.max(0, delayMs);
    if (this.timer && this.timerAt <= at) return; // an earlier wake-up is already set
    this.clearTimer();
    this.timerAt = at;
    // setTimer clamps the delay to Node's longest timer, as a due time months ahead needs.
    this.timer = this.timers.setTimer(delayMs, () => {
      this.timer = undefined;
      this.timerAt = Infinity;
      void this.runRound();
    });
  }

  private clearTimer(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private runRound(): Promise<RoundResult | undefined> {
    const run = (async (): Promise<RoundResult | undefined> => {
      this.dirty = false;
      if (!this.options.writesAllowed()) return undefined;
      try {
        const result = await this.round.run(this.options.now);
        if (
          this.failure.track(
            [],
            () => 'reconcile',
            () => '',
            this.options.now(),
          ).ended.length > 0
        ) {
          this.options.logger.info({}, 'reconcile succeeded again');
        }
        this.rounds++;
        this.lastResult = result;
        return result;
      } catch (e) {
        const error = (e as Error)?.message ?? String(e);
        if (
          this.failure.track(
            [error],
            () => 'reconcile',
            (m) => m,
            this.options.now(),
          ).report.length > 0
        ) {
          this.options.logger.error({ error }, 'reconcile failed; retrying with backoff');
        }
        return undefined;
      }
    })();
    this.running = run;
    void run.then((result) => {
      this.running = undefined;
      this.afterRound(result);
    });
    return run;
  }

  private afterRound(result: RoundResult | undefined): void {
    const { now, reconcileIntervalMs, debounceMs = 100 } = this.options;
    if (this.stopped) return;
    const retrying = result === undefined ? this.options.writesAllowed() : result.stale + result.failed > 0;
    const wroteOrRetries = result !== undefined && (result.written > 0 || retrying);
    if (retrying) {
      this.schedule(this.retry.next());
    } else {
      this.retry.reset();
    }
    if (this.dirty || (result && result.written > 0)) this.schedule(debounceMs);
    const due = result?.plan.nextDueAt;
    const untilDue = due === undefined ? Infinity : due - now();
    this.schedule(Math.min(reconcileIntervalMs, untilDue));
    if (result && !wroteOrRetries && !this.dirty) {
      const waiters = this.settledWaiters;
      this.settledWaiters = [];
      for (const w of waiters) w();
    }
  }
}
