/**
 * `@eso-mtls/metrics`: the Prometheus metrics of the controller and of providers, with the names,
 * labels and HTTP endpoint they share. Everything not named here is internal.
 *
 * @packageDocumentation
 * @module @eso-mtls/metrics
 */
export {
  CA_STATES,
  type CaCertificateEntry,
  type CaState,
  type ControllerCertificateSource,
  ControllerMetrics,
  type ControllerMetricsOptions,
  LEADER_LEASE_FOREIGN_REASONS,
  type LeaderLeaseForeignReason,
  POD_REQUEST_BOUNDS,
  type PodRequestBound,
  POD_REQUEST_REASONS,
  type PodRequestResult,
  type ProviderCertificateEntry,
  REFUSAL_REASONS,
  type RefusedServiceEntry,
  type NamespaceLeftBehindEntry,
  WRITE_CONFLICT_COMPONENTS,
  type WriteConflictComponent,
} from './controller-metrics.js';
export { MetricLabelError, type ServiceLabels } from './labels.js';
export { METRIC_NAMES, type MetricName } from './metric-names.js';
export { createMetricsHandler, type MetricsHandler, type MetricsHandlerOptions } from './metrics-handler.js';
export { METRICS_PATH, type MetricsServer, type MetricsServerOptions, startMetricsServer } from './metrics-server.js';
export { isUpstreamSource, UPSTREAM_PROBLEM_REASONS, type UpstreamKind, type UpstreamProblemEntry, type UpstreamSourceEntry } from './upstream-gauges.js';
export { PROVIDER_IDENTITY_ENV, ProviderIdentityError, providerIdentityFromEnv } from './provider-identity.js';
export {
  ProviderMetrics,
  type ProviderMetricsOptions,
  SERVED_CERTIFICATE_ORIGINS,
  type ServedCertificate,
  type ServedCertificateOrigin,
} from './provider-metrics.js';
