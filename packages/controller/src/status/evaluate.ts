import {
  type CertificateCache,
  type CertificateView,
  type Instant,
  type Observed,
  type KeyedCertificate,
  type SecretData,
  caKeyField,
  SecretKeys,
  IssuanceLedger,
  type Plan,
  PROVIDER_LABEL,
  PROVIDER_SECRET_NAME,
  type SecretState,
  type SecretTarget,
  describeTarget,
  formatDuration,
  formatNamespaceRequirement,
  observeCaSecret,
  observeLeafSecret,
  planRotation,
  renewalTime,
  type ExclusionReason,
} from '@eso-mtls/core';
import { SnapshotBuilder, type SnapshotSource, planContext } from '@eso-mtls/kubernetes';
import { type TokenKeys, isTokenReference } from './ca-keys.js';
import type { ClusterState, SecretRead } from './cluster-state.js';
import { evaluatePodCertificates, observedTrustBundles, pendingThreshold } from './evaluate-pod-certificates.js';
import { evaluateLease } from './evaluate-lease.js';
import { evaluateUpstream, plannedUpstream } from './evaluate-upstream.js';
import { statusExitCode } from './exit-codes.js';
import type { AssumedInstallation } from './options.js';
import type {
  CaCertificateReport,
  CaKeyReport,
  CaReport,
  CertificateFacts,
  ClientReport,
  LeafReport,
  NamespaceReport,
  PolicyReport,
  Problem,
  ProblemKind,
  StatusReport,
} from './report.js';

const DAY = 86_400_000;
const iso = (t: Instant): string => new Date(t).toISOString();

/** The public facts of a certificate; nothing else of it leaves this function. */
function facts(c: CertificateView, now: Instant): CertificateFacts {
  return {
    subject: c.subject,
    issuer: c.issuer,
    serialNumber: c.serialNumber,
    notBefore: iso(c.notBefore),
    notAfter: iso(c.notAfter),
    daysLeft: Math.floor((c.notAfter - now) / DAY),
  };
}

/** The cluster as read, in the shape the controller's SnapshotBuilder reads its informer caches. */
function snapshotSource(state: ClusterState, assumed: AssumedInstallation): SnapshotSource {
  const esoSecret = (name: string, read: SecretRead) => ({
    get: (namespace: string, n: string) => (namespace === assumed.esoNamespace && n === name && read.kind === 'read' ? read.secret : undefined),
  });
  const allowed = state.allowedNamespaces?.kind === 'read' ? state.allowedNamespaces.names : undefined;
  return {
    services: { list: () => state.services },
    providerSecrets: { list: () => state.providerSecrets },
    caSecret: esoSecret(assumed.caSecretName, state.caSecret),
    clientSecret: esoSecret(assumed.clientSecretName, state.clientSecret),
    ...(allowed ? { allowedNamespaces: allowed } : {}),
  };
}

/** The problem of a namespace the plan leaves out, by the rule that left it out. */
const EXCLUSION_PROBLEM: Readonly<Record<ExclusionReason, ProblemKind>> = { cap: 'not_served', not_allowed: 'not_allowed' };

/** What a CA that status could not read leaves unknown: signature checks against it are not made. */
const CA_REASONS = new Set(['ca_mismatch', 'ca_rotated']);

/** Everything one leaf evaluation needs besides the Secret. */
interface LeafContext {
  readonly now: Instant;
  readonly assumed: AssumedInstallation;
  readonly plan: Plan;
  readonly cache: CertificateCache;
  /** The CA that signs now; undefined when there is none usable. */
  readonly activeCa?: CertificateView;
  /** The CA Secret could not be read. */
  readonly caUnknown: boolean;
}

const sameTarget = (a: SecretTarget, b: SecretTarget): boolean => describeTarget(a) === describeTarget(b);

/**
 * The facts and problems of one leaf Secret, from the core's own observation of it and the plan's
 * verdict on it. The observed private key is used by observeLeafSecret to check it matches; it is
 * not copied into the report.
 */
