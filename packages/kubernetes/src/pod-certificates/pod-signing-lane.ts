import type { Instant, MaterializedCa, PodSignerRole } from '@eso-mtls/core';
import { Backoff } from '../client/backoff.js';
import { type ScheduledTimer, type Timers, systemTimers } from '../runtime/clock.js';
import type { Logger } from '../runtime/logger.js';
import { PodQueue } from './pod-queue.js';
import type { PodCertificateRequest } from './pod-requests.js';
import type { PodCertificateSigner, SigningCa } from './pod-signer.js';

/** Options of {@link PodSigningLane}. */
export interface PodSigningLaneOptions {
  /** The certificate clock (the adapter's `now`). */
  readonly now: () => Instant;
  /** Retry and resync wake-ups, on real elapsed time (default: the process's own timers). */
  readonly timers?: Timers;
  /** Requests decided at once (the signer's bound; default 8). */
  readonly concurrency?: number;
  /** Every pending request is queued again this often (the reconcile interval; default 10 minutes), whatever the watch said. */
  readonly resyncMs?: number;
  /** The Secret fence: a replica that does not lead signs nothing. */
  readonly writesAllowed: () => boolean;
  readonly logger: Logger;
}

/** Per-request retry delays after a status write that did not land or an unreadable pod. */
const RETRY = { initialMs: 100, maxMs: 30_000 };

/**
 * Pod signing in its own lane, beside the reconcile rounds of the Secret mode, so that neither
 * waits on the other. Each request is decided as its watch event arrives ({@link enqueue}): it
 * joins a fair queue ({@link PodQueue}: per signer and namespace, served in turn) and up to
 * `concurrency` are decided at once. No debounce, no passes.
 *
 * The rounds hand over the CA that signs ({@link use}), once it is stored and its trust bundles
 * published. Before a round writes a CA change it takes the CA back ({@link withdraw}) and waits for
 * the signatures in flight, so no certificate is signed by a CA after a CA write replaced it;
 * requests arriving meanwhile wait in the queue for the next {@link use}. Every pending request is
 * queued again on {@link use}, every `resyncMs`, and, with its own backoff, after a failed attempt.
 */
export class PodSigningLane implements SigningCa {
  private ca: MaterializedCa | undefined;
  // Signatures (and their status writes) made with `ca` that have not finished.
  private inFlight = 0;
  private drained: (() => void)[] = [];
  private readonly timers: Timers;
  private readonly queue = new PodQueue();
  // Requests being decided now (by uid): a watch event for one of them queues it again after.
  private readonly deciding = new Set<string>();
  private readonly retries = new Map<string, { backoff: Backoff; timer?: ScheduledTimer }>();
  // Retries with a timer set (kept as a count, so the idle check after each decision is O(1)).
  private retrying = 0;
  private resyncTimer: ScheduledTimer | undefined;
  // Resyncs started: only the latest one's walk of the cache queues (a later resync or a stop ends it).
  private walks = 0;
  // True while the latest walk queues requests.
  private walking = false;
  private stopped = true;
  private idleWaiters: (() => void)[] = [];
  private failure: unknown;

  constructor(
    private readonly signer: PodCertificateSigner,
    private readonly options: PodSigningLaneOptions,
  ) {
    this.timers = options.timers ?? systemTimers;
  }

  /** Starts the lane; nothing is signed before a round hands over a CA. */
  start(): void {
    this.stopped = false;
    this.resync();
  }

