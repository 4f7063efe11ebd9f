import {
  CertificateCache,
  ConcurrencyLimit,
  type CryptoBackend,
  IssuanceLedger,
  type Instant,
  policyFingerprint,
  type NamespaceRequirement,
  type Policy,
  resolvePolicy,
} from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { CertificateStatusView, informerServices } from './certificate-status.js';
import type { Timers } from './clock.js';
import { ClusterInformers } from './cluster-informers.js';
import { type ClusterConnection, type KubeConfigLike, connectionFromKubeConfig } from './connection.js';
import { EventRecorder, type EventRecorderStats } from './event-recorder.js';
import type { InformerStats } from './informer.js';
import { type Logger, silentLogger } from './logger.js';
import { validateAdapterOptions } from './options.js';
import { DEFAULT_CA_SECRET_NAME, DEFAULT_CLIENT_SECRET_NAME, type WriterStamp, installationId } from './ownership.js';
import type { AdapterHooks } from './adapter-hooks.js';
import { ReconcileRound } from './reconcile-round.js';
import type { RoundResult } from './round-types.js';
import { Reconciler } from './reconciler.js';
import type { RequestCounter } from './request-counter.js';
import { KubeRestClient } from './rest-client.js';
import { SecretWriter } from './secret-writer.js';
import { SnapshotBuilder } from './snapshot-builder.js';
import type { PodCertificateRequest } from './pod-requests.js';
import { type PodCertificateOptions, PodCertificateSigner } from './pod-signer.js';
import { OrphanPruner } from './pruner.js';
import { PodSigningLane } from './signing-lane.js';
import { type ClusterTrustBundle, TrustBundles } from './trust-bundles.js';
import { WriteConflicts } from './write-conflicts.js';
import { WriteRefusals } from './write-refusals.js';
import type { Informer, ObjectWithMeta } from './informer.js';

