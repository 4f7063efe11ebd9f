import { toHex } from '../x509/der.js';
import { sha256 } from '../x509/sha256.js';
import type { ProviderService, SecretState } from './snapshot.js';

/*
 * The rotate-request protocol: someone sets `eso-mtls.io/rotate` on a Service, the CA Secret or the
 * client Secret; the write that performs the rotation records its acknowledgement on our Secret,
 * so the same token never asks twice.
 */

/** Annotation on a Service, the CA Secret or the client Secret asking for a forced rotation. */
export const ROTATE_ANNOTATION = 'eso-mtls.io/rotate';
/** Annotation on our own Secret recording the rotation request already acted on. */
export const ROTATE_ACKNOWLEDGED_ANNOTATION = 'eso-mtls.io/rotate-acknowledged';
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
 * performed. The namespace has one certificate, so a token is one request whichever Service carries
 * it: a token already acknowledged for another Service of the namespace asks nothing again (`eso-mtls
 * renew --namespace` annotates each Service in turn, and the controller may act between two of
 * them). A token removed, or a Service gone, asks for nothing. An acknowledgement holds a token as
 * its digest, or as the token itself (what versions before 0.2 wrote, so an upgrade re-issues
 * nothing). Unreadable or oversized acknowledgements count as empty.
 */
export function pendingRotationRequests(services: readonly ProviderService[], acknowledged: string | undefined): string[] {
  const tokens = honouredTokens(services);
  if (tokens.length === 0) return [];
  const done = new Set(Object.values(acknowledged === undefined ? {} : parseAcknowledgement(acknowledged)));
  return tokens.filter(([, token]) => !done.has(token) && !done.has(acknowledgementOf(token))).map(([name]) => name);
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
