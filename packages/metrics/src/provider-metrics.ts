import type { Instant } from '@eso-mtls/core';
import { Counter, Gauge, Registry } from 'prom-client';
import { isInstant, secondsUntil } from './expiry.js';
import { serviceLabels } from './labels.js';
import { METRIC_NAMES } from './metric-names.js';

/**
 * Where the certificate a provider serves comes from, the `source` label of
 * `eso_provider_served_certificate_expiry_seconds`: `secret`, a Secret the controller writes (and
 * exports the expiry of, so the two can be compared); `pod_certificate`, a certificate the kubelet
 * obtained for the pod, which no Secret holds.
 */
export type ServedCertificateOrigin = 'secret' | 'pod_certificate';

/** Every {@link ServedCertificateOrigin}. */
export const SERVED_CERTIFICATE_ORIGINS: readonly ServedCertificateOrigin[] = ['secret', 'pod_certificate'];

/** The dates of the certificate a provider serves. */
export interface ServedCertificate {
  readonly notAfter: Instant;
  /** With it, the certificate's lifetime is exported too. */
  readonly notBefore?: Instant;
}

/** Options of {@link ProviderMetrics}. */
export interface ProviderMetricsOptions {
  /** Registry to register in; a fresh one by default. Never the global registry. */
  readonly registry?: Registry;
  /** The provider's own namespace and Service, e.g. from {@link providerIdentityFromEnv}. */
  readonly namespace: string;
  /** The provider's Service name. */
  readonly service: string;
  /** The current time, epoch milliseconds. */
  readonly now: () => Instant;
  /**
   * Where the served certificate comes from. A pod certificate is never compared with the
   * controller's Secret for the same Service, which the pod does not mount.
   */
  readonly source: ServedCertificateOrigin;
  /**
   * The certificate being served right now; undefined before the first good load. With its
   * notBefore, its lifetime is exported too (a pod certificate's refresh is judged against it).
   */
  readonly servedCertificate: () => ServedCertificate | undefined;
}

/**
 * A provider process's metrics: hot-reload counters, and the expiry and lifetime of the
 * certificate it actually serves, computed at scrape time, so a provider stuck on an old pair shows
 * up next to the controller's `eso_provider_certificate_expiry_seconds`, and a pod certificate the
 * kubelet stopped refreshing shows up against its own lifetime.
 */
export class ProviderMetrics {
  /** The registry holding these metrics; serve it with {@link startMetricsServer}. */
  readonly registry: Registry;
  private readonly reloads: Counter<'namespace' | 'service'>;
  private readonly reloadFailures: Counter<'namespace' | 'service'>;
  private readonly labels: { namespace: string; service: string };

  /** Throws {@link MetricLabelError} when `namespace` or `service` is not a Kubernetes name. */
  constructor(options: ProviderMetricsOptions) {
    const { now, servedCertificate, source } = options;
    if (!SERVED_CERTIFICATE_ORIGINS.includes(source)) {
      throw new RangeError(`source ${JSON.stringify(source)} is not one of ${SERVED_CERTIFICATE_ORIGINS.join(', ')}`);
    }
    const labels = { ...serviceLabels(options.namespace, options.service) };
    this.labels = labels;
    this.registry = options.registry ?? new Registry();
    const registers = [this.registry];
    const labelNames = ['namespace', 'service'] as const;

    this.reloads = new Counter({
      name: METRIC_NAMES.providerHotReloads,
      help: 'Certificate pairs the provider swapped in after a change on disk.',
      labelNames,
      registers,
    });
    this.reloadFailures = new Counter({
      name: METRIC_NAMES.providerHotReloadFailures,
      help: 'Reload attempts that found an unusable pair and kept serving the last good one.',
      labelNames,
      registers,
    });
    // Series born at 0, so increase() and the alerts see the first reload or failure.
    this.reloads.inc(labels, 0);
    this.reloadFailures.inc(labels, 0);

    // Each gauge of the served certificate is computed at scrape time, absent while it has no value.
    const servedLabels = { ...labels, source };
    const servedGauge = (name: string, help: string, value: (served: ServedCertificate) => number | undefined): void =>
      void new Gauge({
        name,
        help: `${help}; source is secret or pod_certificate. Absent before the first good load.`,
        labelNames: [...labelNames, 'source'],
        registers,
        collect() {
          this.reset();
          const served = servedCertificate();
          const v = served && value(served);
          if (v !== undefined) this.set(servedLabels, v);
        },
      });
    servedGauge(METRIC_NAMES.providerServedCertificateExpiry, 'Seconds until the certificate this provider serves right now expires', (c) =>
      isInstant(c.notAfter) ? secondsUntil(c.notAfter, now()) : undefined,
    );
    servedGauge(METRIC_NAMES.providerServedCertificateLifetime, 'Seconds from notBefore to notAfter of the certificate this provider serves right now', (c) =>
      c.notBefore !== undefined && isInstant(c.notBefore) && isInstant(c.notAfter) && c.notAfter > c.notBefore ? (c.notAfter - c.notBefore) / 1000 : undefined,
    );
  }

  /** Counts one certificate pair swapped in. */
  recordReload(): void {
    this.reloads.inc(this.labels);
  }

  /** Counts one reload attempt that kept the last good pair. */
  recordReloadFailure(): void {
    this.reloadFailures.inc(this.labels);
  }
}
