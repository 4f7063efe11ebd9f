import {
  type CertificateCache,
  type ConcurrencyLimit,
  type IssuanceLedger,
  type CryptoBackend,
  type Instant,
  type MaterializedCa,
  type Plan,
  type RotationReason,
  type SecretWrite,
  isPlanEmpty,
  planRotation,
} from '@eso-mtls/core';
import type { CertificateStatusView } from './certificate-status.js';
import type { ClusterInformers } from './cluster-informers.js';
import type { EventRecorder } from './event-recorder.js';
import type { Logger } from './logger.js';
import type { PodCertificateSigner } from './pod-signer.js';
import type { OrphanPruner } from './pruner.js';
import { type PlanConfiguration, planContext } from './plan-context.js';
import { RoundWrites } from './round-writes.js';
import type { SecretComponent } from './ownership.js';
import type { SecretWriter } from './secret-writer.js';
import { ServiceDirectory } from './service-directory.js';
import type { PodSigningLane } from './signing-lane.js';
import type { BuiltSnapshot, SnapshotBuilder } from './snapshot-builder.js';
import { StandingReports } from './standing-reports.js';
import { StateReporter } from './state-reporter.js';
import type { TrustBundles } from './trust-bundles.js';
import type { WriteConflict, WriteConflicts } from './write-conflicts.js';

/** Callbacks for metrics and tests; each must be cheap and must not throw. */
export interface AdapterHooks {
  /** A namespace's server certificate was issued and written (one call per issuance). */
  onRotation?(namespace: string, services: readonly string[], reason: RotationReason): void;
  /**
   * A namespace's server certificate could not be issued (key generation, signing) or written, its
   * trust bundle could not be written, or its Secret is in conflict.
   */
  onRotationFailure?(namespace: string, services: readonly string[]): void;
  /** A CA could not be generated or signed, the CA Secret could not be written, or a ClusterTrustBundle could not. */
  onCaRotationFailure?(): void;
  /** A PodCertificateRequest was decided (pod-certificate mode), or its status could not be written (`failed`, `StatusWriteFailed`). */
  onPodCertificateRequest?(signer: 'server' | 'client', result: 'issued' | 'denied' | 'failed', reason: string, namespace: string): void;
  /** Every Secret write that succeeded: CA, client, server leaves and bundle updates. */
  onWrite?(write: SecretWrite): void;
  /** Pruning is on: a namespace's orphaned provider Secret was deleted, or its deletion failed (403, 5xx, network). */
  onSecretPruned?(namespace: string, result: 'deleted' | 'failed'): void;
  /** One of our writes was replaced by another controller within a reconcile interval (see WriteConflicts). */
  onWriteConflict?(component: SecretComponent, namespace: string): void;
}

/**
 * A round that wrote nothing and failed does not plan its deferred leaves again a second later
 * (the plan's nextDueAt): it retries with the reconciler's backoff, like any failed round, so a
 * failing apiserver or signer is not asked for up to a bound's worth of keys every second.
 */
function withoutEagerRetry(result: RoundResult): RoundResult {
  const failedOnly = result.written === 0 && result.failed + result.stale + result.fenced > 0;
  return failedOnly && result.plan.deferred.length > 0 ? { ...result, plan: { ...result.plan, nextDueAt: undefined } } : result;
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
  /** The policy, bounds, namespace requirement and modes every plan is made under (see planContext). */
  readonly plan: PlanConfiguration;
  readonly cache: CertificateCache;
  readonly crypto: CryptoBackend;
  readonly logger: Logger;
  readonly hooks: AdapterHooks;
  readonly writeLimiter: ConcurrencyLimit;
  /** The Secret fence: checked again before each key is generated, so a closing fence wastes no keygen. */
  readonly writesAllowed: () => boolean;
  /** The metrics view: given each plan as it is made, then the CA and each leaf as its write lands. */
  readonly status?: CertificateStatusView;
  /** Pruning of orphaned provider Secrets (opt-in); runs after the writes, on the round's snapshot. */
  readonly pruner?: OrphanPruner;
  /** Our writes another controller replaced: reported here, and held by {@link RoundWrites}. */
  readonly conflicts?: WriteConflicts;
  /**
   * Pod-certificate mode: the signer of both signer names, the lane it signs in (beside the
   * rounds), and their ClusterTrustBundles.
   */
  readonly pods?: {
    readonly signer: PodCertificateSigner;
    readonly lane: PodSigningLane;
    readonly trustBundles: TrustBundles;
    readonly caEventTarget: { namespace: string; name: string };
  };
}

/**
 * One reconcile: snapshot the caches, plan, report what stands (conflicts, waiting leaves,
 * refusals), then write (see {@link RoundWrites}: the CA first, then leaves and bundles). A write
 * whose Secret moved on re-reads that Secret into the cache and counts as stale, so the caller
 * plans again; nothing signed by an unwritten CA is ever written.
 */
export class ReconcileRound {
  private readonly reports: StandingReports;
  // When each trust bundle's problem was last reported (pod-certificate mode).
  private readonly bundleReports = new Map<string, Instant>();
  // Namespaces being deleted refuse every write of every round: logged once, when first seen.
  private readonly terminating = new StateReporter();

  constructor(private readonly deps: RoundDependencies) {
    this.reports = new StandingReports(deps.logger, deps.events, deps.hooks, deps.plan.policy.reconcileInterval);
  }

  /** Plans at `clock()` and writes; each write is issued and stamped at the clock's time of writing. */
  async run(clock: () => Instant): Promise<RoundResult> {
    const built = this.deps.builder.build();
    for (const conflict of this.deps.conflicts?.observe(built.secrets, clock()) ?? []) this.reportConflict(conflict);
    const result = await this.planAndWrite(built, clock);
    // The namespaces the plan leaves alone (no labelled Service) are the pruner's, from the same snapshot.
    await this.deps.pruner?.prune(built, clock(), this.deps.writesAllowed);
    return result;
  }

