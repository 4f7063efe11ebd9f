import { toHex } from '../x509/der.js';
import type { Policy } from './policy.js';
import { sha256 } from '../x509/sha256.js';

/**
 * The policy fields that decide what is issued (names, lifetimes, keys) and when it is renewed.
 * Timings of the controller itself (reconcile interval, propagation delay, connection age) are
 * left out: two controllers differing only there issue the same certificates.
 */
const ISSUING_FIELDS = [
  'esoNamespace',
  'clusterDomain',
  'serviceAccount',
  'keyAlgorithm',
  'caValidity',
  'caLookahead',
  'leafValidity',
  'leafLookahead',
  'leafJitter',
  'notBeforeBackdate',
] as const satisfies readonly (keyof Policy)[];

/**
 * A short, stable fingerprint of the issuing policy (12 hex digits of SHA-256 over the fields
 * that shape what is issued), recorded on every Secret we write: two controllers that disagree on
 * it would each re-issue the other's certificates, and the fingerprint shows that at a glance.
 */
export function policyFingerprint(policy: Policy): string {
  // A fixed field order and a version prefix: the value must not change between releases unless the fields do.
  const canonical = `v1\n${ISSUING_FIELDS.map((f) => `${f}=${String(policy[f])}`).join('\n')}`;
  return toHex(sha256(new TextEncoder().encode(canonical))).slice(0, 12);
}
