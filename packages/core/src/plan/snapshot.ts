import type { ObservedBundle } from '../ca/ca-rotation.js';
import type { AllowedNamespaces } from '../policy/namespace-requirement.js';
import { toHex } from '../x509/hex.js';
import type { IssuanceLedger } from './ledger.js';
import type { SecretData } from './observe.js';
import { sha256 } from '../x509/sha256.js';
import type { Instant } from '../common/time.js';

/**
 * Who a Secret belongs to, as the adapter judges it from labels and the installation annotation.
 * - `managed`: written by this installation; the planner keeps it correct.
 * - `placeholder`: not ours, but every data value is empty (a chart's placeholder): adopted by
 *   issuing into it, keeping its type.
 * - `foreign`: not ours; never written, reported as a conflict.
 */
export type Ownership = 'managed' | 'placeholder' | 'foreign';

/** One Secret as observed. */
export interface SecretState {
  /** The Secret's data, decoded. */
  readonly data: SecretData;
  /** Whether this installation wrote it (see {@link Ownership}). */
  readonly ownership: Ownership;
  /** Its annotations (the rotation request and acknowledgement live here). */
  readonly annotations: Readonly<Record<string, string>>;
  /** The resourceVersion, opaque; echoed into the write planned from it (optimistic concurrency). */
  readonly version?: string;
}

/** A labelled Service, as the planner needs it. */
export interface ProviderService {
  /** The Service's name. */
  readonly name: string;
  /** Value of its `eso-mtls.io/rotate` annotation, if any: a request token for a forced rotation. */
  readonly rotateRequest?: string;
  /**
   * Its creationTimestamp, if known: a namespace's oldest labelled Service dates it, which ranks it
   * under a cap on namespaces (the newest are left out) and among leaves of the same class.
   */
  readonly createdAt?: Instant;
}

/** A provider namespace: its labelled Services and its one `external-secrets-provider-tls` Secret. */
export interface ProviderNamespace {
  /** The namespace's name. */
  readonly namespace: string;
  /** Labelled Services; may be empty (the last one went away: the Secret is then left alone). */
  readonly services: readonly ProviderService[];
  /** Its provider Secret, if one exists. */
  readonly secret?: SecretState;
  /**
   * True when the adapter's issuance ledger has seen a managed Secret in this namespace: an absent
   * Secret is then `secret_missing`, otherwise `initial`.
   */
  readonly previouslyIssued: boolean;
  /**
   * Whether the namespace carries the label of `PlanContext.namespaceRequirement`; read only
   * when that is set, and then a namespace without it (or not known to have it) is not served.
   */
  readonly allowed?: boolean;
}

/** Everything the planner reads: the observed state of the cluster. */
export interface Snapshot {
  /** `eso-provider-ca-internal` in the ESO namespace. */
  readonly caSecret?: SecretState;
  /** The ESO client Secret (tls.crt, tls.key, ca.crt) in the ESO namespace. */
  readonly clientSecret?: SecretState;
  /** As {@link ProviderNamespace.previouslyIssued}, for the client Secret. */
  readonly clientPreviouslyIssued?: boolean;
  /** Every namespace with labelled Services or a provider Secret, sorted by name. */
  readonly namespaces: readonly ProviderNamespace[];
  /**
   * The trust bundles published outside Secrets (pod-certificate mode: our ClusterTrustBundles),
   * which, like every managed Secret's ca.crt, must hold the next CA for propagationDelay before it signs.
   */
  readonly trustBundles?: readonly ObservedBundle[];
}

/** What an adapter (or the memory store) observes, before it becomes a {@link Snapshot}. */
export interface ObservedCluster {
  /** The CA Secret in the ESO namespace, if it exists. */
  readonly caSecret?: SecretState;
  /** The ESO client Secret, if it exists. */
  readonly clientSecret?: SecretState;
  /** Labelled Services, by namespace. */
  readonly services: ReadonlyMap<string, readonly ProviderService[]>;
  /** Each namespace's `external-secrets-provider-tls` Secret, whoever wrote it. */
  readonly providerSecrets: ReadonlyMap<string, SecretState>;
  /** With a namespace requirement: the namespaces that carry its label (see {@link ProviderNamespace.allowed}). */
  readonly allowedNamespaces?: AllowedNamespaces;
}

