/**
 * `@eso-mtls/grpc`: the ESO provider protocol over mutual TLS: a provider server with hot-reloaded
 * certificates, health and metrics, and a typed client with a channel pool. Everything not named
 * here is internal.
 *
 * @packageDocumentation
 * @module @eso-mtls/grpc
 */
export { DEFAULT_RETRY_POLICY, NO_RETRY_POLICY, resolveRetryPolicy, RETRYABLE_CODES, type RetryEnvironment, type RetryPolicy } from './client/retry.js';
export { ProviderCallError } from './client/call-error.js';
export {
  CERTIFICATE_PROBLEM_STATUS,
  ClientCertificateRefusedError,
  ExpiredProviderCertificateError,
  ProviderCertificateError,
  ServerNameMismatchError,
  UntrustedProviderCertificateError,
} from './client/certificate-errors.js';
export {
  createSecretStoreProviderClient,
  type ProviderCallOptions,
  type ProviderChannelSource,
  type ProviderClientOptions,
  type SecretStoreProviderClient,
} from './client/typed-client.js';
export { type ServedCertificateSource } from './tls/served-certificate-source.js';
export { type CallObserver } from './server/handlers.js';
export { HealthService, type ServingStatus } from './server/health.js';
export { type ClientIdentityRequirement, peerIdentity, type PeerIdentity } from './server/identity.js';
export { type ProviderLogger, type ProviderLogRecord, stderrProviderLogger } from './tls/provider-log.js';
export { ProviderServerOptionError, type ProviderServerOptions, type ResolvedProviderServerOptions, resolveProviderServerOptions } from './server/options.js';
export { type CallContext, type SecretStoreProvider } from './server/provider.js';
export { type CertificateSourceFactory, type ProviderServer, startProviderServer } from './server/start.js';
export { ProviderChannelPool, type ProviderChannelPoolOptions } from './tls/channel-pool.js';
export {
  type CertificateFailure,
  type ClientMaterialSource,
  parseProviderAddress,
  type ProviderAddress,
  ProviderChannel,
  PROVIDER_CHANNEL_DEFAULTS,
  type ProviderChannelOptions,
  type ProviderChannelStats,
} from './tls/client-channel.js';
export { type ClientMaterialOptions, clientTlsMaterial, type TlsSecretData } from './tls/client-material.js';
export {
  type CertificatePurpose,
  checkTlsMaterial,
  type TlsMaterial,
  type TlsMaterialCheck,
  TlsMaterialError,
  type TlsMaterialPems,
  type TlsMaterialProblem,
} from './tls/material.js';
export { type TlsChainProblem } from './tls/chain-check.js';
export { type HandshakeDiagnosis, type HandshakeProblem } from './tls/handshake-probe.js';
export { CERTIFICATE_LAYOUTS, type CertificateFileNames, type CertificateLayout } from './tls/layout.js';
export { MAX_MOUNTED_FILE_BYTES, MountedFileError, type MountedFileProblem, readMountedFile } from './tls/mounted-file.js';
export {
  MIN_TLS_VERSIONS,
  type MinTlsVersion,
  reloadingCertificateSource,
  ReloadingServerCredentials,
  type ReloadingServerCredentialsOptions,
  TLS12_CIPHERS,
} from './tls/server-credentials.js';
export { NoGoodCertificateError } from './tls/no-good-certificate.js';
export {
  CertificateWatcher,
  type CertificateWatcherOptions,
  type CertificateWatcherStartOptions,
  DEFAULT_CERT_DIR,
  type FailureListener,
  type MaterialListener,
  type ReloadFailure,
} from './tls/watcher.js';
export { ProviderError, SecretNotFoundError } from './wire/errors.js';
export {
  type CapabilitiesRequest,
  type CapabilitiesResponse,
  type DeleteSecretRequest,
  type DeleteSecretResponse,
  type ExternalSecretDataRemoteRef,
  type ExternalSecretFind,
  type FindName,
  type GetAllSecretsRequest,
  type GetAllSecretsResponse,
  type GetSecretMapRequest,
  type GetSecretMapResponse,
  type GetSecretRequest,
  type GetSecretResponse,
  type MessageInit,
  type ProviderErrorMessage,
  type ProviderReference,
  type PushSecretData,
  type PushSecretRemoteRef,
  type PushSecretRequest,
  type PushSecretResponse,
  SECRET_STORE_CAPABILITIES,
  type SecretExistsRequest,
  type SecretExistsResponse,
  type SecretStoreCapabilities,
  type ValidateRequest,
  type ValidateResponse,
} from './wire/messages.js';
export { healthServiceDefinition, loadProtoDefinitions, providerServiceDefinition } from './wire/proto.js';
export {
  methodCodec,
  type MethodCodec,
  PROVIDER_METHOD_NAMES,
  PROVIDER_SERVICE_NAME,
  type ProviderMethodName,
  type ProviderMethods,
  type RawProviderClient,
  type RequestOf,
  type ResponseOf,
} from './wire/service.js';
/** gRPC status codes, re-exported from grpc-js so a provider can throw `new ProviderError(status.NOT_FOUND, ...)`. */
export { status } from './wire/errors.js';
