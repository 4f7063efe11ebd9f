import { type LeaderElectionTimings, LeaderElector, type LeaderElectorOptions, LeaseLock, wireProviderCertificates } from '@eso-mtls/controller';
import { type ClusterConnection, KubeRestClient, type ProviderCertificateAdapter } from '@eso-mtls/kubernetes';
import type { ControllerMetrics } from '@eso-mtls/metrics';
import type { Registry } from 'prom-client';

/** The host operator's logger: pino, or anything with pino's call shape. */
export type HostLogger = NonNullable<LeaderElectorOptions['logger']>;

/** controller-runtime's defaults, which the reference controller uses too. */
export const DEFAULT_TIMINGS: LeaderElectionTimings = { leaseDuration: 15_000, renewDeadline: 10_000, retryPeriod: 2_000 };

/** What the host operator hands over. */
export interface ProviderCertificatesOptions {
  /** The apiserver and credentials (loadConnection, loadKubeconfigFile or loadInClusterConnection). */
  readonly connection: ClusterConnection;
  /** Where ESO runs: the CA and client Secrets are written there. */
  readonly esoNamespace: string;
  /** The Lease that decides which replica writes. One Lease for the whole operator is fine: see docs/embedding.md. */
  readonly lease: { readonly namespace: string; readonly name: string };
  /** Unique per process (the pod name, or hostname_uuid); written into the Lease and the Events. */
  readonly identity: string;
  readonly logger: HostLogger;
  /** The host's Prometheus registry: the certificate metrics join the host's own on its /metrics. */
  readonly registry: Registry;
  readonly timings?: LeaderElectionTimings;
}

/** The running embedding. */
export interface ProviderCertificates {
  readonly adapter: ProviderCertificateAdapter;
  readonly elector: LeaderElector;
  readonly metrics: ControllerMetrics;
  /** Resolves once the caches have synced and this replica has begun campaigning for the Lease. */
  readonly synced: Promise<void>;
  /** For the host's /readyz: caches synced and the Lease holder known. */
  ready(): boolean;
  /** Fences writes, finishes the write in flight, stops the watches, then releases the Lease. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Issues and rotates ESO's provider certificates from inside another operator: the Kubernetes
 * adapter, fenced by a Lease, reporting to the host's registry. Wired by the reference controller's
 * own wiring function (wireProviderCertificates), minus its servers and flags.
 */
export async function startProviderCertificates(options: ProviderCertificatesOptions): Promise<ProviderCertificates> {
  const { connection, identity, logger } = options;
  const timings = options.timings ?? DEFAULT_TIMINGS;
  let stopping = false;

  // Lease traffic gets its own small client: never fenced, and never queued behind Secret writes.
  const leaseApi = new KubeRestClient(connection, { maxSockets: 2, requestTimeoutMs: timings.renewDeadline });
  const elector = new LeaderElector({
    lock: new LeaseLock(leaseApi, options.lease.namespace, options.lease.name),
    identity,
    timings,
    logger,
    onStartedLeading: () => adapter.requestReconcile(),
    onStoppedLeading: (reason) => {
      if (!stopping) logger.warn({ reason }, 'no longer the leader; certificate writes stopped, caches kept warm');
    },
  });
  const leading = (): boolean => elector.writesAllowed();

  // The reference controller's own wiring: every hook moves its counter (a metrics problem is
  // logged, never thrown into the reconciler), and the gauges read the adapter's whole status at
  // scrape time, exported by the leader only, into the host's registry.
  const { adapter, metrics } = await wireProviderCertificates({
    connection,
    policy: { esoNamespace: options.esoNamespace },
    now: Date.now,
    logger,
    registry: options.registry,
    eventInstance: identity,
    // The fence: read before every plan, key generation and Secret write, and again as each request is sent.
    writesAllowed: () => !stopping && leading(),
    // A stopping leader still holds its Lease: the Events of the writes it finished still go out.
    eventsAllowed: leading,
    isLeader: leading,
  });

  // Campaign only once the caches are in: a replica that cannot read must not hold the Lease.
  const synced = adapter.start().then(() => {
    if (!stopping) elector.start();
  });

  let stopped: Promise<void> | undefined;
  return {
    adapter,
    elector,
    metrics,
    synced,
    ready: () => adapter.hasSynced && elector.leaseKnown(),
    stop: () =>
      (stopped ??= (async () => {
        stopping = true; // fence first: no Secret write starts from here on
        await adapter.stop(); // finishes the round in flight, stops the watches, flushes Events
        await elector.stopAndRelease(); // empty holder: another replica takes over within a retry period
        leaseApi.close();
      })()),
  };
}
