import {
  EXCLUSION_REASONS,
  type ExclusionReason,
  type Instant,
  POD_DENY_REASONS,
  ROTATION_REASONS,
  type RefusalReason,
  type RotationReason,
  WRITE_REFUSAL_REASONS,
  type WriteRefusalReason,
  isDnsLabel,
} from '@eso-mtls/core';
import { Counter, Gauge, Registry } from 'prom-client';
import { isInstant, secondsUntil } from './expiry.js';
import { MetricLabelError, type ServiceLabels, serviceKey, serviceLabels } from './labels.js';
import { METRIC_NAMES } from './metric-names.js';
import { assertRotationReason } from './rotation-reason.js';
import { type UpstreamProblemEntry, type UpstreamSourceEntry, registerUpstreamGauges } from './upstream-gauges.js';

/** One labelled Service, as the controller currently sees it. */
export interface ProviderCertificateEntry {
  /** The provider's namespace (the `namespace` label). */
  readonly namespace: string;
  /** A labelled Service in it (the `service` label). */
  readonly service: string;
  /** notAfter of the namespace's server certificate; undefined while the namespace has no usable one. */
  readonly notAfter: Instant | undefined;
}

/** Where a CA stands in the overlap rotation. */
export type CaState = 'active' | 'next' | 'retired';
/** All {@link CaState} values. */
export const CA_STATES: readonly CaState[] = Object.freeze(['active', 'next', 'retired'] as const);

/** One CA certificate the controller holds. */
export interface CaCertificateEntry {
  /** Which CA slot it fills (the `state` label). */
  readonly state: CaState;
  /** The CA certificate's notAfter. */
  readonly notAfter: Instant;
}

/** Every reason the core refuses a Service for: the only values of the refused gauge's `reason` label. */
export const REFUSAL_REASONS: readonly RefusalReason[] = Object.freeze(['rotate_request_too_large', 'certificate_too_large'] as const);

/** A provider namespace the CA rotation went on without: its Secret refuses the controller's writes. */
export interface NamespaceLeftBehindEntry {
  /** The namespace (the `namespace` label). */
  readonly namespace: string;
  /** Why its writes are refused (the `reason` label): `immutable` or `refused`. */
  readonly reason: WriteRefusalReason;
}

/** A labelled Service whose rotation request or DNS names the controller refuses. */
export interface RefusedServiceEntry {
  /** The Service's namespace. */
  readonly namespace: string;
  /** The Service's name. */
  readonly service: string;
  /** Why it was refused (the `reason` label). */
  readonly reason: RefusalReason;
}

/**
 * The controller's current view, read at every scrape (cert-manager's lesson: gauges computed
 * from the cache cannot go stale). Implemented by the controller; must be cheap and not throw.
 * Every method is required, so a source that leaves one out is a type error, not a gauge stuck at 0.
 */
export interface ControllerCertificateSource {
  /** Only the leader exports gauges, so two replicas never report the same series twice. */
  isLeader(): boolean;
  /** Exactly one entry per Service that carries the provider label now, whether or not it has a certificate. */
  providerCertificates(): Iterable<ProviderCertificateEntry>;
  /** The ESO client certificate, if one exists. */
  clientCertificate(): { readonly notAfter: Instant } | undefined;
  /** Every CA certificate still in the CA Secret: active, next and retired. */
  caCertificates(): Iterable<CaCertificateEntry>;
  /** The Services refused now (each with its reason); a refusal that ended is no longer listed. */
  refusedServices(): Iterable<RefusedServiceEntry>;
  /** While no CA signs (a recovery waits for its new CA's propagation): when one is expected to sign again. */
  signingPausedUntil(): Instant | undefined;
  /**
   * Provider namespaces with labelled Services left out now, by why: the cap on namespaces (`cap`)
   * or the namespace requirement (`not_allowed`); 0 for each without a cap or requirement.
   */
  namespacesNotServed(): Readonly<Record<ExclusionReason, number>>;
  /** Pod-certificate mode: per namespace, pods serving names their Services no longer give them; empty otherwise. */
  podCertificatesStaleNames(): ReadonlyMap<string, number>;
  /** The provider namespaces the CA rotation went on without, their Secret refusing our writes; a namespace caught up is no longer listed. */
  namespacesLeftBehind(): Iterable<NamespaceLeftBehindEntry>;
  /** The upstream CA source configured (`--ca-issuer`, `--ca-from-secret`); undefined with the self-signed CA. */
  upstreamSource(): UpstreamSourceEntry | undefined;
  /** Each problem of the upstream CA source that stands now, by reason; a problem that ended is no longer listed. */
  upstreamProblems(): Iterable<UpstreamProblemEntry>;
}

