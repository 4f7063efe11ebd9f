import { randomBytes } from 'node:crypto';
import { truncate } from '@eso-mtls/core';
import { type KubeRestClient, corePath } from '@eso-mtls/kubernetes';
import type { LeaderLeaseForeignReason } from '@eso-mtls/metrics';
import type { Logger } from 'pino';
import { type ForeignLease, judgeLeaseHolder } from './lease-holder.js';
import type { LeaseRecord } from './lease-lock.js';

/** Options of {@link LeaseHolderWatch}. */
export interface LeaseHolderWatchOptions {
  /** The Lease watched. */
  readonly lease: { readonly namespace: string; readonly name: string };
  /** Our own holder identity, and the Event's reportingInstance. */
  readonly identity: string;
  /** The configured lease duration, milliseconds. */
  readonly leaseDuration: number;
  readonly logger?: Logger;
  /** Where the Events on the Lease are created (the Lease's own client); none without it. */
  readonly events?: Pick<KubeRestClient, 'create'>;
  /** The wall clock, for the Events' timestamps. */
  readonly now?: () => Date;
}

/**
 * Judges every read of the leader election Lease with {@link judgeLeaseHolder}, on every replica,
 * leader or not: the gauge eso_leader_lease_foreign reads {@link reasons} at each scrape, and the
 * start and the end of a foreign hold are each said once, in a log line and an Event on the Lease.
 * A replica cannot take a Lease someone else renews or claims for an hour, and /readyz stays ok
 * meanwhile (another holder is known), so this is what makes that stop visible.
 */
export class LeaseHolderWatch {
  private current: ForeignLease | undefined;
  // Said once per state: a new holder or reason while foreign is a new state.
  private stateKey = '';

  constructor(private readonly options: LeaseHolderWatchOptions) {}

  /** Judges the Lease as just read (undefined: it does not exist). */
  observe(record: LeaseRecord | undefined): void {
    const { identity, leaseDuration } = this.options;
    const found = judgeLeaseHolder(record, { identity, leaseDuration });
    const key = found ? `${found.holder}/${found.reasons.join(',')}` : '';
    const before = this.current;
    this.current = found;
    if (key === this.stateKey) return;
    this.stateKey = key;
    if (found) this.started(found);
    else if (before) this.ended(before, record);
  }

  /** The reasons the Lease is foreign now; empty when it is not. */
  reasons(): readonly LeaderLeaseForeignReason[] {
    return this.current?.reasons ?? [];
  }

  /** The foreign hold as last read, if any. */
  foreign(): ForeignLease | undefined {
    return this.current;
  }

  private started(found: ForeignLease): void {
    const { lease, logger } = this.options;
    logger?.error(
      { lease: `${lease.namespace}/${lease.name}`, holder: truncate(found.holder), leaseDurationSeconds: found.leaseDurationSeconds, reasons: found.reasons },
      found.message,
    );
    this.event('Warning', 'LeaseHeldByForeignHolder', found.message);
  }

  private ended(before: ForeignLease, record: LeaseRecord | undefined): void {
    const { lease, logger } = this.options;
    const now =
      record === undefined
        ? 'the Lease was deleted'
        : record.holderIdentity === ''
          ? 'the Lease was released'
          : `it is held by ${JSON.stringify(truncate(record.holderIdentity))}`;
    const message = `the leader election Lease is no longer held by ${JSON.stringify(truncate(before.holder))} (${before.reasons.join(', ')}): ${now}`;
    logger?.info({ lease: `${lease.namespace}/${lease.name}`, holder: truncate(record?.holderIdentity ?? '') || null }, message);
    this.event('Normal', 'LeaseForeignHolderGone', message);
  }

  /** One Event on the Lease; a failure is logged, never thrown (the metric and the log line already say it). */
  private event(type: 'Normal' | 'Warning', reason: string, message: string): void {
    const { events, lease, identity, logger } = this.options;
    if (!events) return;
    const now = (this.options.now ?? (() => new Date()))();
    const time = now.toISOString().replace(/\.\d{3}Z$/, 'Z');
    const body = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `${lease.name}.${now.getTime().toString(16)}${randomBytes(4).toString('hex')}`, namespace: lease.namespace },
      involvedObject: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: lease.namespace, name: lease.name },
      type,
      reason,
      message: message.slice(0, 1024),
      source: { component: 'eso-mtls' },
      reportingComponent: 'eso-mtls',
      reportingInstance: identity.slice(0, 128),
      firstTimestamp: time,
      lastTimestamp: time,
      count: 1,
    };
    events.create(corePath('events', lease.namespace), body).catch((e: unknown) => {
      logger?.warn({ lease: `${lease.namespace}/${lease.name}`, reason, error: (e as Error).message }, 'could not record Event');
    });
  }
}
