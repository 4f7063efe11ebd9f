import type { Instant } from '@eso-mtls/core';
import { type AdapterOptions, type Logger, ProviderCertificateAdapter } from '@eso-mtls/kubernetes';
import { ControllerMetrics, type ControllerMetricsOptions } from '@eso-mtls/metrics';

/** What {@link wireProviderCertificates} needs: the adapter's options, less the hooks it wires itself. */
export interface ProviderCertificateWiringOptions extends Omit<AdapterOptions, 'hooks' | 'logger' | 'now'> {
  /** Where the adapter logs, and where a failed metrics update or a skipped metrics entry is reported. */
  readonly logger: Logger;
  /** The certificate clock, for the adapter and the expiry gauges alike. */
  readonly now: () => Instant;
  /** Where the metrics register (default: a fresh registry); an embedder passes its own. */
  readonly registry?: ControllerMetricsOptions['registry'];
  /** Why the leader election Lease is held by no replica of ours (eso_leader_lease_foreign); undefined: not exported. */
  readonly leaderLease?: ControllerMetricsOptions['leaderLease'];
}

/** The adapter and the metrics it feeds. */
export interface ProviderCertificateWiring {
  /** Plans and writes the certificates; start() it. */
  readonly adapter: ProviderCertificateAdapter;
  /** Gauges read from the adapter's status at scrape time; counters moved by its hooks. */
  readonly metrics: ControllerMetrics;
}

/**
 * The adapter wired to its metrics, as `eso-mtls controller` runs it: every gauge reads the
 * adapter's whole status view (so no part of it can be left out), every hook moves its counter,
 * and the modes that pre-create counter series are read from the adapter's own options. The
 * reference controller, the embedding example and the tests all wire through here.
 */
export async function wireProviderCertificates(options: ProviderCertificateWiringOptions): Promise<ProviderCertificateWiring> {
  const { logger, now, registry, leaderLease, ...adapterOptions } = options;
  // The hooks fire only once the adapter has started, by when `metrics` below exists.
  const adapter = await ProviderCertificateAdapter.create({
    ...adapterOptions,
    now,
    logger,
    hooks: {
      onRotation: (namespace, services, reason) => guard(logger, () => metrics.recordRotation(namespace, services, reason)),
      onRotationFailure: (namespace, services) => guard(logger, () => metrics.recordRotationFailure(namespace, services)),
      onCaRotationFailure: () => guard(logger, () => metrics.recordCaRotationFailure()),
      onPodCertificateRequest: (signer, result, reason) => guard(logger, () => metrics.recordPodCertificateRequest(signer, result, reason)),
      onSecretPruned: (_namespace, result) => guard(logger, () => metrics.recordOrphanDeletion(result)),
      onWriteConflict: (component) => guard(logger, () => metrics.recordWriteConflict(component)),
    },
  });
  const metrics = new ControllerMetrics({
    ...(registry ? { registry } : {}),
    now,
    source: adapter.status,
    onInvalidEntry: (e) => logger.warn({ error: e.message }, 'metrics entry skipped'),
    podCertificates: options.podCertificates !== undefined,
    orphanPruning: (options.pruneOrphanedSecretsAfter ?? 0) > 0,
    ...(leaderLease ? { leaderLease } : {}),
    ...(adapter.podSigner ? { podRequestsNotHeld: adapter.podSigner.notHeld.bind(adapter.podSigner) } : {}),
  });
  return { adapter, metrics };
}

/** Metrics hooks must not throw into the reconciler. */
function guard(logger: Logger, f: () => void): void {
  try {
    f();
  } catch (e) {
    logger.warn({ error: (e as Error).message }, 'metrics update failed');
  }
}