/**
 * The one way a snapshot is assembled: every namespace with labelled Services or a provider
 * Secret, sorted, each with its Services sorted by name; managed Secrets are recorded in the
 * ledger first, so `previouslyIssued` covers what is seen now as well as what was seen before.
 */
export function assembleSnapshot(cluster: ObservedCluster, ledger: IssuanceLedger): Snapshot {
  if (cluster.clientSecret?.ownership === 'managed') ledger.record('client');
  for (const [namespace, secret] of cluster.providerSecrets) if (secret.ownership === 'managed') ledger.record({ namespace });
  const names = [...new Set([...cluster.services.keys(), ...cluster.providerSecrets.keys()])].sort();
  const namespaces: ProviderNamespace[] = names.map((namespace) => {
    const secret = cluster.providerSecrets.get(namespace);
    const services = [...(cluster.services.get(namespace) ?? [])].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const allowed = cluster.allowedNamespaces === undefined ? {} : { allowed: cluster.allowedNamespaces.has(namespace) };
    return { namespace, services, ...(secret ? { secret } : {}), previouslyIssued: ledger.has({ namespace }), ...allowed };
  });
  return {
    ...(cluster.caSecret ? { caSecret: cluster.caSecret } : {}),
    ...(cluster.clientSecret ? { clientSecret: cluster.clientSecret } : {}),
    clientPreviouslyIssued: ledger.has('client'),
    namespaces,
  };
}

/** Annotation on a Service, the CA Secret or the client Secret asking for a forced rotation. */
export const ROTATE_ANNOTATION = 'eso-mtls.io/rotate';
/** Annotation on our own Secret recording the rotation request already acted on. */
export const ROTATE_ACKNOWLEDGED_ANNOTATION = 'eso-mtls.io/rotate-acknowledged';
/**
 * Annotation on the leaf Secrets we write: since when their ca.crt has held every certificate it
 * holds (RFC 3339), set by each write that adds one. The next CA signs only once every bundle has
 * held it for propagationDelay since that instant.
 */
export const BUNDLE_WRITTEN_AT_ANNOTATION = 'eso-mtls.io/bundle-written-at';
/**
 * Annotation on the CA Secret: since when its active CA has signed (RFC 3339), set by each write
 * that makes a CA active. In pod-certificate mode a retired CA stays trusted until every pod
 * certificate it signed has expired: at most this instant plus the longest pod certificate.
 */
export const ACTIVE_SINCE_ANNOTATION = 'eso-mtls.io/active-since';
/** `eso-mtls.io/rotate` value on the CA Secret that asks for a hard cut-over (suspected key compromise). */
export const EMERGENCY_ROTATION = 'emergency';

/** True for `emergency` and `emergency:<anything>` (the suffix lets an emergency be asked for again). */
export function isEmergencyRequest(request: string | undefined): boolean {
  return request === EMERGENCY_ROTATION || (request?.startsWith(`${EMERGENCY_ROTATION}:`) ?? false);
}

/**
 * The longest `eso-mtls.io/rotate` value honoured on a Service, in UTF-8 bytes: room for a
 * timestamp, a UUID or a short note. A longer one is ignored and reported, never copied.
 */
export const MAX_ROTATE_REQUEST_BYTES = 128;

// Stateless, deterministic builtin (see der.ts).
const utf8 = new TextEncoder();

