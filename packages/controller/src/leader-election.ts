import type { Logger } from 'pino';
import { type Clock, sleep, systemClock } from './clock.js';
import type { LeaderElectionTimings } from './config.js';
import { type LeaseLock, type LeaseRecord, LeaseRaceError, type ObservedLease, heldByAnother, leaseRecordChanged } from './lease-lock.js';

/** Options of {@link LeaderElector}. */
export interface LeaderElectorOptions {
  /** The Lease to hold. */
  readonly lock: LeaseLock;
  /** Written into the Lease as holderIdentity; unique per process. */
  readonly identity: string;
  /** Lease duration, renew deadline and retry period. */
  readonly timings: LeaderElectionTimings;
  /** The clock (default: the system's). */
  readonly clock?: Clock;
  /** Uniform in [0, 1); spreads the retries of several candidates. */
  readonly random?: () => number;
  /** Where leadership changes are logged. */
  readonly logger?: Logger;
  /** Called once per term, after the Lease is ours. */
  readonly onStartedLeading?: () => void;
  /** Called once per term, when the lease is lost or given up; writes are already fenced by then. */
  readonly onStoppedLeading?: (reason: string) => void;
  /** Called with every read or write of the Lease (undefined: it does not exist), e.g. to judge its holder. */
  readonly onLeaseRead?: (record: LeaseRecord | undefined) => void;
}

/** Counters that let tests and logs see how close renewals came to the deadline. */
export interface LeaderElectionStats {
  /** Times this process became leader. */
  terms: number;
  /** Successful renewals. */
  renewals: number;
  /** Attempts to acquire or renew that failed. */
  failedAttempts: number;
  /** Longest time between the starts of two consecutive successful renewals in one term. */
  maxRenewGapMs: number;
}

type Attempt = { abandoned: boolean };

/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go does it: a candidate takes the
 * Lease once it has seen the holder's record unchanged for leaseDuration (its own monotonic clock,
 * so clock skew between nodes does not matter); the leader renews every retryPeriod and gives up
 * when it has not renewed within renewDeadline. {@link writesAllowed} is computed from the clock at
 * each call, so a leader that was stopped (SIGSTOP) or starved refuses writes the moment it resumes,
 * before any timer of its own has run.
 */
export class LeaderElector {
  /** Counts since start, for tests and metrics. */
  readonly stats: LeaderElectionStats = { terms: 0, renewals: 0, failedAttempts: 0, maxRenewGapMs: 0 };
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly abort = new AbortController();
  private observed: ObservedLease | undefined;
  private observedAtMs = 0;
  private leading = false;
  // Monotonic time at which the last successful renewal *started*: others saw it no earlier.
  private renewedFromMs = 0;
  private loop: Promise<void> | undefined;

  constructor(private readonly options: LeaderElectorOptions) {
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    const { leaseDuration, renewDeadline, retryPeriod } = options.timings;
    if (!(leaseDuration > renewDeadline && renewDeadline > retryPeriod)) {
      throw new RangeError(`leader election needs leaseDuration (${leaseDuration}ms) > renewDeadline (${renewDeadline}ms) > retryPeriod (${retryPeriod}ms)`);
    }
  }

  /** Starts campaigning in the background; resolves nothing, errors are logged and retried. */
  start(): void {
    this.loop ??= this.run();
  }

  /** True while this process holds the Lease and renewed it within renewDeadline. */
  writesAllowed(): boolean {
    return this.leading && this.clock.monotonicMs() - this.renewedFromMs < this.options.timings.renewDeadline;
  }

  /** For /readyz: we lead, or we have recently seen another replica hold a live Lease. */
  leaseKnown(): boolean {
    if (this.writesAllowed()) return true;
    const r = this.observed?.record;
    return r !== undefined && heldByAnother(r, this.options.identity, this.observedAtMs, this.clock.monotonicMs());
  }

  /** Holder of the Lease as last observed ('' when released, undefined before the first read). */
  observedHolder(): string | undefined {
    return this.observed?.record.holderIdentity;
  }

  /**
   * Stops campaigning and, if we still lead, releases the Lease the way client-go's
   * ReleaseOnCancel does (empty holder, leaseDurationSeconds 1) so a successor need not wait.
   * Call it after the last write has finished.
   */
  async stopAndRelease(): Promise<void> {
    this.abort.abort();
    await this.loop;
    if (!this.writesAllowed() || !this.observed) {
      this.leading = false;
      return;
    }
    this.leading = false;
    const now = this.clock.now();
    try {
      await this.options.lock.update(this.observed, {
        holderIdentity: '',
        leaseDurationSeconds: 1,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: this.observed.record.leaseTransitions,
      });
      this.options.logger?.info({ lease: this.leaseName() }, 'released leader lease');
    } catch (e) {
      this.options.logger?.warn({ lease: this.leaseName(), err: errorText(e) }, 'could not release leader lease; a successor will take it after leaseDuration');
    }
    this.options.onStoppedLeading?.('shutting down');
  }