/** Options of {@link ProviderCertificateAdapter}. */
export interface AdapterOptions {
  /** The apiserver and credentials: see loadKubeconfigFile and loadInClusterConnection. Or give kubeConfig. */
  readonly connection?: ClusterConnection;
  /** A client-node KubeConfig you already hold, instead of `connection`. */
  readonly kubeConfig?: KubeConfigLike;
  /** Overrides of the core's default policy (ESO namespace, cluster domain, lifetimes...). */
  readonly policy?: Partial<Policy>;
  /** Name of the CA Secret in the ESO namespace (default `eso-provider-ca-internal`). */
  readonly caSecretName?: string;
  /** Name of the client Secret in the ESO namespace (default `eso-provider-client-tls`). */
  readonly clientSecretName?: string;
  /** The clock (default Date.now); tests jump it forward instead of sleeping. */
  readonly now?: () => Instant;
  /**
   * Watches, retries and wake-ups, on real elapsed time (default: the process's own timers).
   * Not {@link now}: a test that moves the certificate clock by days moves these by hand, or not at all.
   */
  readonly timers?: Timers;
  /** Key generation and signing (default node:crypto). */
  readonly crypto?: CryptoBackend;
  readonly logger?: Logger;
  /** Fencing: checked before every plan, every issuance and every Secret write; leader election turns it off at once. */
  readonly writesAllowed?: () => boolean;
  /**
   * Fencing of Events (default: writesAllowed), checked when an Event is decided, not again when it
   * is sent. A controller that is stopping still leads until it releases its Lease, so it may report
   * the writes it finished while Secret writes are already fenced.
   */
  readonly eventsAllowed?: () => boolean;
  /** For the metrics view only (default: writesAllowed). */
  readonly isLeader?: () => boolean;
  readonly hooks?: AdapterHooks;
  /** Secret writes (with their issuance) in flight at once (default 16). */
  readonly writeConcurrency?: number;
  /** Event coalescing window (default 100 ms). */
  readonly debounceMs?: number;
  /**
   * Pod-certificate mode: the signer's Events (issuances, coalesced per Service; each failure on
   * its pod) have a recorder and connections of their own, with `concurrency` requests in flight
   * (default 16), and issuances are coalesced over `windowMs` (default 100 ms). docs/benchmarks.md
   * compares settings.
   */
  readonly podEvents?: { readonly concurrency?: number; readonly windowMs?: number };
  /** timeoutSeconds of each watch; unset lets the apiserver choose. */
  readonly watchTimeoutSeconds?: number;
  /** Page size of list calls (default 500). */
  readonly pageSize?: number;
  /**
   * Pod-certificate mode: while pending requests wait beyond the signer's bound, the shortest time
   * between two lists that look for room for them (default 30 s).
   */
  readonly relistForRoomMs?: number;
  /**
   * The most certificates issued per reconcile (default: no bound), most urgent first; the rest
   * follow a second later. Emergency CA rotations are never held back (docs/flood-control.md).
   */
  readonly maxIssuancesPerReconcile?: number;
  /** The most provider namespaces served (default: no cap); the newest beyond it are left out, each with a Warning Event. */
  readonly maxNamespaces?: number;
  /**
   * The label a namespace must carry before its labelled Services are served and its pods get
   * server certificates (default: none). The others' Services get a Warning Event
   * NamespaceNotAllowed. Needs get, list and watch on namespaces (docs/label-policy.md).
   */
  readonly namespaceRequirement?: NamespaceRequirement;
  /**
   * `reportingInstance` of our Events, e.g. the pod name, and the writer identity stamped on every
   * Secret we write (`eso-mtls.io/written-by`; default `<hostname>_<random UUID>`, new per adapter).
   */
  readonly eventInstance?: string;
  /**
   * The Secret mode: provider Secrets in every namespace with a labelled Service (default true).
   * False with {@link podCertificates} set: pod certificates only, and no Secret is read or written
   * outside the ESO namespace.
   */
  readonly secretMode?: boolean;
  /** The pod-certificate mode: sign PodCertificateRequests for these signer names, and publish their ClusterTrustBundles. */
  readonly podCertificates?: PodCertificateOptions;
  /**
   * Opt-in, Secret mode only: delete our provider Secret of a namespace that has had no labelled
   * Service for this many milliseconds (at least 1 hour; default 0, off). Needs RBAC delete on
   * Secrets named external-secrets-provider-tls (deploy/overlays/prune-orphaned-secrets).
   */
  readonly pruneOrphanedSecretsAfter?: number;
}

/** Requests in flight of the pod signer's own Event recorder, by default. */
const POD_EVENT_CONCURRENCY = 16;

/** Connections for the pod signer's Events: their own, so that an Event never takes a status write's. */
const podEventConnections = (options: AdapterOptions): number => (options.podCertificates ? (options.podEvents?.concurrency ?? POD_EVENT_CONCURRENCY) : 0);

/** The Secret and Event fences, defaults applied. */
interface Fences {
  readonly writesAllowed: () => boolean;
  readonly eventsAllowed: () => boolean;
}

/**
 * The Kubernetes adapter of the core: informers on labelled Services and our Secrets, a
 * reconciler that plans with the core and writes Secrets and Events. Create with
 * {@link ProviderCertificateAdapter.create}, then {@link start}.
 */
export class ProviderCertificateAdapter {
  readonly policy: Policy;
  readonly installation: string;
  /** Who this adapter writes as, under which issuing policy: the stamp on every Secret it writes. */
  readonly writer: WriterStamp;
  readonly caSecretName: string;
  readonly clientSecretName: string;
  /** API requests made, by verb and resource. */
  readonly requests: RequestCounter;
  /** The metrics view (a @eso-mtls/metrics ControllerCertificateSource). */
  readonly status: CertificateStatusView;
  /** The caches; read-only for callers. */
  readonly informers: ClusterInformers;
  /** The certificate cache: a steady-state resync parses and verifies nothing again. */
  readonly certificateCache: CertificateCache;
  private readonly reconciler: Reconciler;
  private readonly events: EventRecorder;
  /** Pod-certificate mode: the signer's Events, apart from the rounds' so that a burst of issuances never queues a CA or Secret-mode Event. */
  private readonly podEvents: EventRecorder | undefined;
  /** Pod-certificate mode: the signer (its request informers and the stale-names count); undefined otherwise. */
  readonly podSigner: PodCertificateSigner | undefined;
  private readonly podInformers: readonly Informer<ObjectWithMeta>[];
  private readonly podRequestInformers: readonly Informer<PodCertificateRequest>[];
  private readonly trustBundleInformer: Informer<ClusterTrustBundle> | undefined;
  /** Pod-certificate mode: where pending requests are signed, beside the reconcile rounds. */
  private readonly podLane: PodSigningLane | undefined;
  private readonly pruner: OrphanPruner | undefined;
  private unsubscribe: (() => void) | undefined;