/** Which bound keeps a pending PodCertificateRequest out of memory: its namespace's, or the signer's in all (the `bound` label). */
export type PodRequestBound = 'namespace' | 'total';
/** All {@link PodRequestBound} values. */
export const POD_REQUEST_BOUNDS: readonly PodRequestBound[] = Object.freeze(['namespace', 'total'] as const);

/** The `result` label of the pod certificate request counter. */
export type PodRequestResult = 'issued' | 'denied' | 'failed';
/** Every `reason` the pod certificate request counter takes: the core's Denied reasons and the signer's own. */
export const POD_REQUEST_REASONS: readonly string[] = Object.freeze([...POD_DENY_REASONS, 'Issued', 'CAUnavailable', 'StatusWriteFailed']);

/** The Secret a write conflict concerns: its app.kubernetes.io/component (the `component` label). */
export type WriteConflictComponent = 'ca' | 'client-tls' | 'provider-tls';
/** All {@link WriteConflictComponent} values. */
export const WRITE_CONFLICT_COMPONENTS: readonly WriteConflictComponent[] = Object.freeze(['ca', 'client-tls', 'provider-tls'] as const);

/**
 * Why the leader election Lease is judged held by no replica of this installation: its holder does
 * not have our replicas' identity form (`unknown_holder`), or its leaseDurationSeconds is far above
 * the configured lease duration (`duration_too_long`). Either stops all issuance while it stands.
 */
export type LeaderLeaseForeignReason = 'unknown_holder' | 'duration_too_long';
/** All {@link LeaderLeaseForeignReason} values: the only values of the Lease gauge's `reason` label. */
export const LEADER_LEASE_FOREIGN_REASONS: readonly LeaderLeaseForeignReason[] = Object.freeze(['unknown_holder', 'duration_too_long'] as const);

/** Options of {@link ControllerMetrics}. */
export interface ControllerMetricsOptions {
  /** Registry to register in; a fresh one by default. Never the global registry. */
  readonly registry?: Registry;
  /** The current time, epoch milliseconds. */
  readonly now: () => Instant;
  /** Where the certificate gauges read their values at scrape time. */
  readonly source: ControllerCertificateSource;
  /** Told about a source entry that was skipped because it cannot become a series. */
  readonly onInvalidEntry?: (error: MetricLabelError) => void;
  /**
   * The pod-certificate mode is on: every series of the request counter starts at 0, so the first
   * Denied or Failed request is an increase() an alert sees (a series born at 1 shows none).
   */
  readonly podCertificates?: boolean;
  /** Pruning of orphaned Secrets is on: both series of its counter start at 0. */
  readonly orphanPruning?: boolean;
  /**
   * Why the leader election Lease is held by no replica of ours, as last read; empty while it is
   * ours, free, or held by one of our replicas. Read at every scrape, on every replica (leader or
   * not). Undefined: the controller reads no Lease, and the gauge is not exported.
   */
  readonly leaderLease?: () => readonly LeaderLeaseForeignReason[];
  /**
   * Pod-certificate mode: the pending PodCertificateRequests this replica's bound keeps out of
   * memory since its last list, per bound. Read at every scrape, on every replica (each holds its
   * own cache). Undefined: the mode is off, and the gauge is not exported.
   */
  readonly podRequestsNotHeld?: () => Readonly<Record<PodRequestBound, number>>;
}