  private async planAndWrite(built: BuiltSnapshot, clock: () => Instant): Promise<RoundResult> {
    const { cache, pods } = this.deps;
    const now = clock();
    const snapshot = pods ? { ...built.snapshot, trustBundles: pods.trustBundles.observed() } : built.snapshot;
    const plan = planRotation(snapshot, planContext(this.deps.plan, now, cache));
    this.deps.status?.update(plan);
    const services = new ServiceDirectory(built.services);
    this.reports.report(plan, now, services);
    // With pod certificates, or a CA key held by a caSigner (an HSM), an empty plan still reads the
    // CA it signs with, through the same accounting as a CA write: a token that stopped answering,
    // a wrong PIN or a deleted key is seen at the next reconcile (every reconcile interval at the
    // latest), not weeks later when a leaf next falls due.
    if (isPlanEmpty(plan) && !pods && !this.deps.crypto.caSigner) {
      this.reportTerminating(new Map(), now);
      return { plan, written: 0, stale: 0, failed: 0, fenced: 0 };
    }
    // No pod certificate is signed by a CA a write replaces: the lane gives the CA back first, and
    // its signatures in flight (at most its concurrency) are written before the CA write is sent.
    if (pods && plan.ca) await pods.lane.withdraw();
    const writes = new RoundWrites(this.deps, built, plan, services, clock);
    const result = withoutEagerRetry(await writes.run());
    this.reportTerminating(writes.terminating, now);
    // Pods are signed only by a CA that is stored: after the CA write landed, or when there was none.
    return pods && writes.signing ? this.handOver(result, writes.signing, clock) : result;
  }

  /**
   * One info line when a namespace first refuses a write because it is being deleted. Its writes
   * are tried again in later rounds without a word, and succeed if it comes back (created anew).
   */
  private reportTerminating(namespaces: ReadonlyMap<string, string>, now: Instant): void {
    const { report } = this.terminating.track(
      [...namespaces],
      ([namespace]) => namespace,
      () => '',
      now,
    );
    for (const [namespace, error] of report) {
      this.deps.logger.info({ namespace, error }, 'namespace is being deleted: nothing new is written in it (not a failure)');
    }
  }

  /** One log line, one count and one Warning Event on the Secret, per replaced write (so at most one per Secret and interval). */
  private reportConflict(c: WriteConflict): void {
    const { writer, logger, events, hooks, conflicts } = this.deps;
    const where = writer.locate(c.target);
    const ours = conflicts!.stamp;
    const secret = `${where.namespace}/${where.name}`;
    const afterSeconds = Math.max(0, Math.round((c.holdUntil - this.deps.plan.policy.reconcileInterval - c.ourWriteAt) / 1000));
    const samePolicy = c.writer.policy === ours.policy;
    hooks.onWriteConflict?.(where.component, where.namespace);
    logger.warn(
      {
        secret,
        namespace: where.namespace,
        writer: c.writer.identity,
        writerPolicy: c.writer.policy ?? null,
        identity: ours.identity,
        policy: ours.policy,
        holdUntil: new Date(c.holdUntil).toISOString(),
      },
      'another controller replaced a Secret this controller wrote: two controllers write this installation; this one leaves the Secret alone for one reconcile interval',
    );
    const text =
      `Secret ${secret}, written by ${ours.identity} (policy ${ours.policy}), was replaced within ${afterSeconds}s by ${c.writer.identity} ` +
      `(policy ${c.writer.policy ?? 'unknown'}${samePolicy ? ', the same' : ', a different one'}): two controllers write this installation's Secrets. ` +
      `${ours.identity} leaves it alone until ${new Date(c.holdUntil).toISOString()}. Stop one of them (docs/operations.md#esosecretwriteconflict).`;
    events.record({ kind: 'Secret', namespace: where.namespace, name: where.name, uid: c.secret.metadata?.uid }, 'Warning', 'WriteConflict', text);
  }

  /**
   * Pod-certificate mode, after the Secret writes: the trust bundles follow the CA, then the CA goes
   * to the signing lane, which decides pending requests beside the rounds (the round does not wait).
   */
  private async handOver(result: RoundResult, ca: MaterializedCa, clock: () => Instant): Promise<RoundResult> {
    const { pods, logger, hooks, events, writesAllowed } = this.deps;
    if (!pods || !writesAllowed()) return result;
    const now = clock();
    const published = await pods.trustBundles.publish(ca, now);
    // Every failed write counts; a standing conflict once per reconcile interval, like the Secrets'.
    // Either is logged and recorded at most once per interval and bundle, so nothing floods.
    published.failed.forEach(() => hooks.onCaRotationFailure?.());
    for (const f of [...published.failed, ...published.conflicts]) {
      const last = this.bundleReports.get(f.name);
      if (last !== undefined && now - last < this.deps.plan.policy.reconcileInterval) continue;
      this.bundleReports.set(f.name, now);
      const conflict = published.conflicts.includes(f);
      if (conflict) hooks.onCaRotationFailure?.();
      logger.warn({ trustBundle: f.name, error: f.message }, conflict ? `trust bundle conflict: ${f.message}` : 'publishing a trust bundle failed; retrying');
      events.record({ kind: 'Secret', ...pods.caEventTarget }, 'Warning', conflict ? 'Conflict' : 'Failed', f.message);
    }
    pods.lane.use(ca);
    return { ...result, written: result.written + published.written, failed: result.failed + published.failed.length };
  }
}