function evaluateLeaf(target: SecretTarget, label: string, secret: SecretState | undefined, ctx: LeafContext): Omit<LeafReport, 'secret' | 'checked'> {
  const { now, plan, cache } = ctx;
  const problems: Problem[] = [];
  const result: { -readonly [K in keyof LeafReport]?: LeafReport[K] } = {};
  const conflicts = plan.conflicts.filter((c) => sameTarget(c.target, target));
  if (secret === undefined) problems.push({ kind: 'missing', message: `${label}: the Secret does not exist; the controller issues it` });
  else if (secret.ownership === 'placeholder')
    problems.push({ kind: 'missing', message: `${label}: the Secret is an empty placeholder the controller has not adopted yet` });
  else if (secret.ownership === 'foreign') {
    const message = conflicts.shift()?.message ?? `${label}: the Secret was not written by this installation; it is left alone`;
    problems.push({ kind: 'foreign', message });
  } else {
    const observed = observeLeafSecret(secret.data, cache);
    if (!observed.leaf.ok) problems.push({ kind: 'invalid', message: `${label}: ${observed.leaf.problem}: ${observed.leaf.detail}` });
    if (!observed.bundle.ok) problems.push({ kind: 'invalid', message: `${label}: ca.crt: ${observed.bundle.problem}: ${observed.bundle.detail}` });
    if (observed.leaf.ok) {
      const leaf = observed.leaf.value.certificate;
      result.certificate = facts(leaf, now);
      if (leaf.notAfter <= now) problems.push({ kind: 'expired', message: `${label}: the certificate expired at ${iso(leaf.notAfter)}` });
      result.signedByActiveCa = ctx.caUnknown ? null : ctx.activeCa !== undefined && cache.isSignedBy(leaf, ctx.activeCa);
      result.chainsToBundle = observed.bundle.ok && observed.bundle.value.some((ca) => cache.isSignedBy(leaf, ca));
      result.bundleCurrent = ctx.caUnknown || plan.bundle === undefined ? null : observed.bundleText === plan.bundle;
      result.nextRotation = { at: iso(renewalTime(leaf, ctx.assumed.policy)), reason: 'expiring' };
    }
    if (!ctx.caUnknown && plan.bundles.some((b) => sameTarget(b.target, target))) {
      problems.push({ kind: 'pending', message: `${label}: its ca.crt is not the bundle of the CA Secret yet; the controller rewrites it` });
    }
  }
  for (const c of conflicts) problems.push({ kind: 'conflict', message: c.message });
  const issuance = plan.leaves.find((l) => sameTarget(l.target, target));
  const waiting = plan.waiting.find((w) => sameTarget(w.target, target));
  const due = issuance ?? waiting;
  if (due && !(ctx.caUnknown && CA_REASONS.has(due.reason))) {
    result.nextRotation = { ...(issuance ? { at: iso(now) } : waiting?.until ? { at: iso(waiting.until) } : {}), reason: due.reason, message: due.message };
    if (due.reason === 'ca_mismatch') problems.push({ kind: 'untrusted', message: due.message });
    else if (!['invalid', 'secret_missing', 'initial'].includes(due.reason))
      problems.push({ kind: 'pending', message: `${due.message} (reason ${due.reason}): due now, the controller has not made this write yet` });
  }
  return { ...result, problems };
}

const REFERENCE_FIELDS = { active: SecretKeys.caKeyReference, next: SecretKeys.nextKeyReference } as const;
const text = (v: SecretData[string]): string => (v === undefined ? '' : typeof v === 'string' ? v : new TextDecoder().decode(v));

/**
 * A CA slot whose key is a reference to a PKCS#11 token: whether the token holds it, or why that
 * was not checked. A token status was not told of is not a problem (the controller holds the
 * token, not the person running status); one it was told of and could not ask is.
 */
function tokenKey(
  slot: 'active' | 'next',
  data: SecretData,
  pair: Observed<KeyedCertificate> | undefined,
  keys: TokenKeys,
): { report: CaKeyReport; problem?: Problem } | undefined {
  const field = caKeyField(data, slot);
  const reference = text(data[field]);
  if (field !== REFERENCE_FIELDS[slot] || !isTokenReference(reference)) return undefined;
  const base = { slot, field };
  if (keys.token === undefined) {
    const detail = "key in a PKCS#11 token, not checked: give status the controller's --hsm-module, --hsm-token-label and PIN to check it";
    return { report: { ...base, checked: false, detail } };
  }
  if (!pair?.ok) return { report: { ...base, checked: false, detail: `not checked: the ${slot} CA certificate is unusable` } };
  const why = keys.unavailable(reference);
  if (why === undefined) return { report: { ...base, checked: true, detail: `the token ${keys.token} holds the key of this CA` } };
  const detail = `the token ${keys.token} could not be asked about the ${slot} CA's key (${field}): ${why}`;
  return {
    report: { ...base, checked: false, detail },
    problem: { kind: 'unreachable', message: `${detail}; if the controller sees the same, it cannot sign (docs/hsm.md)` },
  };
}

