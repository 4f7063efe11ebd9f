import { truncate } from '@eso-mtls/core';
import type { Logger } from 'pino';
import { type Clock, sleep, systemClock } from './clock.js';
import { type LeaseLock, type LeaseRecord, heldByAnother, leaseRecordChanged } from './lease-lock.js';

/** Options of {@link YieldToLeaseHolder}. */
export interface YieldToLeaseHolderOptions {
  /** The Lease leader-elected controllers of this installation hold. */
  readonly lock: LeaseLock;
  /** Our own identity: a Lease we once held is not another's. */
  readonly identity: string;
  /** How often the Lease is read (the leader election retry period). */
  readonly retryPeriod: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Called when yielding starts or ends (after the first read, and on each change). */
  readonly onChange?: (yielding: boolean) => void;
  /** Called with every read of the Lease (undefined: it does not exist), e.g. to judge its holder. */
  readonly onLeaseRead?: (record: LeaseRecord | undefined) => void;
}

/**
 * The rule for a controller running without leader election: it writes nothing while another
 * identity holds a live Lease of its installation, the way a candidate that lost the election
 * waits. Two leader-elected controllers cannot both lead; this closes the remaining case, a second
 * controller started without `--leader-elect` next to a leader (each would re-issue the other's
 * certificates under its own policy). Until the first read answers it yields; a Lease it cannot
 * read (no RBAC, apiserver down) is logged and does not stop it, as before.
 */
export class YieldToLeaseHolder {
  private readonly clock: Clock;
  private readonly abort = new AbortController();
  private record: LeaseRecord | undefined;
  private changedAtMs = 0;
  private answered = false;
  private lastYielding: boolean | undefined;
  private lastError: string | undefined;
  private loop: Promise<void> | undefined;

  constructor(private readonly options: YieldToLeaseHolderOptions) {
    this.clock = options.clock ?? systemClock;
  }

  /** Reads the Lease every retry period, in the background. */
  start(): void {
    this.loop ??= this.run();
  }

  /** True while another identity holds a live Lease, or before the Lease was first read. */
  yielding(): boolean {
    if (!this.answered) return true;
    return this.record !== undefined && heldByAnother(this.record, this.options.identity, this.changedAtMs, this.clock.monotonicMs());
  }

  /** Stops reading. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    const { signal } = this.abort;
    while (!signal.aborted) {
      await this.read();
      this.notice();
      await sleep(this.options.retryPeriod, signal);
    }
  }

  private async read(): Promise<void> {
    const { lock, logger } = this.options;
    try {
      const lease = await lock.get();
      const r = lease?.record;
      this.options.onLeaseRead?.(r);
      if (r && leaseRecordChanged(this.record, r)) this.changedAtMs = this.clock.monotonicMs();
      this.record = r;
      this.lastError = undefined;
    } catch (e) {
      const error = truncate(e instanceof Error ? e.message : String(e), 500);
      // Logged when the error changes, not every retry period.
      if (error !== this.lastError) {
        logger?.warn(
          { lease: `${lock.namespace}/${lock.name}`, error },
          'could not read the leader election Lease; running without leader election, this controller writes as if no other controller held it (grant get on leases, or use --leader-elect)',
        );
      }
      this.lastError = error;
    }
    this.answered = true;
  }

  /** Logs each change of state once, and tells the owner. */
  private notice(): void {
    const yielding = this.yielding();
    if (yielding === this.lastYielding) return;
    this.lastYielding = yielding;
    const { lock, logger } = this.options;
    const lease = `${lock.namespace}/${lock.name}`;
    if (yielding) {
      logger?.warn(
        { lease, holder: this.record?.holderIdentity },
        'another controller holds the leader election Lease of this installation; this controller runs without leader election and writes nothing while that Lease is live',
      );
    } else {
      logger?.info({ lease, holder: this.record?.holderIdentity || null }, 'no other controller holds the leader election Lease; writing');
    }
    this.options.onChange?.(yielding);
  }
}