const SERVICE_LABELS = ['namespace', 'service'] as const;

/**
 * The controller's metrics: expiry gauges computed at scrape time from a
 * {@link ControllerCertificateSource}, and rotation counters fed by {@link recordRotation}.
 */
export class ControllerMetrics {
  /** The registry holding these metrics; serve it with {@link startMetricsServer}. */
  readonly registry: Registry;
  private readonly rotations: Counter<'namespace' | 'service' | 'reason'>;
  private readonly rotationFailures: Counter<'namespace' | 'service'>;
  private readonly caRotationFailures: Counter;
  private readonly podRequests: Counter<'signer' | 'result' | 'reason'>;
  private readonly orphanDeletions: Counter<'result'>;
  private readonly writeConflicts: Counter<'component'>;
  // Series each counter holds, so a departed Service's series can be removed.
  private readonly rotationSeries = new Map<string, ServiceLabels>();
  private readonly failureSeries = new Map<string, ServiceLabels>();

  constructor(options: ControllerMetricsOptions) {
    const { now, source } = options;
    const report = options.onInvalidEntry ?? (() => undefined);
    this.registry = options.registry ?? new Registry();
    const registers = [this.registry];
    const listServices = (): Map<string, ServiceLabels & { notAfter: Instant | undefined }> => currentServices(source, report);
    const rotationSeries = this.rotationSeries;
    const failureSeries = this.failureSeries;

    new Gauge({
      name: METRIC_NAMES.providerCertificateExpiry,
      help: "Seconds until the namespace's provider server certificate expires, per labelled Service. Exported by the leading controller only.",
      labelNames: SERVICE_LABELS,
      registers,
      collect() {
        this.reset();
        if (!source.isLeader()) return;
        const t = now();
        for (const s of listServices().values()) {
          if (s.notAfter !== undefined) this.set({ namespace: s.namespace, service: s.service }, secondsUntil(s.notAfter, t));
        }
      },
    });

    instantGauge({
      name: METRIC_NAMES.clientCertificateExpiry,
      help: 'Seconds until the ESO client certificate expires. Exported by the leading controller only.',
      registers,
      isLeader: () => source.isLeader(),
      report,
      what: 'client certificate notAfter',
      instant: () => source.clientCertificate()?.notAfter,
      value: (notAfter) => secondsUntil(notAfter, now()),
    });

    new Gauge({
      name: METRIC_NAMES.caCertificateExpiry,
      help: 'Seconds until a CA certificate expires, per state (active, next, retired); the soonest when a state holds several. Exported by the leading controller only.',
      labelNames: ['state'] as const,
      registers,
      collect() {
        this.reset();
        if (!source.isLeader()) return;
        const t = now();
        for (const [state, notAfter] of soonestPerState(source.caCertificates(), report)) {
          this.set({ state }, secondsUntil(notAfter, t));
        }
      },
    });

    new Gauge({
      name: METRIC_NAMES.providerServicesRefused,
      help: '1 for each labelled Service whose eso-mtls.io/rotate request (rotate_request_too_large) or DNS names (certificate_too_large) are refused; absent once the refusal ends. Exported by the leading controller only.',
      labelNames: [...SERVICE_LABELS, 'reason'] as const,
      registers,
      collect() {
        this.reset();
        if (!source.isLeader()) return;
        for (const entry of source.refusedServices()) {
          const labels = refusedLabels(entry, report);
          if (labels) this.set(labels, 1);
        }
      },
    });

    new Gauge({
      name: METRIC_NAMES.namespacesNotServed,
      help: 'Provider namespaces with labelled Services that get no certificate, by reason: cap (the cap on namespaces, --max-namespaces, leaves the newest out; Warning Event NamespaceNotServed) or not_allowed (the namespace lacks the label of --require-namespace-label; Warning Event NamespaceNotAllowed). Nothing is issued or renewed there. 0 without a cap or requirement. Exported by the leading controller only.',
      labelNames: ['reason'] as const,
      registers,
      collect() {
        this.reset();
        if (!source.isLeader()) return;
        const counts = source.namespacesNotServed();
        for (const reason of EXCLUSION_REASONS) this.set({ reason }, counts[reason] ?? 0);
      },
    });

    new Gauge({
      name: METRIC_NAMES.caRotationNamespaceLeftBehind,
      help: "1 for each provider namespace the CA rotation went on without because its Secret refuses the controller's writes, by reason (immutable: the Secret is marked immutable; refused: the apiserver refuses the write, an admission policy, webhook or RBAC). Its provider refuses ESO's client certificate once the new CA signs it. Absent once the namespace has caught up. At most one series per provider namespace. Exported by the leading controller only.",
      labelNames: ['namespace', 'reason'] as const,
      registers,
      collect() {
        this.reset();
        if (!source.isLeader()) return;
        for (const entry of source.namespacesLeftBehind()) {
          const labels = leftBehindLabels(entry, report);
          if (labels) this.set(labels, 1);
        }
      },
    });

    registerUpstreamGauges({
      registers,
      isLeader: () => source.isLeader(),
      upstreamSource: () => source.upstreamSource(),
      upstreamProblems: () => source.upstreamProblems(),
      report,
    });

    instantGauge({
      name: METRIC_NAMES.caSigningPausedUntil,
      help: 'While no CA signs (a CA recovery waits for its new CA to reach every bundle), the Unix time at which one is expected to sign again; absent otherwise. Exported by the leading controller only.',
      registers,
      isLeader: () => source.isLeader(),
      report,
      what: 'signing paused until',
      instant: () => source.signingPausedUntil(),
      value: (until) => until / 1000,
    });

    new Gauge({
      name: METRIC_NAMES.podCertificatesStaleNames,
      help: "Pod-certificate mode: pods whose certificate carries DNS names that their labelled Services no longer give them (renamed, unlabelled or reselected), per namespace; fixed at each pod's next refresh. Counted once per reconcile interval. Exported by the leading controller only.",
      labelNames: ['namespace'] as const,
      registers,
      collect() {
        this.reset();
        if (!source.isLeader()) return;
        for (const [namespace, pods] of source.podCertificatesStaleNames()) if (pods > 0) this.set({ namespace }, pods);
      },
    });

    const leaderLease = options.leaderLease;
    if (leaderLease) {
      new Gauge({
        name: METRIC_NAMES.leaderLeaseForeign,
        help: 'Every replica: 1 while the leader election Lease is held by no replica of this installation, by reason (unknown_holder: the holder is not of our identity form; duration_too_long: leaseDurationSeconds far above the configured lease duration). Nothing is issued while it stands. Both series are exported, 0 otherwise.',
        labelNames: ['reason'] as const,
        registers,
        collect() {
          const now = new Set(leaderLease());
          for (const reason of LEADER_LEASE_FOREIGN_REASONS) this.set({ reason }, now.has(reason) ? 1 : 0);
        },
      });
    }

    const notHeld = options.podRequestsNotHeld;
    if (notHeld) {
      new Gauge({
        name: METRIC_NAMES.podCertificateRequestsNotHeld,
        help: "Every replica, pod-certificate mode: pending PodCertificateRequests kept out of memory by the signer's bound (per signer name: --pod-certificate-max-pending-per-namespace, --pod-certificate-max-pending), per bound (namespace, total), counted since the last list. They stay pending in the API and are listed again as the held ones are decided. Both series are exported, 0 otherwise.",
        labelNames: ['bound'] as const,
        registers,
        collect() {
          const now = notHeld();
          for (const bound of POD_REQUEST_BOUNDS) this.set({ bound }, now[bound]);
        },
      });
    }

    this.podRequests = new Counter({
      name: METRIC_NAMES.podCertificateRequests,
      help: 'Pod-certificate mode: PodCertificateRequests decided, per signer (server, client), result (issued, denied, failed) and reason (Issued, a Denied reason, CAUnavailable, or StatusWriteFailed when the status could not be written).',
      labelNames: ['signer', 'result', 'reason'] as const,
      registers,
    });
    if (options.podCertificates) {
      for (const signer of ['server', 'client'] as const) {
        for (const reason of POD_REQUEST_REASONS) this.podRequests.inc({ signer, result: podRequestResultOf(reason), reason }, 0);
      }
    }

    this.orphanDeletions = new Counter({
      name: METRIC_NAMES.orphanedSecretDeletions,
      help: 'Pruning (opt-in): external-secrets-provider-tls Secrets deleted because their namespace had no labelled Service for the grace period (result deleted), or whose deletion failed (result failed: RBAC, apiserver, network; retried each reconcile interval).',
      labelNames: ['result'] as const,
      registers,
    });
    // Both series start at 0 with pruning on, so the first deletion or failure is an increase().
    if (options.orphanPruning) for (const result of ['deleted', 'failed'] as const) this.orphanDeletions.inc({ result }, 0);

    this.writeConflicts = new Counter({
      name: METRIC_NAMES.secretWriteConflicts,
      help: 'Secrets this controller wrote that another controller (another writer identity in eso-mtls.io/written-by) replaced within one reconcile interval, per component (ca, client-tls, provider-tls): two controllers write one installation. Warning Event WriteConflict on the Secret.',
      labelNames: ['component'] as const,
      registers,
    });
    // Every series starts at 0, so the first conflict is an increase() the alert sees.
    for (const component of WRITE_CONFLICT_COMPONENTS) this.writeConflicts.inc({ component }, 0);

    this.caRotationFailures = new Counter({
      name: METRIC_NAMES.caCertificateRotationFailures,
      help: 'CA creations or rotations that failed: generating or signing a CA, or writing the CA Secret. Retried with backoff.',
      registers,
    });

    this.rotations = new Counter({
      name: METRIC_NAMES.providerCertificateRotations,
      help: 'Server certificates issued, per labelled Service of the namespace and reason. One issuance adds one to each Service of its namespace.',
      labelNames: [...SERVICE_LABELS, 'reason'] as const,
      registers,
      collect() {
        const listed = listServices();
        for (const [key, labels] of rotationSeries) {
          if (listed.has(key)) continue;
          for (const reason of ROTATION_REASONS) this.remove({ ...labels, reason });
          rotationSeries.delete(key);
        }
      },
    });

    this.rotationFailures = new Counter({
      name: METRIC_NAMES.providerCertificateRotationFailures,
      help: 'Server certificate issuances that failed, per labelled Service of the namespace.',
      labelNames: SERVICE_LABELS,
      registers,
      collect() {
        const listed = listServices();
        for (const [key, labels] of failureSeries) {
          if (listed.has(key)) continue;
          this.remove({ ...labels });
          failureSeries.delete(key);
        }
        // A series born at 1 shows no increase() to Prometheus: start every Service's at 0.
        for (const [key, s] of listed) {
          if (failureSeries.has(key)) continue;
          const labels = { namespace: s.namespace, service: s.service };
          this.inc(labels, 0);
          failureSeries.set(key, labels);
        }
      },
    });
  }