/** The CA Secret: its certificates, what is wrong with it, and the CA write due now. */
function evaluateCa(
  secretName: string,
  read: SecretRead,
  state: SecretState | undefined,
  ctx: Omit<LeafContext, 'activeCa' | 'caUnknown'> & { readonly keys: TokenKeys },
): CaReport & { activeCa?: CertificateView } {
  const { now, plan, cache } = ctx;
  if (read.kind === 'unreadable') return { secret: secretName, checked: false, unchecked: read.why, certificates: [], problems: [] };
  const problems: Problem[] = [];
  const certificates: CaCertificateReport[] = [];
  const keys: CaKeyReport[] = [];
  let activeCa: CertificateView | undefined;
  if (state === undefined) problems.push({ kind: 'missing', message: `the CA Secret ${secretName} does not exist; the controller creates it` });
  else if (state.ownership === 'placeholder')
    problems.push({ kind: 'missing', message: `the CA Secret ${secretName} is an empty placeholder not adopted yet` });
  else if (state.ownership === 'foreign') {
    const conflict = plan.conflicts.find((c) => c.target === 'ca');
    problems.push({ kind: 'foreign', message: `${secretName}: ${conflict?.message ?? 'not written by this installation'}` });
  } else {
    const observed = observeCaSecret(state.data, cache);
    if (observed.active === undefined) problems.push({ kind: 'invalid', message: `the CA Secret ${secretName} holds no active CA (ca.crt, ca.key)` });
    for (const [slot, pair] of [
      ['active', observed.active],
      ['next', observed.next],
    ] as const) {
      const key = tokenKey(slot, state.data, pair, ctx.keys);
      if (key) keys.push(key.report);
      if (key?.problem) problems.push(key.problem);
      if (pair === undefined) continue;
      if (!pair.ok) {
        problems.push({ kind: 'invalid', message: `the CA Secret ${secretName}, ${slot} CA: ${pair.problem}: ${pair.detail}` });
        continue;
      }
      const c = pair.value.certificate;
      certificates.push({ slot, ...facts(c, now) });
      if (slot === 'active') activeCa = c;
      if (c.notAfter <= now) problems.push({ kind: 'expired', message: `the ${slot} CA (${c.subject}) expired at ${iso(c.notAfter)}` });
    }
    if (observed.retired?.ok) for (const c of observed.retired.value) certificates.push({ slot: 'retired', ...facts(c, now) });
    else if (observed.retired)
      problems.push({ kind: 'invalid', message: `the CA Secret ${secretName}, retired.crt: ${observed.retired.problem}: ${observed.retired.detail}` });
  }
  const due = plan.ca && { phases: plan.ca.phases, ...(plan.ca.reason ? { reason: plan.ca.reason } : {}), message: plan.ca.message };
  if (due && problems.length === 0) {
    problems.push({
      kind: 'pending',
      message: `a CA write is due now (${due.phases.join(', ') || 'acknowledge'}): ${due.message}; the controller has not made it yet`,
    });
  }
  return {
    secret: secretName,
    checked: true,
    certificates,
    ...(keys.length > 0 ? { keys } : {}),
    ...(due ? { due } : {}),
    ...(plan.status.signingPausedUntil ? { signingPausedUntil: iso(plan.status.signingPausedUntil) } : {}),
    problems,
    activeCa,
  };
}

