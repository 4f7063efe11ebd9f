/**
 * `@eso-mtls/kubernetes`: the adapter that runs the core's planner against a real cluster: informers,
 * Secret writes, Events, status and metrics. Everything not named here is internal.
 *
 * @packageDocumentation
 * @module @eso-mtls/kubernetes
 */
export { type AdapterOptions, ProviderCertificateAdapter } from './adapter.js';
export { type BackoffOptions } from './backoff.js';
export { CertificateStatusView, type LabelledService } from './certificate-status.js';
export { type MonotonicClock, type ScheduledTimer, sleep, systemTimers, type Timers, type TimerScheduler } from './clock.js';
export { type ClusterInformers, type InformerScope, type InformerTuning, PROVIDER_SERVICE_SELECTOR, trimSecret, trimService } from './cluster-informers.js';
export { type ClusterConnection, connectionFromKubeConfig, type ConnectionTls, type KubeConfigConnectionOptions, type KubeConfigLike } from './connection.js';
export { type EventReason, type EventRecorderStats } from './event-recorder.js';
export type { InvolvedObject } from './involved-object.js';
export {
  Informer,
  type InformerEvent,
  type InformerOptions,
  type InformerStats,
  type ListPage,
  type ListWatchSource,
  type NotHeld,
  type ObjectWithMeta,
  type Watcher,
} from './informer.js';
export type { CacheBound, CacheBoundScope } from './informer-store.js';
export { type InClusterOptions, type KubeconfigOptions, loadInClusterConnection, loadKubeconfigFile, UnsupportedKubeconfigError } from './kubeconfig.js';
export { type Logger, silentLogger } from './logger.js';
export { AdapterOptionsError, isSignerName, validateAdapterOptions } from './options.js';
export { terminalCondition } from './pod-requests.js';
export { DEFAULT_PENDING_BOUND } from './pod-requests-not-held.js';
export { planContext, type PlanConfiguration } from './plan-context.js';
export { type PodCertificateOptions, type PodCertificateSigner, type PodRequestResult, type SigningCa } from './pod-signer.js';
export { type PodReader, type PodSource } from './pod-cache.js';
export { type PodStage, type PodStageTimes } from './pod-stages.js';
export {
  type ClusterTrustBundle,
  type StrayTrustBundle,
  strayTrustBundles,
  TRUST_BUNDLE_LABEL,
  TRUST_BUNDLE_SELECTOR,
  trustBundleName,
} from './trust-bundles.js';
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
} from './ownership.js';
export { type ProxyChoice, redactProxyUrl } from './proxy.js';
export { MIN_PRUNE_GRACE } from './pruner.js';
export type { AdapterHooks } from './adapter-hooks.js';
export type { RoundResult } from './round-types.js';
export { type ApiVerb, type RequestCounter } from './request-counter.js';
export {
  certificatesPath,
  corePath,
  KubeApiError,
  KubeRestClient,
  type KubeRestClientOptions,
  type Query,
  type WatchHandle,
  WriteFencedError,
} from './rest-client.js';
export { type BuiltSnapshot, SnapshotBuilder, type SnapshotScope, type SnapshotSource } from './snapshot-builder.js';
export { WatchError } from './watch-state.js';
