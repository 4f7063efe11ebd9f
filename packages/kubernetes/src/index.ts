/**
 * `@eso-mtls/kubernetes`: the adapter that runs the core's planner against a real cluster: informers,
 * Secret writes, Events, status and metrics. Everything not named here is internal.
 *
 * @packageDocumentation
 * @module @eso-mtls/kubernetes
 */
export { ProviderCertificateAdapter } from './adapter.js';
export { type BackoffOptions } from './client/backoff.js';
export { CertificateStatusView, type LabelledService } from './rounds/certificate-status.js';
export { type MonotonicClock, type ScheduledTimer, sleep, systemTimers, type Timers, type TimerScheduler } from './runtime/clock.js';
export { type ClusterInformers, type InformerTuning, PROVIDER_SERVICE_SELECTOR, trimSecret, trimService } from './informers/cluster-informers.js';
export {
  type ClusterConnection,
  connectionFromKubeConfig,
  type ConnectionTls,
  type KubeConfigConnectionOptions,
  type KubeConfigLike,
} from './client/connection.js';
export { type EventReason, type EventRecorderStats } from './events/event-recorder.js';
export type { InvolvedObject } from './events/involved-object.js';
export {
  Informer,
  type InformerEvent,
  type InformerOptions,
  type InformerStats,
  type ListPage,
  type ListWatchSource,
  type NotHeld,
  type ObjectWithMeta,
  ResourceNotServedError,
  type Watcher,
} from './informers/informer.js';
export type { CacheBoundScope } from './informers/informer-store.js';
export { type CacheBound, type Installation, installationOf, type InstallationSettings, type PodCertificateOptions } from './installation/installation.js';
export {
  type CaSource,
  DEFAULT_CA_REQUEST_DEADLINE,
  DEFAULT_ISSUER_GROUP,
  DEFAULT_TRUST_ANCHORS_KEY,
  type IssuerReference,
  SELF_SIGNED,
  type TrustAnchorsReference,
} from './installation/ca-source.js';
export { readUpstreamObservation, sourceName, type UpstreamSource } from './upstream/observation.js';
export { type InClusterOptions, type KubeconfigOptions, loadInClusterConnection, loadKubeconfigFile, UnsupportedKubeconfigError } from './client/kubeconfig.js';
export { type Logger, silentLogger } from './runtime/logger.js';
export { type AdapterHooks, type AdapterOptions, AdapterOptionsError, validateAdapterOptions } from './options.js';
export { terminalCondition } from './pod-certificates/pod-requests.js';
export { DEFAULT_PENDING_BOUND } from './pod-certificates/pod-requests-not-held.js';
export { planContext } from './installation/installation.js';
export { type PodCertificateSigner, type PodRequestResult, type SigningCa } from './pod-certificates/pod-signer.js';
export { type PodReader, type PodSource } from './pod-certificates/pod-cache.js';
export { type PodStage, type PodStageTimes } from './pod-certificates/pod-stages.js';
export {
  type ClusterTrustBundle,
  isSignerName,
  type StrayTrustBundle,
  strayTrustBundles,
  TRUST_BUNDLE_LABEL,
  TRUST_BUNDLE_SELECTOR,
  trustBundleName,
} from './pod-certificates/trust-bundles.js';
export {
  COMPONENT_LABEL,
  DEFAULT_CA_SECRET_NAME,
  DEFAULT_CLIENT_SECRET_NAME,
  INSTALLATION_ANNOTATION,
  installationId,
  isOurTrustBundle,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  POLICY_ANNOTATION,
  type SecretComponent,
  WRITER_ANNOTATION,
  type WriterStamp,
} from './installation/ownership.js';
export { type ProxyChoice, redactProxyUrl } from './client/proxy.js';
export { MIN_PRUNE_GRACE } from './rounds/pruner.js';
export type { RoundHooks, RoundResult } from './rounds/round.js';
export { type ApiVerb, type RequestCounter } from './client/request-counter.js';
export {
  certificatesPath,
  corePath,
  KubeApiError,
  KubeRestClient,
  type KubeRestClientOptions,
  type Query,
  type WatchHandle,
  WriteFencedError,
} from './client/rest-client.js';
export { type BuiltSnapshot, SnapshotBuilder, type SnapshotSource } from './rounds/snapshot-builder.js';
export { WatchError } from './informers/watch-state.js';
