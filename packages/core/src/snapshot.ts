import type { SecretData } from './observe.js';

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
  readonly data: SecretData;
  readonly ownership: Ownership;
  readonly annotations: Readonly<Record<string, string>>;
  /** The resourceVersion, opaque; echoed into the write planned from it (optimistic concurrency). */
  readonly version?: string;
}

/** A labelled Service, as the planner needs it. */
export interface ProviderService {
  readonly name: string;
  /** Value of its `eso-mtls.io/rotate` annotation, if any: a request token for a forced rotation. */
  readonly rotateRequest?: string;
}

/** A provider namespace: its labelled Services and its one `external-secrets-provider-tls` Secret. */
export interface ProviderNamespace {
  readonly namespace: string;
  /** Labelled Services; may be empty (the last one went away: the Secret is then left alone). */
  readonly services: readonly ProviderService[];
  readonly secret?: SecretState;
  /**
   * True when the adapter's issuance ledger has seen a managed Secret in this namespace: an absent
   * Secret is then `secret_missing`, otherwise `initial`.
   */
  readonly previouslyIssued: boolean;
}

/** Everything the planner reads: the observed state of the cluster. */
export interface Snapshot {
  /** `eso-provider-ca-internal` in the ESO namespace. */
  readonly caSecret?: SecretState;
  /** The ESO client Secret (tls.crt, tls.key, ca.crt) in the ESO namespace. */
  readonly clientSecret?: SecretState;
  /** As {@link ProviderNamespace.previouslyIssued}, for the client Secret. */
  readonly clientPreviouslyIssued?: boolean;
  readonly namespaces: readonly ProviderNamespace[];
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
/** `eso-mtls.io/rotate` value on the CA Secret that asks for a hard cut-over (suspected key compromise). */
export const EMERGENCY_ROTATION = 'emergency';

/** True for `emergency` and `emergency:<anything>` (the suffix lets an emergency be asked for again). */
export function isEmergencyRequest(request: string | undefined): boolean {
  return request === EMERGENCY_ROTATION || (request?.startsWith(`${EMERGENCY_ROTATION}:`) ?? false);
}

/**
 * A namespace's rotation request: the JSON object of each labelled Service's non-empty
 * `eso-mtls.io/rotate` token, keys sorted so the text is deterministic; undefined when none has one.
 */
export function namespaceRotationRequest(services: readonly ProviderService[]): string | undefined {
  const entries = services
    .filter((s) => s.rotateRequest !== undefined && s.rotateRequest !== '')
    .map((s) => [s.name, s.rotateRequest!] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return entries.length === 0 ? undefined : JSON.stringify(Object.fromEntries(entries));
}

/**
 * True when `request` (from {@link namespaceRotationRequest}) holds a token that `acknowledged`
 * does not: a Service asked for a rotation not yet performed. A token removed, or a Service gone,
 * asks for nothing. Unreadable acknowledgements count as empty.
 */
export function isRotationRequestPending(request: string | undefined, acknowledged: string | undefined): boolean {
  if (request === undefined) return false;
  const wanted = parseTokens(request);
  const done = acknowledged === undefined ? {} : parseTokens(acknowledged);
  return Object.entries(wanted).some(([service, token]) => done[service] !== token);
}

function parseTokens(text: string): Record<string, string> {
  try {
    const value: unknown = JSON.parse(text);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return {};
    return Object.fromEntries(Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch {
    return {};
  }
}

/** A Secret-level request (CA or client Secret): pending when set and different from the acknowledged value. */
export function secretRotationRequest(secret: SecretState | undefined): string | undefined {
  const request = secret?.annotations[ROTATE_ANNOTATION];
  if (request === undefined || request === '' || secret?.annotations[ROTATE_ACKNOWLEDGED_ANNOTATION] === request) return undefined;
  return request;
}