  // Only create() calls this, with the options validated and the fences resolved.
  private constructor(
    private readonly api: KubeRestClient,
    options: AdapterOptions,
    fences: Fences,
  ) {
    this.policy = resolvePolicy(options.policy);
    this.caSecretName = options.caSecretName ?? DEFAULT_CA_SECRET_NAME;
    this.clientSecretName = options.clientSecretName ?? DEFAULT_CLIENT_SECRET_NAME;
    this.installation = installationId(this.policy.esoNamespace, this.caSecretName);
    this.writer = { identity: options.eventInstance ?? `${hostname()}_${randomUUID()}`, policy: policyFingerprint(this.policy) };
    this.requests = api.counter;
    const now = options.now ?? Date.now;
    const logger = options.logger ?? silentLogger;
    const { writesAllowed, eventsAllowed } = fences;
    const crypto = options.crypto ?? createNodeCryptoBackend();
    const secretMode = options.secretMode ?? true;
    const scope = {
      installation: this.installation,
      esoNamespace: this.policy.esoNamespace,
      caSecretName: this.caSecretName,
      clientSecretName: this.clientSecretName,
      providerSecrets: secretMode,
      ...(options.namespaceRequirement ? { namespaceRequirement: options.namespaceRequirement } : {}),
    };
    const tuning = {
      pageSize: options.pageSize,
      watchTimeoutSeconds: options.watchTimeoutSeconds,
      relistForRoomMs: options.relistForRoomMs,
      onError: (e: Error) => logger.warn({ error: e.message }, 'list/watch failed; retrying with backoff'),
      timers: options.timers,
    };
    this.informers = new ClusterInformers(api, scope, tuning);
    const ledger = new IssuanceLedger();
    this.certificateCache = new CertificateCache(crypto.verifier);
    const recorder = (concurrency?: number): EventRecorder =>
      new EventRecorder(api, { now, logger, writesAllowed: eventsAllowed, instance: options.eventInstance, timers: options.timers, concurrency });
    this.events = recorder();
    const podEvents = options.podCertificates ? recorder(podEventConnections(options)) : undefined;
    this.podEvents = podEvents;
    // The pod signer is created below; the view reads it at scrape time.
    this.status = new CertificateStatusView(
      () => informerServices(this.informers.services),
      options.isLeader ?? writesAllowed,
      () => this.podSigner?.staleNamesByNamespace() ?? new Map(),
    );
    const writeLimiter = new ConcurrencyLimit(options.writeConcurrency ?? 16);
    const informerOptions = { watch: api, counter: api.counter, ...tuning };
    // Beside the Secret mode, the signer has half the connections: a backlog of requests never
    // queues ahead of a Secret write (which always finds a connection free), nor the other way
    // round. Alone, it has them all.
    const podConcurrency = secretMode ? Math.max(1, Math.floor((options.writeConcurrency ?? 16) / 2)) : (options.writeConcurrency ?? 16);
    const signer =
      options.podCertificates &&
      podEvents &&
      new PodCertificateSigner(
        {
          api,
          policy: this.policy,
          crypto,
          cache: this.certificateCache,
          events: podEvents,
          logger,
          services: () => this.informers.services.list(),
          ...(options.namespaceRequirement && this.informers.allowedNamespaces
            ? { namespaces: { requirement: options.namespaceRequirement, allowed: this.informers.allowedNamespaces } }
            : {}),
          onRequest: options.hooks?.onPodCertificateRequest?.bind(options.hooks),
          informerOptions,
          timers: options.timers,
          issuanceEventWindowMs: options.podEvents?.windowMs,
        },
        options.podCertificates,
      );
    const lane =
      signer &&
      new PodSigningLane(signer, { now, timers: options.timers, concurrency: podConcurrency, resyncMs: this.policy.reconcileInterval, writesAllowed, logger });
    this.podLane = lane;
    const pods = signer &&
      lane && {
        signer,
        lane,
        trustBundles: new TrustBundles(
          api,
          [signer.options.serverSignerName, signer.options.clientSignerName],
          this.installation,
          this.certificateCache,
          informerOptions,
        ),
        caEventTarget: { namespace: this.policy.esoNamespace, name: this.caSecretName },
      };
    this.podSigner = pods?.signer;
    this.podRequestInformers = pods ? [...pods.signer.requests.values()] : [];
    this.trustBundleInformer = pods?.trustBundles.informer;
    this.podInformers = pods ? ([...this.podRequestInformers, pods.trustBundles.informer] as Informer<ObjectWithMeta>[]) : [];
    this.pruner = options.pruneOrphanedSecretsAfter
      ? new OrphanPruner({
          api,
          installation: this.installation,
          graceMs: options.pruneOrphanedSecretsAfter,
          retryAfterMs: this.policy.reconcileInterval,
          hasLabelledService: (namespace) => [...this.informers.services.list()].some((s) => s.metadata?.namespace === namespace),
          events: this.events,
          logger,
          onPruned: options.hooks?.onSecretPruned?.bind(options.hooks),
        })
      : undefined;
    const round = new ReconcileRound({
      informers: this.informers,
      builder: new SnapshotBuilder(this.informers, scope, ledger),
      writer: new SecretWriter(api, { ...scope, writer: this.writer, writesAllowed }),
      conflicts: new WriteConflicts(this.writer, this.policy.reconcileInterval),
      refusals: new WriteRefusals(),
      events: this.events,
      ledger,
      plan: {
        policy: this.policy,
        podCertificates: options.podCertificates,
        maxIssuancesPerReconcile: options.maxIssuancesPerReconcile,
        maxNamespaces: options.maxNamespaces,
        namespaceRequirement: options.namespaceRequirement,
      },
      cache: this.certificateCache,
      crypto,
      logger,
      hooks: options.hooks ?? {},
      writeLimiter,
      writesAllowed,
      status: this.status,
      ...(this.pruner ? { pruner: this.pruner } : {}),
      ...(pods ? { pods } : {}),
    });
    this.reconciler = new Reconciler(round, {
      now,
      timers: options.timers,
      reconcileIntervalMs: this.policy.reconcileInterval,
      debounceMs: options.debounceMs,
      writesAllowed,
      logger,
    });
  }

