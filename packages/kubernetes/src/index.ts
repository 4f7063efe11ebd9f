export { ProviderCertificateAdapter, type AdapterOptions } from './adapter.js';
export { AdapterOptionsError, validateAdapterOptions } from './options.js';
export { type AdapterHooks, type RoundResult, ReconcileRound, type RoundDependencies } from './reconcile-round.js';
export { Reconciler, type ReconcilerOptions } from './reconciler.js';
export { CertificateStatusView } from './certificate-status.js';
export {
  Informer,
  type Watcher,
  type InformerEvent,
  type InformerOptions,
  type InformerStats,
  type ListPage,
  type ListWatchSource,
  type ObjectWithMeta,
} from './informer.js';
export { WatchError } from './watch-state.js';
export { type MonotonicClock, type ScheduledTimer, type TimerScheduler, type Timers, sleep, systemTimers } from './clock.js';
export { ClusterInformers, PROVIDER_SERVICE_SELECTOR, trimSecret, trimService, type InformerScope, type InformerTuning } from './cluster-informers.js';
export { KubeApiError, KubeRestClient, type KubeRestClientOptions, type Query, type WatchHandle, WriteFencedError, corePath } from './rest-client.js';
export { type ClusterConnection, type ConnectionTls, type KubeConfigConnectionOptions, type KubeConfigLike, connectionFromKubeConfig } from './connection.js';
export { RequestCounter, type ApiVerb, classifyRequest } from './request-counter.js';
export { SecretWriter, type SecretLocation, type SecretWriterScope, type WriteOutcome } from './secret-writer.js';
export { EventRecorder, type EventReason, type EventRecorderOptions, type EventRecorderStats, type ServiceReference } from './event-recorder.js';
export { SnapshotBuilder, type BuiltSnapshot } from './snapshot-builder.js';
/** @deprecated Since 0.2: import IssuanceLedger from @eso-mtls/core, where the snapshot assembly that reads it lives. */
export { IssuanceLedger } from '@eso-mtls/core';
export {
  COMPONENT_LABEL,
  DEFAULT_CA_SECRET_NAME,
  DEFAULT_CLIENT_SECRET_NAME,
  INSTALLATION_ANNOTATION,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  type SecretComponent,
  type SecretLike,
  classifyOwnership,
  installationId,
  ownershipMetadata,
} from './ownership.js';
export { Backoff, type BackoffOptions } from './backoff.js';
export { Limiter } from './limiter.js';
export { type Logger, silentLogger } from './logger.js';
export { type ApiErrorInfo, apiErrorOf } from './api-error.js';
export {
  type InClusterOptions,
  type KubeconfigOptions,
  TOKEN_REREAD_MS,
  UnsupportedKubeconfigError,
  loadInClusterConnection,
  loadKubeconfigFile,
} from './kubeconfig.js';
export { PROXY_CONNECT_TIMEOUT_MS, type ProxyChoice, ProxyTunnelAgent, chooseProxy, parseProxyUrl, redactProxyUrl } from './proxy.js';
export { type ProxyEnvironment, proxyFromEnvironment, readProxyEnvironment, usesProxy } from './no-proxy.js';