  /**
   * Counts one issuance of `namespace`'s server certificate: each distinct Service in `services`
   * goes up by exactly one under `reason`. Validates everything before counting anything and
   * throws {@link MetricLabelError} naming a bad name or reason.
   */
  recordRotation(namespace: string, services: readonly string[], reason: RotationReason): void {
    assertRotationReason(reason);
    for (const labels of validServices(namespace, services)) {
      this.rotations.inc({ ...labels, reason });
      this.rotationSeries.set(serviceKey(labels), labels);
    }
  }

  /**
   * Counts one failed issuance of `namespace`'s server certificate, once for each distinct Service
   * in `services`. Throws {@link MetricLabelError} naming a bad name, before counting anything.
   */
  recordRotationFailure(namespace: string, services: readonly string[]): void {
    for (const labels of validServices(namespace, services)) {
      this.rotationFailures.inc({ ...labels });
      this.failureSeries.set(serviceKey(labels), labels);
    }
  }

  /**
   * Counts one decided PodCertificateRequest. Throws {@link MetricLabelError} for a signer, result
   * or reason outside the fixed sets, so a label never carries tenant text.
   */
  recordPodCertificateRequest(signer: 'server' | 'client', result: PodRequestResult, reason: string): void {
    if (signer !== 'server' && signer !== 'client') throw new MetricLabelError(`pod certificate signer ${JSON.stringify(signer)} is not server or client`);
    if (!['issued', 'denied', 'failed'].includes(result))
      throw new MetricLabelError(`pod certificate result ${JSON.stringify(result)} is not issued, denied or failed`);
    if (!POD_REQUEST_REASONS.includes(reason) || podRequestResultOf(reason) !== result) {
      const reasons = POD_REQUEST_REASONS.filter((r) => podRequestResultOf(r) === result);
      throw new MetricLabelError(`pod certificate reason ${JSON.stringify(reason)} is not a ${result} reason (${reasons.join(', ')})`);
    }
    this.podRequests.inc({ signer, result, reason });
  }