function policyReport(assumed: AssumedInstallation): PolicyReport {
  const p = assumed.policy;
  const pods = assumed.podCertificates;
  return {
    esoNamespace: p.esoNamespace,
    clusterDomain: p.clusterDomain,
    serviceAccount: p.serviceAccount,
    caSecretName: assumed.caSecretName,
    clientSecretName: assumed.clientSecretName,
    keyAlgorithm: p.keyAlgorithm,
    reconcileInterval: formatDuration(p.reconcileInterval),
    propagationDelay: formatDuration(p.propagationDelay),
    leafValidity: formatDuration(p.leafValidity),
    leafLookahead: formatDuration(p.leafLookahead),
    leafJitter: formatDuration(p.leafJitter),
    caValidity: formatDuration(p.caValidity),
    caLookahead: formatDuration(p.caLookahead),
    modes: [...(assumed.secretMode ? ['secret' as const] : []), ...(pods ? ['pod-certificate' as const] : [])],
    ...(pods
      ? { serverSignerName: pods.serverSignerName, clientSignerName: pods.clientSignerName, podCertificateMaxValidity: formatDuration(pods.maxValidity) }
      : {}),
    ...(assumed.namespaceRequirement ? { requireNamespaceLabel: formatNamespaceRequirement(assumed.namespaceRequirement) } : {}),
    ...(assumed.maxNamespaces === undefined ? {} : { maxNamespaces: assumed.maxNamespaces }),
    sources: Object.fromEntries(assumed.sources),
  };
}

/**
 * Judges the cluster as the controller would: the snapshot is built by the controller's own
 * SnapshotBuilder, planned by the core's planRotation with the same policy (and, in
 * pod-certificate mode, the same published bundles and longest pod certificate), and every Secret
 * is read with the core's observe functions. `keys` is what the cache's verifier learnt of CA keys
 * in a PKCS#11 token (see tokenAwareVerifier in ca-keys.ts); by default none was given. Pure apart
 * from the cache's memo tables.
 */
