/**
 * `@eso-mtls/core`: the side-effect-free certificate lifecycle planner. It observes a snapshot of
 * the cluster, plans rotations under a {@link Policy} and issues certificates through an injected
 * {@link CryptoBackend}; adapters do the I/O. Everything not named here is internal.
 *
 * @packageDocumentation
 * @module @eso-mtls/core
 */
export { type CaChange, type CaLayout, type CaMaterial, type CaPhase, type CaRotationPlan, type CaStatus, type ObservedBundle } from './ca-rotation.js';
export { CertificateCache, type CertificateCacheOptions, type CertificateCacheStats, type KeyCheck } from './cache.js';
export { type CertificateView } from './certificate.js';
export { ConcurrencyLimit } from './concurrency-limit.js';
export {
  CaKeyUnavailableError,
  type CaSigner,
  type CryptoBackend,
  type GeneratedKey,
  type RandomSource,
  type SignatureVerifier,
  type Signer,
} from './crypto.js';
export {
  executePlan,
  type ExecutionContext,
  materializeBundle,
  materializeCaChange,
  type MaterializedCa,
  materializeLeaf,
  type SecretWrite,
} from './execute.js';
export { InvariantChecker, type PeerTarget, type Violation } from './invariants.js';
export { issueCa, issueClientLeaf, type IssueContext, type Issued, IssueError, issueServerLeaf } from './issue.js';
export { IssuanceLedger } from './ledger.js';
export { MemoryStore, StoreConflictError } from './memory-store.js';
export { dnsNamesBytes, fitServiceNames, type FittedServices, MAX_DNS_NAME_BYTES, MAX_SERVER_CERTIFICATE_BYTES } from './name-budget.js';
export {
  CLIENT_COMMON_NAME,
  clientSpiffeId,
  InvalidNameError,
  isDnsLabel,
  isDnsName,
  namespaceDnsNames,
  PROVIDER_LABEL,
  PROVIDER_SECRET_NAME,
  serviceDnsNames,
  type ServiceRef,
} from './names.js';
export { issuePodCertificate, type PodCertificate, type PodIssueResult } from './pod-issue.js';
export { POD_KEY_TYPES, type PodKeyType } from './pod-key.js';
export { MAX_STUB_REQUEST_BYTES } from './stub-request.js';
export { type AllowedNamespaces, type NamespaceRequirement, formatNamespaceRequirement, parseNamespaceRequirement } from './namespace-requirement.js';
export {
  decidePodRequest,
  isExternalName,
  POD_DENY_REASONS,
  type PodDenyReason,
  type PodMetadataView,
  type PodRequestDecision,
  type PodRequestInput,
  type PodRequestView,
  type PodSignerRole,
  type SelectingService,
  serverNames,
} from './pod-request.js';
export { observePublishedBundle, type PublishedBundle, publishedBundleWrite } from './published-bundle.js';
export { MAX_POD_LIFETIME, MIN_POD_LIFETIME, type PodValidity } from './pod-validity.js';
export {
  caKeyField,
  type DataProblem,
  type KeyedCertificate,
  observeCaSecret,
  type Observed,
  type ObservedCaSecret,
  type ObservedLeafSecret,
  observeLeafSecret,
  type SecretData,
  SecretKeys,
} from './observe.js';
export { bundlePem, CertificateParseError, parseCertificate, splitPemCertificates } from './parse.js';
export { decodePemBlocks, encodePem, type PemBlock, PemError } from './pem.js';
export {
  type BundleUpdate,
  type Conflict,
  type DeferredLeaf,
  describeTarget,
  type ExcludedNamespace,
  type ExclusionReason,
  EXCLUSION_REASONS,
  isPlanEmpty,
  type LeafIssuance,
  type Plan,
  type PlanContext,
  planRotation,
  type PlanStatus,
  type RefusalReason,
  type RefusedService,
  type SecretTarget,
  type WaitingLeaf,
} from './plan.js';
export { DEFAULT_POLICY, KEY_ALGORITHMS, type KeyAlgorithm, type Policy, PolicyError, resolvePolicy, validatePolicy } from './policy.js';
export { policyFingerprint } from './policy-fingerprint.js';
export { renewalTime, ROTATION_REASONS, type RotationReason } from './rules.js';
export { seededRandom } from './seeded-random.js';
export { sha256 } from './sha256.js';
export { shown, shownList } from './shown.js';
export {
  type Corruption,
  simulate,
  SimulatedCluster,
  SIMULATION_EPOCH,
  type SimulationEvent,
  type SimulationOptions,
  type SimulationResult,
  type SimulationSummary,
  type TimelineEntry,
} from './simulate.js';
export {
  acknowledgementOf,
  assembleSnapshot,
  EMERGENCY_ROTATION,
  MAX_ROTATE_REQUEST_BYTES,
  type ObservedCluster,
  type Ownership,
  type ProviderNamespace,
  type ProviderService,
  ROTATE_ACKNOWLEDGED_ANNOTATION,
  ROTATE_ANNOTATION,
  rotateRequestProblem,
  type SecretState,
  type Snapshot,
} from './snapshot.js';
export { days, type Duration, formatDuration, hours, type Instant, minutes, seconds } from './time.js';
export { createWebCryptoSigner, type WebCryptoAlgorithm, type WebCryptoKeyUsage, type WebCryptoLike, webCryptoRandom } from './webcrypto.js';