  /** Stops deciding, and waits for the requests in flight: the queued ones are left for later. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.ca = undefined;
    this.walks++;
    this.walking = false;
    this.resyncTimer?.cancel();
    this.resyncTimer = undefined;
    for (const retry of this.retries.values()) retry.timer?.cancel();
    this.retries.clear();
    this.retrying = 0;
    await this.whenIdle();
  }

  /** The CA to sign with from now on (stored, with its trust bundles published); queues every pending request. */
  use(ca: MaterializedCa): void {
    this.ca = ca;
    this.resync();
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

  /** Queues a request its watch delivered (added or changed), and decides it as soon as a slot is free. */
  enqueue(role: PodSignerRole, request: PodCertificateRequest): void {
    const uid = request.metadata?.uid ?? '';
    // A request with a retry due waits for it: its backoff is not cut short by its own watch events.
    if (this.retries.get(uid)?.timer) return;
    this.queue.add({
      uid,
      role,
      namespace: request.metadata?.namespace ?? '',
      name: request.metadata?.name ?? '',
      queuedAt: this.timers.monotonicMs(),
    });
    this.pump();
  }

  /** Resolves once nothing is queued, decided or due for a retry (tests, benchmarks). */
  whenIdle(): Promise<void> {
    if (this.idle()) return Promise.resolve();
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

  /** Queues every pending request again, and schedules the next resync. */
  private resync(): void {
    if (this.stopped) return;
    this.resyncTimer?.cancel();
    this.resyncTimer = this.timers.setTimer(this.options.resyncMs ?? 600_000, () => this.resync());
    this.resyncTimer.unref();
    this.signer.followPods();
    this.walking = true;
    void this.queuePending(++this.walks);
    this.signer.refreshStaleNames(this.options.now());
  }

  /**
   * Queues what the signer's walk of the cache finds pending. Every round hands the CA over, and a
   * walk of thousands of cached requests in one go held `/healthz` and the watches for as long:
   * the walk yields the event loop between chunks ({@link PodCertificateSigner.pending}).
   */
  private async queuePending(walk: number): Promise<void> {
    try {
      for await (const { role, request } of this.signer.pending()) {
        if (walk !== this.walks) return;
        // enqueue leaves a request whose retry is due to its own backoff.
        this.enqueue(role, request);
      }
    } catch (e) {
      // Nothing awaits the walk: a failure is logged, and the next resync walks again.
      this.options.logger.error({ error: (e as Error)?.message ?? String(e) }, 'queueing the pending pod certificate requests failed; the next resync retries');
    }
    if (walk !== this.walks) return;
    this.walking = false;
    this.settle();
  }

  /** Starts decisions while a slot, a CA and a queued request are there. */
  private pump(): void {
    if (this.stopped || !this.ca) return;
    // A replica that no longer leads may meet a CA another leader replaced: it signs again only
    // with the CA of its next round.
    if (!this.options.writesAllowed()) {
      this.forget();
      return;
    }
    while (this.deciding.size < (this.options.concurrency ?? 8)) {
      const next = this.queue.take();
      if (!next) break;
      const request = this.signer.requests.get(next.role)!.get(next.namespace, next.name);
      // Gone from the cache (deleted), or replaced by another request of that name.
      if (request?.metadata?.uid !== next.uid || this.deciding.has(next.uid)) continue;
      this.signer.stages.record('queueWait', this.timers.monotonicMs() - next.queuedAt);
      this.deciding.add(next.uid);
      void this.decide(next.role, request).finally(() => {
        this.deciding.delete(next.uid);
        this.pump();
        this.settle();
      });
    }
  }

  private async decide(role: PodSignerRole, request: PodCertificateRequest): Promise<void> {
    const uid = request.metadata?.uid ?? '';
    let result;
    try {
      result = await this.signer.decide(role, request, this, this.options.now);
      this.failure = undefined;
    } catch (e) {
      // A CA key that stopped answering: logged when its error changes, retried with backoff.
      const message = (e as Error)?.message ?? String(e);
      if (message !== this.failure) this.options.logger.error({ error: message }, 'signing a pod certificate request failed; retrying with backoff');
      this.failure = message;
      result = 'retry' as const;
    }
    if (result === 'retry') this.retry(role, request);
    else this.retries.delete(uid);
    this.signer.refreshStaleNames(this.options.now());
  }

  /** Queues the request again after its own backoff. */
  private retry(role: PodSignerRole, request: PodCertificateRequest): void {
    if (this.stopped) return;
    const uid = request.metadata?.uid ?? '';
    let retry = this.retries.get(uid);
    if (!retry) this.retries.set(uid, (retry = { backoff: new Backoff(RETRY) }));
    const entry = retry;
    this.retrying++;
    entry.timer = this.timers.setTimer(entry.backoff.next(), () => {
      entry.timer = undefined;
      this.retrying--;
      // The latest version from the cache: a 409 means the watch has a newer one.
      const latest = this.signer.requests.get(role)!.get(request.metadata?.namespace ?? '', request.metadata?.name ?? '');
      if (latest?.metadata?.uid === uid) this.enqueue(role, latest);
      else this.retries.delete(uid);
      this.settle();
    });
    entry.timer.unref();
  }

  private idle(): boolean {
    // With no CA handed over, queued requests wait for one: nothing more happens until then.
    const waiting = this.queue.size === 0 || !this.ca || this.stopped;
    return this.deciding.size === 0 && this.retrying === 0 && !this.walking && waiting;
  }

  private settle(): void {
    if (this.idleWaiters.length === 0 || !this.idle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
