import { CertificateCache, type CryptoBackend, type Instant } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { connectionFromKubeConfig } from './client/connection.js';
import type { RequestCounter } from './client/request-counter.js';
import { KubeRestClient } from './client/rest-client.js';
import type { EventRecorderStats } from './events/event-recorder.js';
import { ClusterInformers } from './informers/cluster-informers.js';
import type { InformerOptions, InformerStats } from './informers/informer.js';
import { type Installation, installationOf } from './installation/installation.js';
import { type AdapterOptions, validateAdapterOptions } from './options.js';
import { PodCertificateMode } from './pod-certificates/pod-certificate-mode.js';
import type { PodCertificateSigner } from './pod-certificates/pod-signer.js';
import type { CertificateStatusView } from './rounds/certificate-status.js';
import type { RoundResult } from './rounds/round.js';
import { SecretRounds } from './rounds/secret-rounds.js';
import { UpstreamMode } from './upstream/upstream-mode.js';
import type { Timers } from './runtime/clock.js';
import { type Logger, silentLogger } from './runtime/logger.js';

/** Secret writes in flight at once, by default. */
const WRITE_CONCURRENCY = 16;
/** Requests in flight of the pod signer's own Event recorder, by default. */
const POD_EVENT_CONCURRENCY = 16;

/** Connections for the pod signer's Events: their own, so that an Event never takes a status write's. */
const podEventConnections = (options: AdapterOptions): number => (options.podCertificates ? (options.podEvents?.concurrency ?? POD_EVENT_CONCURRENCY) : 0);

/**
 * Pod requests decided at once. Beside the Secret mode, the signer has half the connections: a
 * backlog of requests never queues ahead of a Secret write (which always finds a connection free),
 * nor the other way round. Alone, it has them all.
 */
const podConcurrency = (installation: Installation, writeConcurrency: number): number =>
  installation.secretMode ? Math.max(1, Math.floor(writeConcurrency / 2)) : writeConcurrency;

/** What both modes are built from: the options with their defaults, and the parts they share. */
interface SharedParts {
  readonly api: KubeRestClient;
  readonly installation: Installation;
  readonly informers: ClusterInformers;
  readonly informerOptions: InformerOptions;
  readonly cache: CertificateCache;
  readonly crypto: CryptoBackend;
  readonly now: () => Instant;
  readonly timers: Timers | undefined;
  readonly logger: Logger;
  readonly writesAllowed: () => boolean;
  readonly eventsAllowed: () => boolean;
  readonly eventInstance: string | undefined;
}

/** The Secret and Event fences, defaults applied. */
interface Fences {
  readonly writesAllowed: () => boolean;
  readonly eventsAllowed: () => boolean;
}

/**
 * The Kubernetes adapter of the core: informers on labelled Services and our Secrets, a
 * reconciler that plans with the core and writes Secrets and Events, and, when that mode is on,
 * the pod-certificate mode beside it. Create with {@link ProviderCertificateAdapter.create}, then
 * {@link start}.
 */
export class ProviderCertificateAdapter {
  /** Which Secrets are this adapter's and where, who it writes as, its modes and bounds. */
  readonly installation: Installation;
  /** API requests made, by verb and resource. */
  readonly requests: RequestCounter;
  /** The metrics view (a @eso-mtls/metrics ControllerCertificateSource). */
  readonly status: CertificateStatusView;
  /** The caches; read-only for callers. */
  readonly informers: ClusterInformers;
  /** Pod-certificate mode: the signer (its request informers and the stale-names count); undefined otherwise. */
  readonly podSigner: PodCertificateSigner | undefined;
  private readonly secrets: SecretRounds;
  private readonly pods: PodCertificateMode | undefined;
  private readonly upstream: UpstreamMode | undefined;
  private unsubscribe: (() => void) | undefined;

  // Only create() calls this, with the options validated and the fences resolved.
  private constructor(
    private readonly api: KubeRestClient,
    options: AdapterOptions,
    fences: Fences,
  ) {
    this.installation = installationOf(options, options.eventInstance ?? `${hostname()}_${randomUUID()}`);
    this.requests = api.counter;
    const logger = options.logger ?? silentLogger;
    const tuning = {
      pageSize: options.pageSize,
      watchTimeoutSeconds: options.watchTimeoutSeconds,
      relistForRoomMs: options.relistForRoomMs,
      unservedRelistMs: options.unservedRelistMs,
      onError: (e: Error) => logger.warn({ error: e.message }, 'list/watch failed; retrying with backoff'),
      timers: options.timers,
    };
    this.informers = new ClusterInformers(api, this.installation, tuning);
    const crypto = options.crypto ?? createNodeCryptoBackend();
    const shared: SharedParts = {
      ...fences,
      api,
      installation: this.installation,
      informers: this.informers,
      informerOptions: { watch: api, counter: api.counter, ...tuning },
      cache: new CertificateCache(crypto.verifier),
      crypto,
      now: options.now ?? Date.now,
      timers: options.timers,
      logger,
      eventInstance: options.eventInstance,
    };
    this.pods = podCertificateMode(shared, options);
    this.podSigner = this.pods?.signer;
    this.upstream = UpstreamMode.of({ ...shared, onFailure: () => options.hooks?.onCaRotationFailure?.() });
    this.secrets = secretRounds(shared, options, this.pods, this.upstream);
    this.status = this.secrets.status;
  }

