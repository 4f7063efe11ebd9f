import { isDnsLabel, isDnsName } from '../x509/names.js';
import { type Duration, days, formatDuration, minutes } from '../common/time.js';

/** Key algorithms the signer can generate. Every issuance uses a fresh key. */
export type KeyAlgorithm = 'ECDSA-P256' | 'RSA-2048' | 'RSA-3072';
/** All accepted {@link KeyAlgorithm} values. */
export const KEY_ALGORITHMS: readonly KeyAlgorithm[] = ['ECDSA-P256', 'RSA-2048', 'RSA-3072'];

/** Everything that decides when and how certificates are issued. All durations are milliseconds. */
export interface Policy {
  /** Namespace of ESO core, home of the CA and client Secrets. */
  readonly esoNamespace: string;
  /** Cluster DNS domain used in the fully qualified SAN and the client SPIFFE ID. */
  readonly clusterDomain: string;
  /** Service account of ESO core, part of the client certificate's URI SAN. */
  readonly serviceAccount: string;
  /** Lifetime of a CA certificate. */
  readonly caValidity: Duration;
  /** A CA enters rotation this long before its notAfter. */
  readonly caLookahead: Duration;
  /** Lifetime of a server or client leaf (clamped to its CA's notAfter). */
  readonly leafValidity: Duration;
  /** A leaf is re-issued this long before its notAfter ... */
  readonly leafLookahead: Duration;
  /** ... plus up to this much more, derived from its serial, so leaves issued together spread out. */
  readonly leafJitter: Duration;
  /** notBefore is set this far in the past, for clock skew between nodes. */
  readonly notBeforeBackdate: Duration;
  /** The safety-net reconcile period. */
  readonly reconcileInterval: Duration;
  /** Longest time a Secret update takes to reach every pod that mounts it (kubelet sync + cache). */
  readonly propagationDelay: Duration;
  /** Longest life of a gRPC connection (the provider server's max connection age + grace). */
  readonly maxConnectionAge: Duration;
  /** Algorithm of every newly generated key. */
  readonly keyAlgorithm: KeyAlgorithm;
}

/** The design's defaults, plus ours for what the design leaves open. */
export const DEFAULT_POLICY: Policy = Object.freeze({
  esoNamespace: 'external-secrets-system',
  clusterDomain: 'cluster.local',
  serviceAccount: 'external-secrets',
  caValidity: days(365),
  caLookahead: days(60),
  leafValidity: days(90),
  leafLookahead: days(35),
  leafJitter: days(3),
  notBeforeBackdate: minutes(5),
  reconcileInterval: minutes(10),
  // The kubelet's sync period (60 s by default) plus its Secret cache TTL, with margin.
  propagationDelay: minutes(5),
  // The provider server's default max connection age (20 min) plus its grace (10 min).
  maxConnectionAge: minutes(30),
  keyAlgorithm: 'ECDSA-P256',
});

/** A policy value that makes no sense; the message names the field, its value and the rule. */
export class PolicyError extends Error {
  /** Always `PolicyError`. */
  override readonly name = 'PolicyError';
  constructor(
    /** The policy field that is wrong. */
    readonly field: keyof Policy,
    /** Its value. */
    readonly value: unknown,
    rule: string,
  ) {
    super(`invalid policy: ${field}=${typeof value === 'number' ? formatDuration(value) : JSON.stringify(value)}: ${rule}`);
  }
}

const DURATIONS = [
  'caValidity',
  'caLookahead',
  'leafValidity',
  'leafLookahead',
  'leafJitter',
  'notBeforeBackdate',
  'reconcileInterval',
  'propagationDelay',
  'maxConnectionAge',
] as const satisfies readonly (keyof Policy)[];

/**
 * Merges `overrides` over {@link DEFAULT_POLICY} and validates the result, throwing
 * {@link PolicyError} for the first value that would break rotation.
 */
export function resolvePolicy(overrides: Partial<Policy> = {}): Policy {
  const defined = Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined));
  const policy: Policy = Object.freeze({ ...DEFAULT_POLICY, ...defined });
  validatePolicy(policy);
  return policy;
}

/** Throws {@link PolicyError} if `p` is not a usable policy. */
export function validatePolicy(p: Policy): void {
  for (const field of DURATIONS) {
    const v = p[field];
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || !Number.isInteger(v)) {
      throw new PolicyError(field, v, 'must be a non-negative whole number of milliseconds');
    }
  }
  for (const field of ['caValidity', 'leafValidity', 'reconcileInterval'] as const) {
    if (p[field] < 1000) throw new PolicyError(field, p[field], 'must be at least one second');
  }
  if (!isDnsName(p.clusterDomain)) {
    throw new PolicyError('clusterDomain', p.clusterDomain, 'must be a DNS name such as cluster.local');
  }
  if (!isDnsLabel(p.esoNamespace)) throw new PolicyError('esoNamespace', p.esoNamespace, 'must be a DNS-1123 label');
  if (!isDnsName(p.serviceAccount)) throw new PolicyError('serviceAccount', p.serviceAccount, 'must be a DNS-1123 name');
  if (!(KEY_ALGORITHMS as readonly string[]).includes(p.keyAlgorithm)) {
    throw new PolicyError('keyAlgorithm', p.keyAlgorithm, `must be one of ${KEY_ALGORITHMS.join(', ')}`);
  }
  if (p.leafValidity > p.caValidity) {
    throw new PolicyError('leafValidity', p.leafValidity, `must not exceed caValidity (${formatDuration(p.caValidity)})`);
  }
  if (p.leafLookahead + p.leafJitter >= p.leafValidity) {
    throw new PolicyError(
      'leafLookahead',
      p.leafLookahead,
      `plus leafJitter must be below leafValidity (${formatDuration(p.leafValidity)}), or every leaf is due at birth`,
    );
  }
  // A leaf must be renewed with at least a day to spare even if a reconcile is just missed, and
  // the replaced leaf is still served until the new one has propagated.
  const minLeafLead = days(1) + p.reconcileInterval + p.propagationDelay;
  if (p.leafLookahead - p.leafJitter < minLeafLead) {
    throw new PolicyError(
      'leafLookahead',
      p.leafLookahead,
      `minus leafJitter (${formatDuration(p.leafJitter)}) must be at least 1 day plus reconcileInterval plus propagationDelay (${formatDuration(minLeafLead)})`,
    );
  }
  // Leaves re-issued when the CA rotates are clamped to the new CA's notAfter; the old CA's leaves
  // must not enter their own lookahead before the rotation has replaced them.
  const minCaLead = p.leafLookahead + p.leafJitter + p.propagationDelay + p.maxConnectionAge + p.reconcileInterval;
  if (p.caLookahead < minCaLead) {
    throw new PolicyError(
      'caLookahead',
      p.caLookahead,
      `must be at least leafLookahead + leafJitter + propagationDelay + maxConnectionAge + reconcileInterval (${formatDuration(minCaLead)})`,
    );
  }
  if (p.caLookahead >= p.caValidity) {
    throw new PolicyError('caLookahead', p.caLookahead, `must be below caValidity (${formatDuration(p.caValidity)})`);
  }
  if (p.notBeforeBackdate >= p.leafValidity) {
    throw new PolicyError('notBeforeBackdate', p.notBeforeBackdate, 'must be below leafValidity');
  }
}
