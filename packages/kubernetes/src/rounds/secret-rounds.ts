import { type CertificateCache, ConcurrencyLimit, type CryptoBackend, type Instant, IssuanceLedger } from '@eso-mtls/core';
import type { KubeRestClient } from '../client/rest-client.js';
import { EventRecorder } from '../events/event-recorder.js';
import type { ClusterInformers } from '../informers/cluster-informers.js';
import type { Installation } from '../installation/installation.js';
import type { Timers } from '../runtime/clock.js';
import type { Logger } from '../runtime/logger.js';
import type { CaFollower } from './ca-follower.js';
import type { CaUpstream } from './ca-upstream.js';
import { CertificateStatusView, informerServices } from './certificate-status.js';
import { OrphanPruner } from './pruner.js';
import { ReconcileRound } from './reconcile-round.js';
import { Reconciler } from './reconciler.js';
import type { RoundHooks } from './round.js';
import { SecretWriter } from './secret-writer.js';
import { SnapshotBuilder } from './snapshot-builder.js';
import { WriteConflicts } from './write-conflicts.js';
import { WriteRefusals } from './write-refusals.js';

/** What the Secret rounds are built from: the adapter's shared parts, and their own tuning. */
export interface SecretRoundsDependencies {
  readonly api: KubeRestClient;
  readonly installation: Installation;
  readonly informers: ClusterInformers;
  readonly cache: CertificateCache;
  readonly crypto: CryptoBackend;
  readonly now: () => Instant;
  readonly timers: Timers | undefined;
  readonly logger: Logger;
  readonly hooks: RoundHooks;
  /** The Secret fence. */
  readonly writesAllowed: () => boolean;
  /** The Event fence, decided as each Event is. */
  readonly eventsAllowed: () => boolean;
  /** Whether this replica leads, for the metrics view. */
  readonly isLeader: () => boolean;
  readonly eventInstance: string | undefined;
  /** Secret writes (with their issuance) in flight at once. */
  readonly writeConcurrency: number;
  readonly debounceMs: number | undefined;
  /** Opt-in: the grace before an orphaned provider Secret is deleted; 0 or undefined is off. */
  readonly pruneOrphanedSecretsAfter: number | undefined;
  /** The pod-certificate mode, when on: told of each CA. */
  readonly caFollower: CaFollower | undefined;
  /** Per namespace, pods whose certificate names no longer match, for the metrics view (read at scrape time). */
  readonly staleNames: () => ReadonlyMap<string, number>;
  /** An upstream CA source, when one is configured: connected to the rounds' writer and Events. */
  readonly upstream?: (parts: { readonly writer: SecretWriter; readonly events: EventRecorder }) => CaUpstream;
}

/**
 * The Secret rounds: the reconciler and the round it runs (snapshot, plan, writes, pruning), the
 * metrics view the plans feed, and the Events they record. A CA follower is told of each CA.
 */
export class SecretRounds {
  readonly status: CertificateStatusView;
  readonly events: EventRecorder;
  readonly reconciler: Reconciler;
  private readonly pruner: OrphanPruner | undefined;

  constructor(deps: SecretRoundsDependencies) {
    const { api, installation, informers, now, timers, logger, writesAllowed, caFollower } = deps;
    const { policy, writer } = installation;
    this.events = new EventRecorder(api, { now, logger, writesAllowed: deps.eventsAllowed, instance: deps.eventInstance, timers });
    this.status = new CertificateStatusView(() => informerServices(informers.services), deps.isLeader, deps.staleNames);
    this.pruner = deps.pruneOrphanedSecretsAfter
      ? new OrphanPruner({
          api,
          installation: installation.id,
          graceMs: deps.pruneOrphanedSecretsAfter,
          retryAfterMs: policy.reconcileInterval,
          hasLabelledService: (namespace) => [...informers.services.list()].some((s) => s.metadata?.namespace === namespace),
          events: this.events,
          logger,
          onPruned: deps.hooks.onSecretPruned?.bind(deps.hooks),
        })
      : undefined;
    const ledger = new IssuanceLedger();
    const secretWriter = new SecretWriter(api, installation, writesAllowed);
    const upstream = deps.upstream?.({ writer: secretWriter, events: this.events });
    const round = new ReconcileRound({
      installation,
      informers,
      builder: new SnapshotBuilder(informers, installation, ledger),
      writer: secretWriter,
      conflicts: new WriteConflicts(writer, policy.reconcileInterval),
      refusals: new WriteRefusals(),
      events: this.events,
      ledger,
      cache: deps.cache,
      crypto: deps.crypto,
      logger,
      hooks: deps.hooks,
      writeLimiter: new ConcurrencyLimit(deps.writeConcurrency),
      writesAllowed,
      status: this.status,
      ...(this.pruner ? { pruner: this.pruner } : {}),
      ...(caFollower ? { caFollower } : {}),
      ...(upstream ? { upstream } : {}),
    });
    this.reconciler = new Reconciler(round, { now, timers, reconcileIntervalMs: policy.reconcileInterval, debounceMs: deps.debounceMs, writesAllowed, logger });
  }

  /**
   * Reconciles on every change of the caches. The pruner hears of every Service event, leader or
   * not: a Service event while another replica leads still restarts the orphan time.
   */
  subscribe(informers: ClusterInformers): () => void {
    const off = [informers.onChange(() => this.reconciler.trigger())];
    const pruner = this.pruner;
    if (pruner) off.push(informers.services.onChange((e) => pruner.serviceChanged(e.object.metadata?.namespace ?? '')));
    return () => off.forEach((f) => f());
  }
}