  /** Validates the options and connects the API clients; nothing is listed until {@link start}. */
  static async create(options: AdapterOptions): Promise<ProviderCertificateAdapter> {
    validateAdapterOptions(options);
    const connection = options.connection ?? (await connectionFromKubeConfig(options.kubeConfig!));
    const writesAllowed = options.writesAllowed ?? (() => true);
    const eventsAllowed = options.eventsAllowed ?? writesAllowed;
    const api = new KubeRestClient(connection, {
      maxSockets: (options.writeConcurrency ?? 16) + podEventConnections(options),
      // The last check, as each request is sent, for everything but Events: the recorder checks
      // theirs once, when it decides to send one (with the failure it reports, if any), and an
      // Event decided goes out, retries included, even if leadership is lost meanwhile.
      writesAllowed: (resource) => resource === 'events' || writesAllowed(),
    });
    return new ProviderCertificateAdapter(api, options, { writesAllowed, eventsAllowed });
  }

  /** Lists and watches; resolves once every cache has synced, with the first reconcile under way. */
  async start(): Promise<void> {
    if (!this.unsubscribe) {
      // A request event queues that request in the signing lane, not a round: a backlog of requests
      // makes no Secret-mode work. The trust bundles are the rounds' (the CA activation reads them).
      const signer = this.podSigner;
      const lane = this.podLane;
      const off = [
        this.informers.onChange(() => this.reconciler.trigger()),
        ...(signer && lane
          ? [
              ...[...signer.requests].map(([role, informer]) => informer.onChange((e) => e.type !== 'DELETED' && lane.enqueue(role, e.object))),
              this.informers.services.onChange((e) => signer.servicesChanged(e.object.metadata?.namespace ?? '')),
            ]
          : []),
        ...(this.trustBundleInformer ? [this.trustBundleInformer.onChange(() => this.reconciler.trigger())] : []),
      ];
      // Leader or not: a Service event while another replica leads still restarts the orphan time.
      const pruner = this.pruner;
      if (pruner) off.push(this.informers.services.onChange((e) => pruner.serviceChanged(e.object.metadata?.namespace ?? '')));
      this.unsubscribe = () => off.forEach((f) => f());
    }
    for (const i of this.podInformers) i.start();
    await Promise.all([this.informers.start(), ...this.podInformers.map((i) => i.synced)]);
    this.podLane?.start();
    this.reconciler.start();
  }

