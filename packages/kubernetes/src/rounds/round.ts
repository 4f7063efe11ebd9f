// The round's vocabulary, apart from the classes that use it: ReconcileRound, RoundWrites and the
// Reconciler all speak it, and none of them imports another for a type.
import type { CertificateCache, ConcurrencyLimit, CryptoBackend, IssuanceLedger, Plan, RotationReason, SecretWrite } from '@eso-mtls/core';
import type { EventRecorder } from '../events/event-recorder.js';
import type { ClusterInformers } from '../informers/cluster-informers.js';
import type { Installation } from '../installation/installation.js';
import type { SecretComponent } from '../installation/ownership.js';
import type { Logger } from '../runtime/logger.js';
import type { CaFollower } from './ca-follower.js';
import type { CaUpstream } from './ca-upstream.js';
import type { CertificateStatusView } from './certificate-status.js';
import type { OrphanPruner } from './pruner.js';
import type { SecretWriter } from './secret-writer.js';
import type { SnapshotBuilder } from './snapshot-builder.js';
import type { WriteConflicts } from './write-conflicts.js';
import type { WriteRefusals } from './write-refusals.js';

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
  /** The policy, bounds, namespace requirement and modes every plan is made under (see planContext), and where the CA Secret is. */
  readonly installation: Installation;
  readonly informers: ClusterInformers;
  readonly builder: SnapshotBuilder;
  readonly writer: SecretWriter;
  readonly events: EventRecorder;
  readonly ledger: IssuanceLedger;
  readonly cache: CertificateCache;
  readonly crypto: CryptoBackend;
  readonly logger: Logger;
  readonly hooks: RoundHooks;
  readonly writeLimiter: ConcurrencyLimit;
  /** The Secret fence: checked again before each key is generated, so a closing fence wastes no keygen. */
  readonly writesAllowed: () => boolean;
  /** The metrics view: given each plan as it is made, then the CA and each leaf as its write lands. */
  readonly status?: CertificateStatusView;
  /** Our writes another controller replaced: reported here, and held by RoundWrites. */
  readonly conflicts?: WriteConflicts;
  /** Provider namespaces whose writes are refused (immutable, 400/403/422): given to the plan, which stops waiting for them after a grace. */
  readonly refusals?: WriteRefusals;
  /** Pruning of orphaned provider Secrets (opt-in); runs after the writes, on the round's snapshot. */
  readonly pruner?: OrphanPruner;
  /** The pod-certificate mode, when on: told of each CA before and after it is written. */
  readonly caFollower?: CaFollower;
  /** An upstream CA source, when one is configured: observed for each plan, and acted on after its writes. */
  readonly upstream?: CaUpstream;
}

/** The rounds' callbacks for metrics and tests; each must be cheap and must not throw. */
export interface RoundHooks {
  /** A namespace's server certificate was issued and written (one call per issuance). */
  onRotation?(namespace: string, services: readonly string[], reason: RotationReason): void;
  /**
   * A namespace's server certificate could not be issued (key generation, signing) or written, its
   * trust bundle could not be written, or its Secret is in conflict.
   */
  onRotationFailure?(namespace: string, services: readonly string[]): void;
  /** A CA could not be generated or signed, the CA Secret could not be written, or a ClusterTrustBundle could not. */
  onCaRotationFailure?(): void;
  /** Every Secret write that succeeded: CA, client, server leaves and bundle updates. */
  onWrite?(write: SecretWrite): void;
  /** Pruning is on: a namespace's orphaned provider Secret was deleted, or its deletion failed (403, 5xx, network). */
  onSecretPruned?(namespace: string, result: 'deleted' | 'failed'): void;
  /** One of our writes was replaced by another controller within a reconcile interval (see WriteConflicts). */
  onWriteConflict?(component: SecretComponent, namespace: string): void;
}
