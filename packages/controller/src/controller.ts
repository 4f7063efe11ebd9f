import { type CryptoBackend, type Instant } from '@eso-mtls/core';
import { readFileSync } from 'node:fs';
import { KubeRestClient, type ProviderCertificateAdapter } from '@eso-mtls/kubernetes';
import { type ControllerMetrics, type MetricsServer, startMetricsServer } from '@eso-mtls/metrics';
import type { Logger } from 'pino';
import type { BindAddress } from './bind-address.js';
import { type Clock, systemClock } from './clock.js';
import type { ControllerConfig, Pkcs11Config } from './config.js';
import { loadConnection } from './kube-config.js';
import { LeaderElector } from './leader-election.js';
import { LeaseHolderWatch } from './lease-holder-watch.js';
import { LeaseLock } from './lease-lock.js';
import { YieldToLeaseHolder } from './yield-to-lease-holder.js';
import { type ProbeCheck, type ProbeServer, pingCheck, startProbeServer } from './probes.js';
import { wireProviderCertificates } from './wiring.js';

/** What {@link startController} needs besides the parsed configuration. */
export interface ControllerDependencies {
  /** Where the controller logs. */
  readonly logger: Logger;
  /** Lease holder identity and Event reportingInstance (the CLI derives hostname_<uuid>). */
  readonly identity: string;
  /** The clock for leader election and timers (default: the system's). */
  readonly clock?: Clock;
  /** The certificate clock (default Date.now). */
  readonly now?: () => Instant;
  /** Environment for in-cluster configuration (default process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** A running controller. */
export interface RunningController {
  /** The adapter that plans and writes the certificates. */
  readonly adapter: ProviderCertificateAdapter;
  /** The leader elector; undefined when leader election is off. */
  readonly elector: LeaderElector | undefined;
  /** The controller's Prometheus metrics. */
  readonly metrics: ControllerMetrics;
  /** Undefined when disabled with `0`. */
  readonly probeServer: ProbeServer | undefined;
  /** The /metrics server; undefined when disabled with `0`. */
  readonly metricsServer: MetricsServer | undefined;
  /** Resolves once the caches have synced (never, if stop() came first). */
  readonly synced: Promise<void>;
  /** Stops informers, finishes the write in flight, releases the Lease, closes the servers. */
  stop(): Promise<void>;
}

/**
 * Starts the controller: probe and metrics servers first (so /healthz answers during start-up),
 * then the adapter's informers, and once they have synced, the leader election. Resolves before
 * the caches sync (see {@link RunningController.synced}). Writes are allowed only while this
 * replica leads (or always, without leader election) and not after stop() began.
 */
export async function startController(config: ControllerConfig, deps: ControllerDependencies): Promise<RunningController> {
  const { logger, identity } = deps;
  const clock = deps.clock ?? systemClock;
  const now = deps.now ?? Date.now;
  let stopping = false;
  let elector: LeaderElector | undefined;
  let leaseYield: YieldToLeaseHolder | undefined;
  const leading = (): boolean => (elector ? elector.writesAllowed() : !leaseYield?.yielding());
  const writesAllowed = (): boolean => !stopping && leading();

  const { connection, source } = await loadConnection(config.kubeconfig, deps.env);
  logger.info({ kubeconfig: source, identity }, 'connecting to the Kubernetes API');
  if (source.kind === 'file' && source.reader === 'client-node') {
    logger.info(
      { feature: source.feature },
      "the kubeconfig needs client-node's KubeConfig (about 70 MB more memory); in a cluster the service account is used without it",
    );
  }

  const le = config.leaderElection;
  // Lease traffic has its own client, unfenced and apart from the adapter's connection pool.
  const leaseApi = new KubeRestClient(connection, { maxSockets: 2, requestTimeoutMs: le.renewDeadline });
  const lock = new LeaseLock(leaseApi, le.namespace, le.leaseName);
  // Every read of the Lease, leader or not, is judged: a holder that is no replica of ours stops all issuance (docs/rbac.md#the-leader-election-lease).
  const holderWatch = new LeaseHolderWatch({ lease: lock, identity, leaseDuration: le.leaseDuration, logger, events: leaseApi });
  const onLeaseRead = (record: Parameters<LeaseHolderWatch['observe']>[0]): void => holderWatch.observe(record);
  if (!le.enabled) {
    // Without leader election, yield to a controller that holds this installation's Lease (docs/controller.md#two-controllers).
    const onChange = (yielding: boolean): void => {
      if (!yielding) adapter.requestReconcile();
    };
    leaseYield = new YieldToLeaseHolder({ lock, identity, retryPeriod: le.retryPeriod, clock, logger, onChange, onLeaseRead });
  } else {
    elector = new LeaderElector({
      lock,
      identity,
      timings: le,
      clock,
      logger,
      onLeaseRead,
      onStartedLeading: () => adapter.requestReconcile(),
      onStoppedLeading: (reason) => {
        if (!stopping) logger.warn({ reason }, 'no longer the leader; writes stopped, caches kept warm');
      },
    });
  }

  // Only when configured: the optional package and its native binding are loaded here, never otherwise.
  const pkcs11 = config.pkcs11 ? await loadPkcs11Backend(config.pkcs11, deps.env ?? process.env, logger) : undefined;
  const { adapter, metrics } = await wireProviderCertificates({
    connection,
    ...(pkcs11 ? { crypto: pkcs11 } : {}),
    // The installation's settings, named as the adapter names them: it builds the Installation of them.
    policy: config.policy,
    caSecretName: config.caSecretName,
    clientSecretName: config.clientSecretName,
    secretMode: config.secretMode,
    podCertificates: config.podCertificates,
    maxIssuancesPerReconcile: config.maxIssuancesPerReconcile,
    maxNamespaces: config.maxNamespaces,
    namespaceRequirement: config.namespaceRequirement,
    caSource: config.caSource,
    pruneOrphanedSecretsAfter: config.pruneOrphanedSecretsAfter,
    now,
    logger,
    writesAllowed,
    isLeader: leading,
    // While stopping, the leader still holds its Lease: the Events of writes it finished go out.
    eventsAllowed: leading,
    eventInstance: identity,
    leaderLease: () => holderWatch.reasons(),
  });

  const readiness: ProbeCheck[] = [{ name: 'informers', check: () => (adapter.hasSynced ? undefined : 'caches not synced yet') }];
  if (elector) {
    const e = elector;
    readiness.push({ name: 'leader-election', check: () => (e.leaseKnown() ? undefined : 'lease holder not known yet') });
  }
  const started: { close(): Promise<void> }[] = [];
  try {
    const probeServer = config.healthProbeBindAddress
      ? await startProbeServer({ ...config.healthProbeBindAddress, liveness: [pingCheck], readiness })
      : undefined;
    if (probeServer) started.push(probeServer);
    const metricsServer = config.metricsBindAddress ? await listenMetrics(config.metricsBindAddress, metrics, logger) : undefined;
    if (metricsServer) started.push(metricsServer);
    logger.info({ probes: probeServer?.url ?? 'disabled', metrics: metricsServer?.url ?? 'disabled' }, 'serving probes and metrics');

    leaseYield?.start();
    // Campaign only once the caches are in: a replica that cannot read (RBAC, network) must not
    // hold the Lease while a healthy one waits. Not awaited, so SIGTERM works during a long sync.
    const synced = adapter.start().then(() => {
      logger.info({ leaderElection: le.enabled ? `${le.namespace}/${le.leaseName}` : 'disabled' }, 'caches synced');
      if (!stopping) elector?.start();
    });

    let stopped: Promise<void> | undefined;
    return {
      adapter,
      elector,
      metrics,
      probeServer,
      metricsServer,
      synced,
      stop: () =>
        (stopped ??= (async () => {
          // Fence first: the round in flight finishes the writes already sent and sends no more.
          stopping = true;
          await adapter.stop();
          await elector?.stopAndRelease();
          await leaseYield?.stop();
          leaseApi.close();
          await Promise.all(started.map((s) => s.close()));
          pkcs11?.close();
          logger.info('stopped');
        })()),
    };
  } catch (e) {
    stopping = true;
    await adapter.stop().catch(() => undefined);
    await leaseYield?.stop();
    leaseApi.close();
    await Promise.all(started.map((s) => s.close().catch(() => undefined)));
    pkcs11?.close();
    throw e;
  }
}

/** Node's default for an unspecified host is every interface, IPv6 if the kernel has it. */
async function listenMetrics(address: BindAddress, metrics: ControllerMetrics, logger: Logger): Promise<MetricsServer> {
  const onError = (e: unknown): void => logger.warn({ error: (e as Error)?.message ?? String(e) }, 'metrics scrape failed');
  if (address.host !== undefined) return startMetricsServer({ registry: metrics.registry, host: address.host, port: address.port, onError });
  try {
    return await startMetricsServer({ registry: metrics.registry, host: '::', port: address.port, onError });
  } catch (e) {
    if (!/EAFNOSUPPORT|EADDRNOTAVAIL/.test((e as Error).message)) throw e;
    return startMetricsServer({ registry: metrics.registry, host: '0.0.0.0', port: address.port, onError });
  }
}

/** What the controller uses of `@eso-mtls/pkcs11`, which it does not depend on: the package is optional. */
interface Pkcs11Package {
  createPkcs11CryptoBackend(options: {
    modulePath: string;
    tokenLabel: string;
    pin: () => string;
    keyLabelPrefix: string;
    keepRetiredKeys: boolean;
    onKeyDestroyed: (reference: string) => void;
    onRecovered: () => void;
  }): CryptoBackend & { close(): void };
}

/**
 * The crypto backend with the CA keys in a PKCS#11 token. A missing package fails the start-up;
 * the token itself is opened at first use, and any failure there takes the CA failure path.
 */
export async function loadPkcs11Backend(
  config: Pkcs11Config,
  env: Readonly<Record<string, string | undefined>>,
  logger: Logger,
): Promise<CryptoBackend & { close(): void }> {
  const specifier = '@eso-mtls/pkcs11';
  let pkg: Pkcs11Package;
  try {
    pkg = (await import(specifier)) as Pkcs11Package;
  } catch (e) {
    throw new Error(`--hsm-module is set, but the package ${specifier} could not be loaded (${(e as Error).message}): install it next to the controller`, {
      cause: e,
    });
  }
  const pin = (): string => ('file' in config.pin ? readFileSync(config.pin.file, 'utf8').replace(/\r?\n$/, '') : (env[config.pin.env] ?? ''));
  logger.info({ module: config.modulePath, token: config.tokenLabel, keepRetiredKeys: config.keepRetiredKeys }, 'CA keys are kept in a PKCS#11 token');
  return pkg.createPkcs11CryptoBackend({
    modulePath: config.modulePath,
    tokenLabel: config.tokenLabel,
    pin,
    keyLabelPrefix: config.keyLabelPrefix,
    keepRetiredKeys: config.keepRetiredKeys,
    onKeyDestroyed: (reference) => logger.info({ key: reference }, 'destroyed the key of a CA that has left every bundle'),
    // The failures were counted and logged by the CA failure path; the end of them is said once.
    onRecovered: () => logger.info({ module: config.modulePath, token: config.tokenLabel }, 'the PKCS#11 token works again'),
  });
}