  /** Counts one orphaned provider Secret deleted, or one deletion that failed. Throws {@link MetricLabelError} for another result. */
  recordOrphanDeletion(result: 'deleted' | 'failed'): void {
    if (result !== 'deleted' && result !== 'failed') throw new MetricLabelError(`orphan deletion result ${JSON.stringify(result)} is not deleted or failed`);
    this.orphanDeletions.inc({ result });
  }

  /** Counts one of our writes that another controller replaced within a reconcile interval (the adapter's onWriteConflict hook). */
  recordWriteConflict(component: WriteConflictComponent): void {
    if (!WRITE_CONFLICT_COMPONENTS.includes(component)) {
      throw new MetricLabelError(`write conflict component ${JSON.stringify(component)} is not one of ${WRITE_CONFLICT_COMPONENTS.join(', ')}`);
    }
    this.writeConflicts.inc({ component });
  }

  /** Counts one failed CA creation or rotation (a CA could not be generated or signed, or the CA Secret not written). */
  recordCaRotationFailure(): void {
    this.caRotationFailures.inc();
  }
}

/** The one result each reason comes with. */
function podRequestResultOf(reason: string): PodRequestResult {
  if (reason === 'Issued') return 'issued';
  return reason === 'CAUnavailable' || reason === 'StatusWriteFailed' ? 'failed' : 'denied';
}

