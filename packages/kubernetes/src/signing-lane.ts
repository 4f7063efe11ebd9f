import type { Instant, MaterializedCa } from '@eso-mtls/core';
import { Backoff } from './backoff.js';
import { type ScheduledTimer, type Timers, systemTimers } from './clock.js';
import type { Logger } from './logger.js';
import type { PodCertificateSigner, SigningCa } from './pod-signer.js';

/** Options of {@link PodSigningLane}. */
export interface PodSigningLaneOptions {
  /** The certificate clock (the adapter's `now`). */
  readonly now: () => Instant;
  /** Debounce and retry wake-ups, on real elapsed time (default: the process's own timers). */
  readonly timers?: Timers;
  /** Request events within this window are coalesced into one pass (default 100 ms). */
  readonly debounceMs?: number;
  /** The Secret fence: a replica that does not lead signs nothing. */
  readonly writesAllowed: () => boolean;
  readonly logger: Logger;
}

/**
 * Pod signing in its own lane, beside the reconcile rounds of the Secret mode, so that neither
 * waits on the other: a backlog of PodCertificateRequests does not hold back a Service's Secret,
 * and a round of Secret writes does not hold back signing.
 *
 * The rounds hand over the CA that signs ({@link use}), once it is stored and its trust bundles
 * published. Before a round writes a CA change it takes the CA back ({@link withdraw}) and waits for
 * the signatures in flight, so no certificate is signed by a CA after a CA write replaced it. Passes
 * run one at a time: after request events (debounced), after a new CA, and again with backoff
 * while status writes fail.
 */
export class PodSigningLane implements SigningCa {
  private ca: MaterializedCa | undefined;
  // Signatures (and their status writes) made with `ca` that have not finished.
  private inFlight = 0;
  private drained: (() => void)[] = [];
  private readonly timers: Timers;
  private timer: ScheduledTimer | undefined;
  private timerAt = Infinity;
  private running: Promise<number> | undefined;
  private dirty = false;
  private stopped = true;
  private readonly retry = new Backoff({ initialMs: 100, maxMs: 30_000 });
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly signer: PodCertificateSigner,
    private readonly options: PodSigningLaneOptions,
  ) {
    this.timers = options.timers ?? systemTimers;
  }

  /** Starts the lane; nothing is signed before a round hands over a CA. */
  start(): void {
    this.stopped = false;
    if (this.ca) this.schedule(0);
  }

  /** Stops scheduling, and waits for the pass in flight: its requests not yet started are left for later. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.ca = undefined;
    this.clearTimer();
    await this.running;
  }

  /** The CA to sign with from now on (stored, with its trust bundles published); starts a pass. */
  use(ca: MaterializedCa): void {
    this.ca = ca;
    this.trigger();
  }

  /**
   * Takes the CA back before a CA write, and resolves once every signature made with it has been
   * written (at most the signer's concurrency). Until the next {@link use}, requests wait.
   */
  withdraw(): Promise<void> {
    this.ca = undefined;
    return this.inFlight === 0 ? Promise.resolve() : new Promise((r) => this.drained.push(r));
  }

  /** Forgets the CA without waiting (leadership changed: the next round reads the CA again). */
  forget(): void {
    this.ca = undefined;
  }

  /** Asks for a pass soon (debounced): call on every request event. */
  trigger(): void {
    if (this.stopped || !this.ca) return;
    if (this.running) {
      this.dirty = true;
      return;
    }
    this.schedule(this.options.debounceMs ?? 100);
  }

  /** Resolves once no pass runs and none is due (tests, benchmarks). */
  whenIdle(): Promise<void> {
    if (!this.running && !this.timer) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  /**
   * Runs `sign` with the CA that signs now, counted as in flight until it settles; undefined
   * (and `sign` not called) while no CA is handed over.
   */
  async withCa<T>(sign: (ca: MaterializedCa) => Promise<T>): Promise<T | undefined> {
    const ca = this.ca;
    if (!ca) return undefined;
    this.inFlight++;
    try {
      return await sign(ca);
    } finally {
      if (--this.inFlight === 0) {
        const waiters = this.drained;
        this.drained = [];
        for (const w of waiters) w();
      }
    }
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    const at = this.timers.monotonicMs() + Math.max(0, delayMs);
    if (this.timer && this.timerAt <= at) return;
    this.clearTimer();
    this.timerAt = at;
    this.timer = this.timers.setTimer(delayMs, () => {
      this.timer = undefined;
      this.timerAt = Infinity;
      this.run();
    });
  }

  private clearTimer(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private run(): void {
    this.dirty = false;
    const pass = this.pass();
    this.running = pass;
    void pass.then((errors) => {
      this.running = undefined;
      if (errors > 0) this.schedule(this.retry.next());
      else this.retry.reset();
      if (this.dirty) this.schedule(this.options.debounceMs ?? 100);
      if (!this.running && !this.timer) {
        const waiters = this.idleWaiters;
        this.idleWaiters = [];
        for (const w of waiters) w();
      }
    });
  }

  /** One pass over the pending requests; resolves with the status writes to retry. */
  private async pass(): Promise<number> {
    const { writesAllowed, now, logger } = this.options;
    // A replica that no longer leads may meet a CA another leader replaced: it signs again only
    // with the CA of its next round.
    if (!writesAllowed()) {
      this.forget();
      return 0;
    }
    try {
      const signed = await this.signer.signPending(this, now, writesAllowed);
      this.signer.refreshStaleNames(now());
      return signed.errors;
    } catch (e) {
      logger.error({ error: (e as Error)?.message ?? String(e) }, 'signing pod certificate requests failed; retrying with backoff');
      return 1;
    }
  }
}