  private async run(): Promise<void> {
    const { signal } = this.abort;
    while (!signal.aborted) {
      if (!(await this.acquire(signal))) return;
      this.leading = true;
      this.stats.terms++;
      this.options.logger?.info({ lease: this.leaseName(), identity: this.options.identity }, 'acquired leader lease');
      this.options.onStartedLeading?.();
      const reason = await this.renewUntilLost(signal);
      if (reason === undefined) return; // stopping: stopAndRelease() takes it from here
      this.leading = false;
      this.options.logger?.error({ lease: this.leaseName(), reason }, 'lost leader lease; stopped writing');
      this.options.onStoppedLeading?.(reason);
    }
  }

  /** Tries every retryPeriod (jittered downwards, so the handover bound holds) until the Lease is ours. */
  private async acquire(signal: AbortSignal): Promise<boolean> {
    const { retryPeriod, renewDeadline } = this.options.timings;
    for (;;) {
      if (signal.aborted) return false;
      if (await this.attempt(renewDeadline)) return true;
      await sleep(retryPeriod * (0.9 + 0.1 * this.random()), signal);
    }
  }

  /** Renews every retryPeriod; returns why leadership ended, or undefined when stopping. */
  private async renewUntilLost(signal: AbortSignal): Promise<string | undefined> {
    const { retryPeriod, renewDeadline } = this.options.timings;
    for (;;) {
      await sleep(retryPeriod, signal);
      if (signal.aborted) return undefined;
      const left = this.renewedFromMs + renewDeadline - this.clock.monotonicMs();
      if (left <= 0) return this.pastRenewDeadline();
      const previous = this.renewedFromMs;
      if (await this.attempt(left)) {
        this.stats.renewals++;
        this.stats.maxRenewGapMs = Math.max(this.stats.maxRenewGapMs, this.renewedFromMs - previous);
        continue;
      }
      const holder = this.observed?.record.holderIdentity;
      if (holder !== undefined && holder !== '' && holder !== this.options.identity) return `lease taken by ${holder}`;
      if (!this.writesAllowed()) return this.pastRenewDeadline();
    }
  }

  /**
   * The one reason for a term that outran renewDeadline, whether the deadline passed while asleep
   * or while an attempt was in flight (a stalled process resumes in either).
   */
  private pastRenewDeadline(): string {
    const { renewDeadline } = this.options.timings;
    const since = this.clock.monotonicMs() - this.renewedFromMs;
    return `not renewed for ${Math.round(since)}ms, more than renewDeadline ${renewDeadline}ms (process stalled or apiserver unreachable)`;
  }

  /** One tryAcquireOrRenew, abandoned (its outcome ignored) after `timeoutMs`. */
  private async attempt(timeoutMs: number): Promise<boolean> {
    const token: Attempt = { abandoned: false };
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => {
        token.abandoned = true;
        resolve(false);
      }, timeoutMs);
    });
    try {
      const ok = await Promise.race([this.tryAcquireOrRenew(token), timeout]);
      if (!ok) this.stats.failedAttempts++;
      return ok;
    } catch (e) {
      this.stats.failedAttempts++;
      const level = e instanceof LeaseRaceError ? 'debug' : 'warn';
      this.options.logger?.[level]({ lease: this.leaseName(), err: errorText(e) }, 'leader lease attempt failed');
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  private async tryAcquireOrRenew(token: Attempt): Promise<boolean> {
    const { lock, identity, timings } = this.options;
    const startedMs = this.clock.monotonicMs();
    const now = this.clock.now();
    const mine = (acquireTime: Date | undefined, transitions: number): LeaseRecord => ({
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(timings.leaseDuration / 1000),
      acquireTime,
      renewTime: now,
      leaseTransitions: transitions,
    });
    const current = await lock.get();
    this.options.onLeaseRead?.(current?.record);
    if (token.abandoned) return false;
    if (!current) {
      const created = await lock.create(mine(now, 0));
      return this.commit(token, created, startedMs);
    }
    this.recordLease(current);
    const r = current.record;
    if (heldByAnother(r, identity, this.observedAtMs, this.clock.monotonicMs())) return false;
    const ours = r.holderIdentity === identity;
    const updated = await lock.update(current, mine(ours ? (r.acquireTime ?? now) : now, ours ? r.leaseTransitions : r.leaseTransitions + 1));
    return this.commit(token, updated, startedMs);
  }

  private commit(token: Attempt, lease: ObservedLease, startedMs: number): boolean {
    this.options.onLeaseRead?.(lease.record);
    if (token.abandoned) return false;
    this.recordLease(lease);
    this.renewedFromMs = startedMs;
    return true;
  }

  /** Remembers when the record last changed: the holder's liveness is judged by our own clock. */
  private recordLease(lease: ObservedLease): void {
    const before = this.observed?.record;
    const r = lease.record;
    if (leaseRecordChanged(before, r)) {
      this.observedAtMs = this.clock.monotonicMs();
      if (before?.holderIdentity !== r.holderIdentity && r.holderIdentity !== this.options.identity) {
        this.options.logger?.info({ lease: this.leaseName(), holder: r.holderIdentity || null }, 'observed leader lease holder');
      }
    }
    this.observed = lease;
  }

  private leaseName(): string {
    return `${this.options.lock.namespace}/${this.options.lock.name}`;
  }
}

function errorText(e: unknown): string {
  if (e instanceof Error) return `${e.name}: ${e.message}`.slice(0, 500);
  return String(e).slice(0, 500);
}