function validServices(namespace: string, services: readonly string[]): ServiceLabels[] {
  if (!Array.isArray(services)) {
    throw new MetricLabelError(`services of namespace ${JSON.stringify(namespace)} must be an array of Service names, got ${JSON.stringify(services)}`);
  }
  const unique = new Map<string, ServiceLabels>();
  for (const service of services) {
    const labels = serviceLabels(namespace, service);
    unique.set(serviceKey(labels), labels);
  }
  return [...unique.values()];
}

/** The labels of a refused Service, or undefined (reported) when a name or the reason cannot be a label. */
function refusedLabels(entry: RefusedServiceEntry, report: (e: MetricLabelError) => void): (ServiceLabels & { reason: RefusalReason }) | undefined {
  try {
    const labels = serviceLabels(entry.namespace, entry.service);
    if (!REFUSAL_REASONS.includes(entry.reason)) {
      throw new MetricLabelError(
        `refusal reason ${JSON.stringify(entry.reason)} of Service ${labels.namespace}/${labels.service} is not one of ${REFUSAL_REASONS.join(', ')}`,
      );
    }
    return { ...labels, reason: entry.reason };
  } catch (e) {
    if (!(e instanceof MetricLabelError)) throw e;
    report(new MetricLabelError(`${e.message}; entry skipped`));
    return undefined;
  }
}

