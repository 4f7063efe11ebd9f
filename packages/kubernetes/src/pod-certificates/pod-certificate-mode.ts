import type { CertificateCache, CryptoBackend, Instant, MaterializedCa, ObservedBundle } from '@eso-mtls/core';
import type { KubeRestClient } from '../client/rest-client.js';
import { EventRecorder, type EventRecorderStats } from '../events/event-recorder.js';
import type { ClusterInformers } from '../informers/cluster-informers.js';
import type { Informer, InformerOptions, ObjectWithMeta } from '../informers/informer.js';
import type { Installation, PodCertificateOptions } from '../installation/installation.js';
import type { CaFollower, PublishResult } from '../rounds/ca-follower.js';
import type { Timers } from '../runtime/clock.js';
import type { Logger } from '../runtime/logger.js';
import { PodCertificateSigner, type PodRequestHook } from './pod-signer.js';
import { PodSigningLane } from './pod-signing-lane.js';
import { TrustBundles } from './trust-bundles.js';

/** What the pod-certificate mode is built from: the adapter's shared parts, and its own tuning. */
export interface PodCertificateModeDependencies {
  readonly api: KubeRestClient;
  /** The installation, with the pod-certificate mode on. */
  readonly installation: Installation & { readonly podCertificates: PodCertificateOptions };
  /** The rounds' caches: the labelled Services, and the namespaces carrying a required label. */
  readonly informers: ClusterInformers;
  readonly informerOptions: InformerOptions;
  readonly cache: CertificateCache;
  readonly crypto: CryptoBackend;
  readonly now: () => Instant;
  readonly timers: Timers | undefined;
  readonly logger: Logger;
  /** The Secret fence: a replica that does not lead signs nothing. */
  readonly writesAllowed: () => boolean;
  /** The Event fence, decided as each Event is. */
  readonly eventsAllowed: () => boolean;
  readonly eventInstance: string | undefined;
  readonly onRequest: PodRequestHook | undefined;
  /** Requests decided at once. */
  readonly concurrency: number;
  /** The signer's Events: requests in flight on connections of their own, and the issuances' coalescing window. */
  readonly events: { readonly concurrency: number; readonly windowMs: number | undefined };
}

/**
 * The pod-certificate mode: the signer of both signer names and its request caches, the lane it
 * signs in beside the rounds, and their ClusterTrustBundles. The rounds tell it of the CA through
 * {@link CaFollower} alone; its Events have a recorder of their own, so that a burst of issuances
 * never queues a CA or Secret-mode Event.
 */
export class PodCertificateMode implements CaFollower {
  /** The signer: its request caches, pod reads, stage times and the stale-names count. */
  readonly signer: PodCertificateSigner;
  readonly events: EventRecorder;
  private readonly lane: PodSigningLane;
  private readonly trustBundles: TrustBundles;
  private readonly caches: readonly Informer<ObjectWithMeta>[];

  constructor(deps: PodCertificateModeDependencies) {
    const { api, installation, informers, timers, logger, now } = deps;
    const options = installation.podCertificates;
    this.events = new EventRecorder(api, {
      now,
      logger,
      writesAllowed: deps.eventsAllowed,
      instance: deps.eventInstance,
      timers,
      concurrency: deps.events.concurrency,
    });
    const requirement = installation.namespaceRequirement;
    const allowed = informers.allowedNamespaces;
    this.signer = new PodCertificateSigner(
      {
        api,
        policy: installation.policy,
        crypto: deps.crypto,
        cache: deps.cache,
        events: this.events,
        logger,
        services: () => informers.services.list(),
        ...(requirement && allowed ? { namespaces: { requirement, allowed } } : {}),
        onRequest: deps.onRequest,
        informerOptions: deps.informerOptions,
        timers,
        issuanceEventWindowMs: deps.events.windowMs,
      },
      options,
    );
    const resyncMs = installation.policy.reconcileInterval;
    this.lane = new PodSigningLane(this.signer, { now, timers, concurrency: deps.concurrency, resyncMs, writesAllowed: deps.writesAllowed, logger });
    const signerNames = [options.serverSignerName, options.clientSignerName];
    this.trustBundles = new TrustBundles(api, signerNames, installation.id, deps.cache, deps.informerOptions);
    this.caches = [...this.signer.requests.values(), this.trustBundles.informer] as Informer<ObjectWithMeta>[];
  }

  observedBundles(): ObservedBundle[] {
    return this.trustBundles.observed();
  }

  withdraw(): Promise<void> {
    return this.lane.withdraw();
  }

  publish(ca: MaterializedCa, now: Instant): Promise<PublishResult> {
    return this.trustBundles.publish(ca, now);
  }

  use(ca: MaterializedCa): void {
    this.lane.use(ca);
  }

  /**
   * A request event queues that request in the signing lane, not a round: a backlog of requests
   * makes no Secret-mode work. A change of the trust bundles calls `bundlesChanged`: they are the
   * rounds' (the CA activation reads them).
   */
  subscribe(bundlesChanged: () => void, services: ClusterInformers['services']): () => void {
    const off = [
      ...[...this.signer.requests].map(([role, informer]) => informer.onChange((e) => e.type !== 'DELETED' && this.lane.enqueue(role, e.object))),
      services.onChange((e) => this.signer.servicesChanged(e.object.metadata?.namespace ?? '')),
      this.trustBundles.informer.onChange(bundlesChanged),
    ];
    return () => off.forEach((f) => f());
  }

  /** Starts the request and trust bundle caches; resolves once each has listed once. */
  async start(): Promise<void> {
    for (const i of this.caches) i.start();
    await Promise.all(this.caches.map((i) => i.synced));
  }

  /** Starts signing; nothing is signed before a round hands over a CA. */
  startSigning(): void {
    this.lane.start();
  }

  /** Stops signing, and waits for the requests in flight. */
  stopSigning(): Promise<void> {
    return this.lane.stop();
  }

  /** Stops the caches and the signer; Events waiting to be retried are given up. */
  async stop(): Promise<void> {
    await Promise.all([...this.caches.map((i) => i.stop()), this.signer.stop()]);
    await this.signer.settled();
    await this.events.stop();
  }

  /** True once every cache has listed once. */
  get hasSynced(): boolean {
    return this.caches.every((i) => i.hasSynced);
  }

  /** Forgets the CA (leadership changed: another leader may have replaced it). */
  forgetCa(): void {
    this.lane.forget();
  }

  /** Resolves once the lane has no request queued, being decided or due for a retry. */
  whenIdle(): Promise<void> {
    return this.lane.whenIdle();
  }

  /** Resolves once the signer's Events so far are sent, the issuances it is still coalescing included. */
  async eventsSent(): Promise<void> {
    await this.signer.issuanceEventsSent();
    await this.events.flush();
  }

  /** The signer's Event counts. */
  get eventStats(): EventRecorderStats {
    return this.events.stats;
  }
}