/** Why a Service's `eso-mtls.io/rotate` value is ignored; undefined when it is absent, empty or honoured. */
export function rotateRequestProblem(request: string | undefined): string | undefined {
  if (request === undefined || request === '') return undefined;
  // UTF-8 is never shorter than the UTF-16 length: a long value is refused without being encoded.
  if (request.length <= MAX_ROTATE_REQUEST_BYTES && utf8.encode(request).length <= MAX_ROTATE_REQUEST_BYTES) return undefined;
  return `its annotation ${ROTATE_ANNOTATION} is longer than ${MAX_ROTATE_REQUEST_BYTES} bytes and is ignored; use a short token such as a timestamp`;
}

/** The acknowledgement recorded for one token: `sha256:` and 32 hex digits, whatever the token. */
export function acknowledgementOf(token: string): string {
  return `sha256:${toHex(sha256(utf8.encode(token)).subarray(0, 16))}`;
}

/** The honoured, non-empty tokens of `services`, by Service name. */
function honouredTokens(services: readonly ProviderService[]): [string, string][] {
  return services
    .filter((s) => s.rotateRequest !== undefined && s.rotateRequest !== '' && rotateRequestProblem(s.rotateRequest) === undefined)
    .map((s): [string, string] => [s.name, s.rotateRequest!])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * The acknowledgement of a namespace's rotation requests, recorded on its Secret when it is
 * issued: a JSON object of each Service's token digest, keys sorted so the text is deterministic,
 * and bounded whatever the tokens; undefined when no Service asks. `services` are the Services
 * the certificate serves.
 */
export function namespaceRotationRequest(services: readonly ProviderService[]): string | undefined {
  const entries = honouredTokens(services).map(([name, token]) => [name, acknowledgementOf(token)] as const);
  return entries.length === 0 ? undefined : JSON.stringify(Object.fromEntries(entries));
}

/**
 * The Services whose honoured token `acknowledged` does not hold: they asked for a rotation not yet
 * performed. A token removed, or a Service gone, asks for nothing. An acknowledgement holds a token
 * as its digest, or as the token itself (what versions before 0.2 wrote, so an upgrade re-issues
 * nothing). Unreadable or oversized acknowledgements count as empty.
 */
export function pendingRotationRequests(services: readonly ProviderService[], acknowledged: string | undefined): string[] {
  const tokens = honouredTokens(services);
  if (tokens.length === 0) return [];
  const done = acknowledged === undefined ? {} : parseAcknowledgement(acknowledged);
  return tokens.filter(([name, token]) => done[name] !== token && done[name] !== acknowledgementOf(token)).map(([name]) => name);
}

// Kubernetes caps all annotations of an object at 256 KiB; anything larger is not ours.
const MAX_ACKNOWLEDGEMENT_LENGTH = 256 * 1024;

function parseAcknowledgement(text: string): Record<string, string> {
  if (text.length > MAX_ACKNOWLEDGEMENT_LENGTH) return {};
  try {
    const value: unknown = JSON.parse(text);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return {};
    return Object.fromEntries(Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch {
    return {};
  }
}

/**
 * A Secret-level request (CA or client Secret): pending when set and not acknowledged, as the token
 * itself (what versions before 0.2 always wrote) or as its {@link secretAcknowledgement}.
 */
export function secretRotationRequest(secret: SecretState | undefined): string | undefined {
  const request = secret?.annotations[ROTATE_ANNOTATION];
  if (request === undefined || request === '') return undefined;
  const acknowledged = secret?.annotations[ROTATE_ACKNOWLEDGED_ANNOTATION];
  return acknowledged === request || acknowledged === secretAcknowledgement(request) ? undefined : request;
}

/**
 * The acknowledgement recorded for a Secret-level request: the token itself, or its digest when it
 * is longer than MAX_ROTATE_REQUEST_BYTES, so that acknowledging a large token never doubles it
 * past the apiserver's 256 KiB cap on an object's annotations (the write would fail every time).
 */
export function secretAcknowledgement(request: string): string {
  return rotateRequestProblem(request) === undefined ? request : acknowledgementOf(request);
}