  /** Validates the options and connects the API clients; nothing is listed until {@link start}. */
  static async create(options: AdapterOptions): Promise<ProviderCertificateAdapter> {
    validateAdapterOptions(options);
    const connection = options.connection ?? (await connectionFromKubeConfig(options.kubeConfig!));
    const writesAllowed = options.writesAllowed ?? (() => true);
    const eventsAllowed = options.eventsAllowed ?? writesAllowed;
    const api = new KubeRestClient(connection, {
      maxSockets: (options.writeConcurrency ?? WRITE_CONCURRENCY) + podEventConnections(options),
      // The last check, as each request is sent, for everything but Events: the recorder checks
      // theirs once, when it decides to send one (with the failure it reports, if any), and an
      // Event decided goes out, retries included, even if leadership is lost meanwhile.
      writesAllowed: (resource) => resource === 'events' || writesAllowed(),
    });
    return new ProviderCertificateAdapter(api, options, { writesAllowed, eventsAllowed });
  }

  /** Lists and watches; resolves once every cache has synced, with the first reconcile under way. */
  async start(): Promise<void> {
    const { secrets, pods, upstream } = this;
    if (!this.unsubscribe) {
      const trigger = (): void => secrets.reconciler.trigger();
      const off = [
        secrets.subscribe(this.informers),
        ...(pods ? [pods.subscribe(trigger, this.informers.services)] : []),
        ...(upstream ? [upstream.subscribe(trigger)] : []),
      ];
      this.unsubscribe = () => off.forEach((f) => f());
    }
    await Promise.all([pods?.start(), upstream?.start(), this.informers.start()]);
    pods?.startSigning();
    secrets.reconciler.start();
  }

  /** Stops reconciling (finishing the round in flight), the watches, and Event delivery. */
  async stop(): Promise<void> {
    await this.secrets.reconciler.stop();
    await this.pods?.stopSigning();
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    // Not flush(): Events waiting to be retried (the apiserver down) are given up, not waited for.
    await Promise.all([this.informers.stop().then(() => this.secrets.events.stop()), this.pods?.stop(), this.upstream?.stop()]);
    this.api.close();
  }

  /** True once every cache has listed once (for a readiness probe). */
  get hasSynced(): boolean {
    return this.informers.hasSynced && (this.pods?.hasSynced ?? true) && (this.upstream?.hasSynced ?? true);
  }

  /**
   * Asks for a reconcile soon, e.g. after this replica became the leader. Pod signing waits for
   * that reconcile's CA: another leader may have replaced the one this replica last saw.
   */
  requestReconcile(): void {
    this.pods?.forgetCa();
    this.secrets.reconciler.trigger();
  }

  /** Pod-certificate mode: resolves once the signing lane has no request queued, being decided or due for a retry (tests, benchmarks). */
  podSigningIdle(): Promise<void> {
    return this.pods?.whenIdle() ?? Promise.resolve();
  }

  /** Runs one reconcile now (after any in flight); undefined when writes are not allowed. */
  reconcileNow(): Promise<RoundResult | undefined> {
    return this.secrets.reconciler.reconcileNow();
  }

  /** Resolves after the next reconcile that found nothing to write. */
  whenSettled(): Promise<void> {
    return this.secrets.reconciler.whenSettled();
  }

  /** The last reconcile's result. */
  get lastRound(): RoundResult | undefined {
    return this.secrets.reconciler.last;
  }

  /** Reconciles run so far. */
  get rounds(): number {
    return this.secrets.reconciler.rounds;
  }

  /** What the informers did (lists, watches, bookmarks, 410s, errors). */
  informerStats(): InformerStats {
    return this.informers.stats();
  }

  /** Events created, patched, folded and failed (the pod signer's included). */
  get eventStats(): EventRecorderStats {
    const pods = this.pods?.eventStats;
    if (!pods) return this.secrets.events.stats;
    const sum = { ...this.secrets.events.stats };
    for (const k of Object.keys(sum) as (keyof EventRecorderStats)[]) sum[k] += pods[k];
    return sum;
  }

  /** Resolves when queued Events have been sent (the pod signer's included). */
  async flushEvents(): Promise<void> {
    await Promise.all([this.secrets.events.flush(), this.pods?.events.flush()]);
  }

  /**
   * Pod-certificate mode: resolves once the signer's Events so far are sent, the issuances it is
   * still coalescing included, as the last request finishes (benchmarks time the trail with it).
   */
  async podEventsSent(): Promise<void> {
    await this.pods?.eventsSent();
  }
}

/** The pod-certificate mode, when the installation runs it. */
function podCertificateMode(shared: SharedParts, options: AdapterOptions): PodCertificateMode | undefined {
  const { installation } = shared;
  const pods = installation.podCertificates;
  if (!pods) return undefined;
  return new PodCertificateMode({
    ...shared,
    installation: { ...installation, podCertificates: pods },
    onRequest: options.hooks?.onPodCertificateRequest?.bind(options.hooks),
    concurrency: podConcurrency(installation, options.writeConcurrency ?? WRITE_CONCURRENCY),
    events: { concurrency: podEventConnections(options), windowMs: options.podEvents?.windowMs },
  });
}

/** The Secret rounds, telling `pods` (when on) of each CA, planning with `upstream` (when configured). */
function secretRounds(shared: SharedParts, options: AdapterOptions, pods: PodCertificateMode | undefined, upstream: UpstreamMode | undefined): SecretRounds {
  return new SecretRounds({
    ...shared,
    hooks: options.hooks ?? {},
    isLeader: options.isLeader ?? shared.writesAllowed,
    writeConcurrency: options.writeConcurrency ?? WRITE_CONCURRENCY,
    debounceMs: options.debounceMs,
    pruneOrphanedSecretsAfter: options.pruneOrphanedSecretsAfter,
    caFollower: pods,
    staleNames: () => pods?.signer.staleNamesByNamespace() ?? new Map(),
    ...(upstream ? { upstream: (parts) => upstream.connect(parts) } : {}),
  });
}
