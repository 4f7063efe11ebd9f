/**
 * `@eso-mtls/core`: the side-effect-free certificate lifecycle planner. It observes a snapshot of
 * the cluster, plans rotations under a {@link Policy} and issues certificates through an injected
 * {@link CryptoBackend}; adapters do the I/O. Everything not named here is internal.
 *
 * @packageDocumentation
 * @module @eso-mtls/core
 */
export { type CaChange, type CaRotationPlan, type CaStatus } from './ca/ca-rotation.js';
export { type CaLayout, type CaMaterial } from './ca/ca-layout.js';
export { type CaPhase } from './ca/ca-phases.js';
export {
  CA_REQUEST_ANNOTATION,
  CA_REQUEST_RETRY,
  CA_SOURCE_ANNOTATION,
  MIN_INTERMEDIATE_REMAINING,
  PENDING_KEY_FIELDS,
  SELF_SIGNED_SOURCE,
  type UpstreamProblem,
  type UpstreamProblemReason,
} from './ca/upstream.js';
export { type CaRequestAction, type UpstreamPlan } from './ca/upstream-plan.js';
export { type CaRequestObservation, type CaRequestState, type UpstreamObservation, type UpstreamText } from './secret/upstream-observation.js';
export { caRequestName, type CaRequestMaterial, materializeCaRequest } from './plan/ca-request.js';
export { anchorOf, servedIntermediates } from './x509/ca-path.js';
export { refusalGrace } from './ca/left-behind.js';
export { CertificateCache, type CertificateCacheOptions, type CertificateCacheStats, type KeyCheck } from './crypto/cache.js';
export { type CertificateView, type KeyedCertificate } from './x509/certificate.js';
export { ConcurrencyLimit } from './common/concurrency-limit.js';
export { CHAIN_REFUSAL_REASONS, type ChainRefusal, type ChainRefusalReason } from './x509/chain-rules.js';
export {
  type ChainInput,
  chainNotAfter,
  type ChainPemReading,
  type ChainVerification,
  clampNotAfter,
  MAX_ANCHOR_CERTIFICATES,
  MAX_CHAIN_CERTIFICATES,
  MAX_CHAIN_PEM_BYTES,
  readChainPem,
  type VerifiedChain,
  verifyChain,
} from './x509/chain.js';
export {
  type CaRequestOptions,
  CERTIFICATE_REQUEST_LABEL,
  type CertificationRequest,
  CertificationRequestError,
  type CertificationRequestView,
  encodeCaCertificationRequest,
  isCertificationRequestSigned,
  readCertificationRequest,
} from './x509/certification-request.js';
export {
  CaKeyUnavailableError,
  type CaSigner,
  type CryptoBackend,
  type GeneratedKey,
  type RandomSource,
  seededRandom,
  type SignatureVerifier,
  type Signer,
} from './crypto/crypto.js';
export {
  executePlan,
  type ExecutionContext,
  materializeBundle,
  materializeCaChange,
  type MaterializedCa,
  materializeLeaf,
  type SecretWrite,
} from './plan/execute.js';
export { InvariantChecker, type PeerTarget, type Violation } from './simulation/invariants.js';
export { issueCa, issueClientLeaf, type IssueContext, type Issued, IssueError, issueServerLeaf } from './crypto/issue.js';
export { MemoryStore, StoreConflictError } from './simulation/memory-store.js';
export { dnsNamesBytes, fitServiceNames, type FittedServices, MAX_DNS_NAME_BYTES, MAX_SERVER_CERTIFICATE_BYTES } from './x509/name-budget.js';
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
} from './x509/names.js';
export { issuePodCertificate, type PodCertificate, type PodIssueResult } from './pod/pod-issue.js';
export { POD_KEY_TYPES, type PodKeyType } from './pod/pod-key.js';
export { MAX_STUB_REQUEST_BYTES } from './pod/stub-request.js';
export { type AllowedNamespaces, type NamespaceRequirement, formatNamespaceRequirement, parseNamespaceRequirement } from './policy/namespace-requirement.js';
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
} from './pod/pod-request.js';
export { observePublishedBundle, type PublishedBundle, publishedBundleWrite } from './plan/published-bundle.js';
export { MAX_POD_LIFETIME, MIN_POD_LIFETIME, type PodValidity } from './pod/pod-validity.js';
export { type DataProblem, type Observed } from './common/observed.js';
export {
  caKeyField,
  observeCaSecret,
  type ObservedBundle,
  type ObservedCaSecret,
  type ObservedLeafSecret,
  observeLeafSecret,
  type SecretData,
  SecretKeys,
} from './secret/observe.js';
export { bundlePem, CertificateParseError, parseCertificate, splitPemCertificates } from './x509/parse.js';
export { decodePemBlocks, encodePem, type PemBlock, PemError } from './x509/pem.js';
export { type SubjectAttributes } from './x509/distinguished-name.js';
export { type Extension, KEY_USAGE_NAMES, type KeyUsageName } from './x509/extensions.js';
export { type SignatureCheck } from './x509/signature-check.js';
export { planRotation } from './plan/plan.js';
export {
  type BundleUpdate,
  type Conflict,
  type DeferredLeaf,
  type ExcludedNamespace,
  type ExclusionReason,
  EXCLUSION_REASONS,
  isPlanEmpty,
  type LeafIssuance,
  type LeftBehindNamespace,
  type Plan,
  type PlanContext,
  type PlanStatus,
  type RefusalReason,
  type RefusedService,
  type WaitingLeaf,
} from './plan/vocabulary.js';
export { describeTarget, IssuanceLedger, type SecretTarget } from './secret/target.js';
export { DEFAULT_POLICY, KEY_ALGORITHMS, type KeyAlgorithm, type Policy, PolicyError, resolvePolicy, validatePolicy } from './policy/policy.js';
export { policyFingerprint } from './policy/policy-fingerprint.js';
export { renewalTime, ROTATION_REASONS, type RotationReason } from './policy/rules.js';
export { DEFAULT_LEAF_KEY_POOL_SIZE, type LeafKeyPoolReport } from './simulation/key-pool.js';
export { sha256 } from './x509/sha256.js';
export { truncate, truncateList } from './common/truncate.js';
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
} from './simulation/simulate.js';
export {
  assembleSnapshot,
  type ObservedCluster,
  type Ownership,
  type ProviderNamespace,
  type ProviderService,
  type SecretState,
  type Snapshot,
  type WriteRefusal,
  type WriteRefusalReason,
  WRITE_REFUSAL_REASONS,
} from './secret/snapshot.js';
export {
  acknowledgementOf,
  EMERGENCY_ROTATION,
  MAX_ROTATE_REQUEST_BYTES,
  ROTATE_ACKNOWLEDGED_ANNOTATION,
  ROTATE_ANNOTATION,
  rotateRequestProblem,
} from './secret/rotate-request.js';
export { days, type Duration, formatDuration, hours, type Instant, minutes, seconds } from './common/time.js';
export { createWebCryptoSigner, type WebCryptoAlgorithm, type WebCryptoKeyUsage, type WebCryptoLike, webCryptoRandom } from './crypto/webcrypto.js';