export function evaluateStatus(
  state: ClusterState,
  assumed: AssumedInstallation,
  now: Instant,
  cache: CertificateCache,
  namespaceFilter?: string,
  keys: TokenKeys = { token: undefined, unavailable: () => undefined },
): StatusReport {
  const { policy, esoNamespace, caSecretName, clientSecretName, secretMode, podCertificates: pods, id: installation } = assumed;
  const builder = new SnapshotBuilder(snapshotSource(state, assumed), assumed, new IssuanceLedger());
  const podState = pods && state.podCertificates;
  // As the controller plans in pod-certificate mode: its published bundles gate the next CA, and a retired CA stays for the longest pod certificate.
  const { snapshot: built } = builder.build();
  const upstreamObservation = plannedUpstream(state.upstream, assumed.caSource, policy.caValidity);
  const snapshot = {
    ...built,
    ...(podState ? { trustBundles: observedTrustBundles(podState, installation, cache) } : {}),
    // With an upstream CA, as the controller plans: its intermediates are judged against the source.
    ...(upstreamObservation ? { upstream: upstreamObservation } : {}),
  };
  // With a namespace requirement, planned as the controller plans once its namespace list is synced;
  // when that list could not be read, each provider namespace is said to be unchecked below.
  const requirement = state.allowedNamespaces?.kind === 'read' ? assumed.namespaceRequirement : undefined;
  // The controller's plan context from the same configuration; status reads no bound on issuances,
  // so that every leaf due now is shown as due rather than deferred to a later round.
  const plan = planRotation(snapshot, planContext({ ...assumed, maxIssuancesPerReconcile: undefined, namespaceRequirement: requirement }, now, cache));
  const { activeCa, ...caSecret } = evaluateCa(`${esoNamespace}/${caSecretName}`, state.caSecret, snapshot.caSecret, { now, assumed, plan, cache, keys });
  const upstream =
    caSecret.checked && evaluateUpstream(snapshot.caSecret, { now, plan, cache, esoNamespace, caSource: assumed.caSource, observation: state.upstream });
  const ca: CaReport = upstream ? { ...caSecret, upstream: upstream.report, problems: [...caSecret.problems, ...upstream.problems] } : caSecret;
  const ctx: LeafContext = { now, assumed, plan, cache, activeCa, caUnknown: !ca.checked };

  const clientName = `${esoNamespace}/${clientSecretName}`;
  let client: ClientReport;
  if (state.clientSecret.kind === 'unreadable') client = { secret: clientName, checked: false, unchecked: state.clientSecret.why, uris: [], problems: [] };
  else {
    const leaf = evaluateLeaf('client', 'the client certificate', snapshot.clientSecret, ctx);
    const observed = snapshot.clientSecret?.ownership === 'managed' ? observeLeafSecret(snapshot.clientSecret.data, cache).leaf : undefined;
    const cert = observed?.ok ? observed.value.certificate : undefined;
    client = { secret: clientName, checked: true, uris: cert?.uris ?? [], ...(cert?.subjectCommonName ? { commonName: cert.subjectCommonName } : {}), ...leaf };
  }

  const namespaces: NamespaceReport[] = [];
  const allowanceUnknown = state.allowedNamespaces?.kind === 'unreadable' ? state.allowedNamespaces.why : undefined;
  for (const ns of snapshot.namespaces) {
    if (ns.services.length === 0 && !state.unreadableNamespaces.has(ns.namespace)) continue; // a Secret left behind: the controller leaves it alone
    // With a cap every namespace was read, to rank them as the controller does; only the filtered one is shown.
    if (namespaceFilter !== undefined && ns.namespace !== namespaceFilter) continue;
    const base = { namespace: ns.namespace, secret: `${ns.namespace}/${PROVIDER_SECRET_NAME}`, services: ns.services.map((s) => s.name) };
    const excluded = plan.excluded.find((e) => e.namespace === ns.namespace);
    if (excluded) {
      // Left out whole, as the controller leaves it: its Secret is not judged, so no "missing" beside it.
      namespaces.push({ ...base, checked: true, dnsNames: [], problems: [{ kind: EXCLUSION_PROBLEM[excluded.reason], message: excluded.message }] });
      continue;
    }
    const unreadable = (ns.services.length > 0 ? allowanceUnknown : undefined) ?? state.unreadableNamespaces.get(ns.namespace);
    if (unreadable !== undefined) {
      namespaces.push({ ...base, checked: false, unchecked: unreadable, dnsNames: [], problems: [] });
      continue;
    }
    const leaf = evaluateLeaf({ namespace: ns.namespace }, `namespace ${ns.namespace}`, ns.secret, ctx);
    const observed = ns.secret?.ownership === 'managed' ? observeLeafSecret(ns.secret.data, cache).leaf : undefined;
    const refused = plan.refused.filter((r) => r.namespace === ns.namespace).map((r): Problem => ({ kind: 'refused', message: r.message }));
    namespaces.push({
      ...base,
      checked: true,
      dnsNames: observed?.ok ? observed.value.certificate.dnsNames : [],
      ...leaf,
      problems: [...leaf.problems, ...refused],
    });
  }
  // Pod-certificate mode only: no namespace has a Secret to report; the filter asks only whether a labelled Service is there.
  const filterShown = secretMode
    ? namespaces.some((n) => n.namespace === namespaceFilter)
    : state.services.some((s) => s.metadata?.namespace === namespaceFilter);
  if (namespaceFilter !== undefined && !filterShown) {
    namespaces.push({
      namespace: namespaceFilter,
      secret: `${namespaceFilter}/${PROVIDER_SECRET_NAME}`,
      services: [],
      dnsNames: [],
      checked: true,
      problems: [{ kind: 'missing', message: `namespace ${namespaceFilter} has no Service labelled ${PROVIDER_LABEL}=true: nothing is issued there` }],
    });
  }

  const podCertificates =
    podState &&
    evaluatePodCertificates(podState, { now, plan, cache, caUnknown: !ca.checked, installation, pendingThreshold: pendingThreshold(policy.reconcileInterval) });
  const leaderElection = state.lease && assumed.lease && evaluateLease(state.lease, assumed.lease.leaseDuration);
  const all = [
    ca,
    client,
    ...namespaces,
    ...(podCertificates ? [...podCertificates.trustBundles, podCertificates.strays, ...podCertificates.signers] : []),
    ...(leaderElection ? [leaderElection] : []),
  ];
  const problems = all.reduce((n, r) => n + r.problems.length, 0);
  const unchecked = all.filter((r) => !r.checked).length;
  const exitCode = statusExitCode({ problems, unchecked });
  return {
    now: iso(now),
    policy: policyReport(assumed),
    ...(namespaceFilter !== undefined ? { namespaceFilter } : {}),
    ca,
    client,
    namespaces,
    ...(podCertificates ? { podCertificates } : {}),
    ...(leaderElection ? { leaderElection } : {}),
    summary: { healthy: problems === 0 && unchecked === 0, problems, unchecked, exitCode },
  };
}