  /** Stops reconciling (finishing the round in flight), the watches, and Event delivery. */
  async stop(): Promise<void> {
    await this.reconciler.stop();
    await this.podLane?.stop();
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    await Promise.all([this.informers.stop(), ...this.podInformers.map((i) => i.stop()), this.podSigner?.stop()]);
    await this.podSigner?.settled();
    // Not flush(): Events waiting to be retried (the apiserver down) are given up, not waited for.
    await Promise.all([this.events.stop(), this.podEvents?.stop()]);
    this.api.close();
  }

  /** True once every cache has listed once (for a readiness probe). */
  get hasSynced(): boolean {
    return this.informers.hasSynced && this.podInformers.every((i) => i.hasSynced);
  }

  /**
   * Asks for a reconcile soon, e.g. after this replica became the leader. Pod signing waits for
   * that reconcile's CA: another leader may have replaced the one this replica last saw.
   */
  requestReconcile(): void {
    this.podLane?.forget();
    this.reconciler.trigger();
  }

  /** Pod-certificate mode: resolves once the signing lane has no request queued, being decided or due for a retry (tests, benchmarks). */
  podSigningIdle(): Promise<void> {
    return this.podLane?.whenIdle() ?? Promise.resolve();
  }

  /** Runs one reconcile now (after any in flight); undefined when writes are not allowed. */
  reconcileNow(): Promise<RoundResult | undefined> {
    return this.reconciler.reconcileNow();
  }

  /** Resolves after the next reconcile that found nothing to write. */
  whenSettled(): Promise<void> {
    return this.reconciler.whenSettled();
  }

  /** The last reconcile's result. */
  get lastRound(): RoundResult | undefined {
    return this.reconciler.last;
  }

  /** Reconciles run so far. */
  get rounds(): number {
    return this.reconciler.rounds;
  }

  /** What the informers did (lists, watches, bookmarks, 410s, errors). */
  informerStats(): InformerStats {
    return this.informers.stats();
  }

  /** Events created, patched, folded and failed (the pod signer's included). */
  get eventStats(): EventRecorderStats {
    const pods = this.podEvents?.stats;
    if (!pods) return this.events.stats;
    const sum = { ...this.events.stats };
    for (const k of Object.keys(sum) as (keyof EventRecorderStats)[]) sum[k] += pods[k];
    return sum;
  }

  /** Resolves when queued Events have been sent (the pod signer's included). */
  async flushEvents(): Promise<void> {
    await Promise.all([this.events.flush(), this.podEvents?.flush()]);
  }

  /**
   * Pod-certificate mode: resolves once the signer's Events so far are sent, the issuances it is
   * still coalescing included, as the last request finishes (benchmarks time the trail with it).
   */
  async podEventsSent(): Promise<void> {
    await this.podSigner?.issuanceEventsSent();
    await this.podEvents?.flush();
  }
}