/** The labels of a namespace left behind, or undefined (reported) when its name or reason cannot be a label. */
function leftBehindLabels(
  entry: NamespaceLeftBehindEntry,
  report: (e: MetricLabelError) => void,
): { namespace: string; reason: WriteRefusalReason } | undefined {
  const { namespace, reason } = entry;
  const problem = !isDnsLabel(namespace)
    ? `namespace label ${JSON.stringify(namespace)} is not a Kubernetes namespace name`
    : !WRITE_REFUSAL_REASONS.includes(reason)
      ? `left-behind reason ${JSON.stringify(reason)} of namespace ${namespace} is not one of ${WRITE_REFUSAL_REASONS.join(', ')}`
      : undefined;
  if (problem === undefined) return { namespace, reason };
  report(new MetricLabelError(`${problem}; entry skipped`));
  return undefined;
}

function currentServices(source: ControllerCertificateSource, report: (e: MetricLabelError) => void) {
  const services = new Map<string, ServiceLabels & { notAfter: Instant | undefined }>();
  for (const entry of source.providerCertificates()) {
    try {
      const labels = serviceLabels(entry.namespace, entry.service);
      if (entry.notAfter !== undefined && !isInstant(entry.notAfter)) {
        throw new MetricLabelError(`notAfter ${String(entry.notAfter)} of Service ${labels.namespace}/${labels.service} is not an epoch-millisecond instant`);
      }
      services.set(serviceKey(labels), { ...labels, notAfter: entry.notAfter });
    } catch (e) {
      if (!(e instanceof MetricLabelError)) throw e;
      report(new MetricLabelError(`${e.message}; entry skipped`));
    }
  }
  return services;
}

function soonestPerState(entries: Iterable<CaCertificateEntry>, report: (e: MetricLabelError) => void): Map<CaState, Instant> {
  const soonest = new Map<CaState, Instant>();
  for (const { state, notAfter } of entries) {
    if (!CA_STATES.includes(state)) {
      report(new MetricLabelError(`CA state ${JSON.stringify(state)} is not one of ${CA_STATES.join(', ')}; entry skipped`));
      continue;
    }
    if (!isInstant(notAfter)) {
      report(new MetricLabelError(`notAfter ${String(notAfter)} of the ${state} CA is not an epoch-millisecond instant; entry skipped`));
      continue;
    }
    const current = soonest.get(state);
    if (current === undefined || notAfter < current) soonest.set(state, notAfter);
  }
  return soonest;
}

/**
 * An unlabelled gauge of one instant, exported by the leader only and absent while there is none.
 * reset() of an unlabelled gauge leaves a 0 sample, which would read as "expired now" or "until
 * 1970", so the series is removed instead.
 */
function instantGauge(o: {
  readonly name: string;
  readonly help: string;
  readonly registers: Registry[];
  readonly isLeader: () => boolean;
  readonly report: (error: MetricLabelError) => void;
  readonly what: string;
  readonly instant: () => Instant | undefined;
  readonly value: (instant: Instant) => number;
}): Gauge {
  return new Gauge({
    name: o.name,
    help: o.help,
    registers: o.registers,
    collect() {
      this.reset();
      this.remove();
      if (!o.isLeader()) return;
      const instant = o.instant();
      if (instant === undefined) return;
      if (!isInstant(instant)) {
        o.report(new MetricLabelError(`${o.what} ${String(instant)} is not an epoch-millisecond instant; skipped`));
        return;
      }
      this.set(o.value(instant));
    },
  });
}
