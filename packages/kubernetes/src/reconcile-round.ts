import {
  type CertificateCache,
  type ConcurrencyLimit,
  type IssuanceLedger,
  type CryptoBackend,
  type Instant,
  type Plan,
  type Policy,
  type RotationReason,
  type SecretWrite,
  isPlanEmpty,
  planRotation,
} from '@eso-mtls/core';
import type { CertificateStatusView } from './certificate-status.js';
import type { ClusterInformers } from './cluster-informers.js';
import type { EventRecorder } from './event-recorder.js';
import type { Logger } from './logger.js';
import { RoundWrites } from './round-writes.js';
import type { SecretWriter } from './secret-writer.js';
import { ServiceDirectory } from './service-directory.js';
import type { SnapshotBuilder } from './snapshot-builder.js';
import { StandingReports } from './standing-reports.js';

/** Callbacks for metrics and tests; each must be cheap and must not throw. */
export interface AdapterHooks {
  /** A namespace's server certificate was issued and written (one call per issuance). */
  onRotation?(namespace: string, services: readonly string[], reason: RotationReason): void;
  /**
   * A namespace's server certificate could not be issued (key generation, signing) or written, its
   * trust bundle could not be written, or its Secret is in conflict.
   */
  onRotationFailure?(namespace: string, services: readonly string[]): void;
  /** A CA could not be generated or signed, or the CA Secret could not be written. */
  onCaRotationFailure?(): void;
  /** Every Secret write that succeeded: CA, client, server leaves and bundle updates. */
  onWrite?(write: SecretWrite): void;
}

/** What one reconcile did. */
export interface RoundResult {
  readonly plan: Plan;
  /** Secrets written. */
  readonly written: number;
  /** Writes refused because the Secret moved on (409, or 404 on update); a re-plan follows. */
  readonly stale: number;
  /** Writes that failed otherwise (403, 422, 5xx, network); retried with backoff. */
  readonly failed: number;
  /** Writes not sent because writesAllowed() turned false. */
  readonly fenced: number;
}

/** Everything a round needs. */
export interface RoundDependencies {
  readonly informers: ClusterInformers;
  readonly builder: SnapshotBuilder;
  readonly writer: SecretWriter;
  readonly events: EventRecorder;
  readonly ledger: IssuanceLedger;
  readonly policy: Policy;
  readonly cache: CertificateCache;
  readonly crypto: CryptoBackend;
  readonly logger: Logger;
  readonly hooks: AdapterHooks;
  readonly writeLimiter: ConcurrencyLimit;
  /** The Secret fence: checked again before each key is generated, so a closing fence wastes no keygen. */
  readonly writesAllowed: () => boolean;
  /** The metrics view: given each plan as it is made, then the CA and each leaf as its write lands. */
  readonly status?: CertificateStatusView;
}

/**
 * One reconcile: snapshot the caches, plan, report what stands (conflicts, waiting leaves,
 * refusals), then write (see {@link RoundWrites}: the CA first, then leaves and bundles). A write
 * whose Secret moved on re-reads that Secret into the cache and counts as stale, so the caller
 * plans again; nothing signed by an unwritten CA is ever written.
 */
export class ReconcileRound {
  private readonly reports: StandingReports;

  constructor(private readonly deps: RoundDependencies) {
    this.reports = new StandingReports(deps.logger, deps.events, deps.hooks, deps.policy.reconcileInterval);
  }

  /** Plans at `clock()` and writes; each write is issued and stamped at the clock's time of writing. */
  async run(clock: () => Instant): Promise<RoundResult> {
    const { builder, policy, cache } = this.deps;
    const built = builder.build();
    const now = clock();
    const plan = planRotation(built.snapshot, { now, policy, cache });
    this.deps.status?.update(plan);
    const services = new ServiceDirectory(built.services);
    this.reports.report(plan, now, services);
    if (isPlanEmpty(plan)) return { plan, written: 0, stale: 0, failed: 0, fenced: 0 };
    return new RoundWrites(this.deps, built, plan, services, clock).run();
  }
}
