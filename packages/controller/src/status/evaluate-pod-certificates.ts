import {
  type CertificateCache,
  type CertificateView,
  type Duration,
  type Instant,
  type ObservedBundle,
  type Plan,
  formatDuration,
  minutes,
  observePublishedBundle,
} from '@eso-mtls/core';
import { COMPONENT_LABEL, INSTALLATION_ANNOTATION, MANAGED_BY, MANAGED_BY_LABEL, TRUST_BUNDLE_LABEL, isOurTrustBundle } from '@eso-mtls/kubernetes';
import { countWithNoun } from './count-with-noun.js';
import { type PodCertificateState, type SignerRequestsRead, type StrayBundlesRead, type TrustBundleRead } from './cluster-state.js';
import type {
  BundleCertificateReport,
  PodCertificatesReport,
  Problem,
  ReasonCount,
  SignerRequestsReport,
  StrayBundlesReport,
  TrustBundleReport,
} from './report.js';

/** `app.kubernetes.io/component` of the controller's ClusterTrustBundles, as its TrustBundles writes it. */
/** Long-pending requests listed per signer; the count says how many more. */
const LISTED_PENDING = 10;
/** Distinct reasons listed per signer and condition; the rest are summed under one entry. */
const LISTED_REASONS = 20;
/**
 * The most a request may stay pending: kube-controller-manager deletes every PodCertificateRequest
 * 30 minutes after its creation, so a longer threshold would let a stuck request vanish unseen.
 */
const MAX_PENDING_THRESHOLD = minutes(15);
const DAY = 86_400_000;
const iso = (t: Instant): string => new Date(t).toISOString();

/**
 * How long a request may stay pending before it needs attention: twice the reconcile interval, at
 * most 15 minutes. The controller decides a request in the round its watch event starts, within
 * seconds; a missed event is caught by the next full reconcile, at most one interval later; the
 * second interval is margin for a round in progress or a retry. The cap keeps the threshold within
 * the 30 minutes the apiserver keeps a request.
 */
export function pendingThreshold(reconcileInterval: Duration): Duration {
  return Math.min(2 * reconcileInterval, MAX_PENDING_THRESHOLD);
}

/**
 * The published bundles as the controller's CA activation reads them: each readable signer's
 * bundle, empty when absent or not ours. One that could not be read is left out, as unknown.
 */
export function observedTrustBundles(state: PodCertificateState, installation: string, cache: CertificateCache): ObservedBundle[] {
  return state.trustBundles.flatMap((read) => {
    if (read.kind === 'unreadable') return [];
    const ours = read.bundle !== undefined && isOurTrustBundle(read.bundle, read.signerName, installation) ? read.bundle : undefined;
    return [observePublishedBundle(ours && { text: ours.trustBundle, annotations: ours.annotations }, cache)];
  });
}

/** What judging the pod-certificate mode needs besides what was read. */
export interface PodCertificateContext {
  readonly now: Instant;
  /** The plan of the same snapshot: its `bundle` is the text the controller publishes. */
  readonly plan: Plan;
  readonly cache: CertificateCache;
  /** The CA Secret could not be read: whether a bundle is current is unknown. */
  readonly caUnknown: boolean;
  /** `eso-mtls.io/installation` of this installation's objects. */
  readonly installation: string;
  /** See {@link pendingThreshold}. */
  readonly pendingThreshold: Duration;
}

const bundleFacts = (c: CertificateView, now: Instant): BundleCertificateReport => ({
  subject: c.subject,
  serialNumber: c.serialNumber,
  notAfter: iso(c.notAfter),
  daysLeft: Math.floor((c.notAfter - now) / DAY),
});

/** The CA certificates of a PEM bundle, or undefined when it does not parse. */
function certificatesOf(text: string, cache: CertificateCache): readonly CertificateView[] | undefined {
  try {
    return cache.parseBundle(text);
  } catch {
    return undefined;
  }
}

const serials = (certificates: readonly CertificateView[] | undefined): string =>
  certificates === undefined
    ? 'text that does not parse'
    : certificates.length === 0
      ? 'no CA'
      : certificates.map((c) => `serial ${c.serialNumber}`).join(', ');

/** One signer's ClusterTrustBundle: present, ours, selectable by the shipped projections, and holding exactly the CA Secret's bundle. */
function evaluateTrustBundle(read: TrustBundleRead, ctx: PodCertificateContext): TrustBundleReport {
  const { name, signerName } = read;
  const base = { name, signerName };
  if (read.kind === 'unreadable') return { ...base, checked: false, unchecked: read.why, problems: [] };
  const bundle = read.bundle;
  if (bundle === undefined) {
    const message = `ClusterTrustBundle ${name} does not exist; the controller publishes it, and until then pods projecting it trust no CA of signer ${signerName}`;
    return { ...base, checked: true, exists: false, problems: [{ kind: 'missing', message }] };
  }
  if (!isOurTrustBundle(bundle, signerName, ctx.installation)) {
    const message =
      `ClusterTrustBundle ${name} exists but was not written by this installation (${MANAGED_BY_LABEL}=${MANAGED_BY}, ` +
      `${COMPONENT_LABEL}=trust-bundle, ${INSTALLATION_ANNOTATION}=${ctx.installation}); the controller leaves it alone and cannot publish: remove it`;
    return { ...base, checked: true, exists: true, ours: false, problems: [{ kind: 'foreign', message }] };
  }
  const problems: Problem[] = [];
  if (bundle.labels[TRUST_BUNDLE_LABEL] !== 'true') {
    problems.push({
      kind: 'invalid',
      message: `ClusterTrustBundle ${name} lacks the label ${TRUST_BUNDLE_LABEL}=true: no shipped projection selects it, and the controller's watch does not see it`,
    });
  }
  const held = certificatesOf(bundle.trustBundle, ctx.cache);
  const expected = ctx.plan.bundle;
  const current = ctx.caUnknown || expected === undefined ? null : bundle.trustBundle === expected;
  if (current === false) {
    problems.push({
      kind: 'pending',
      message: `ClusterTrustBundle ${name} does not hold the CA Secret's bundle (active, next and retired CAs): it holds ${serials(held)}, expected ${serials(certificatesOf(expected!, ctx.cache))}; the controller rewrites it`,
    });
  }
  return { ...base, checked: true, exists: true, ours: true, certificates: (held ?? []).map((c) => bundleFacts(c, ctx.now)), current, problems };
}

/** Each stray bundle is a conflict, with the controller's own message. */
function evaluateStrays(read: StrayBundlesRead): StrayBundlesReport {
  if (read.kind === 'unreadable') return { checked: false, unchecked: read.why, names: [], problems: [] };
  return { checked: true, names: read.strays.map((s) => s.name), problems: read.strays.map((s) => ({ kind: 'conflict', message: s.message })) };
}

/** Reasons by count, most frequent first; beyond {@link LISTED_REASONS}, one entry sums the rest. */
function reasonCounts(reasons: readonly string[]): ReasonCount[] {
  const counts = new Map<string, number>();
  for (const r of reasons) counts.set(r, (counts.get(r) ?? 0) + 1);
  const sorted = [...counts].map(([reason, count]) => ({ reason, count })).sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason));
  if (sorted.length <= LISTED_REASONS) return sorted;
  const rest = sorted.slice(LISTED_REASONS);
  return [...sorted.slice(0, LISTED_REASONS), { reason: `(${countWithNoun(rest.length, 'other reason')})`, count: rest.reduce((n, r) => n + r.count, 0) }];
}

/** One signer's requests: counts by outcome, the reasons seen, and those pending for longer than the threshold. */
function evaluateSignerRequests(read: SignerRequestsRead, ctx: PodCertificateContext): SignerRequestsReport {
  const empty = { issued: 0, denied: 0, failed: 0, pending: 0, truncated: false, deniedReasons: [], failedReasons: [], longPending: [] };
  if (read.kind === 'unreadable') return { signerName: read.signerName, checked: false, unchecked: read.why, ...empty, problems: [] };
  const { requests } = read;
  const ended = (outcome: string) => requests.filter((r) => r.outcome === outcome);
  const pending = requests.filter((r) => r.outcome === undefined);
  const late = pending
    .filter((r) => r.createdAt !== undefined && ctx.now - r.createdAt > ctx.pendingThreshold)
    .sort((a, b) => a.createdAt! - b.createdAt! || a.name.localeCompare(b.name));
  const problems: Problem[] = [];
  if (late.length > 0) {
    const oldest = late[0]!;
    problems.push({
      kind: 'pending',
      message:
        `${countWithNoun(late.length, 'PodCertificateRequest')} for ${read.signerName} pending for longer than ${formatDuration(ctx.pendingThreshold)} ` +
        `(oldest ${oldest.namespace}/${oldest.name} for pod ${oldest.podName}, created ${iso(oldest.createdAt!)}): the controller decides a request within seconds, ` +
        `at the latest at its next full reconcile; check that it runs with this mode and signer name, and its logs`,
    });
  }
  return {
    signerName: read.signerName,
    checked: true,
    issued: ended('Issued').length,
    denied: ended('Denied').length,
    failed: ended('Failed').length,
    pending: pending.length,
    truncated: read.truncated,
    deniedReasons: reasonCounts(ended('Denied').map((r) => r.reason ?? '')),
    failedReasons: reasonCounts(ended('Failed').map((r) => r.reason ?? '')),
    longPending: late.slice(0, LISTED_PENDING).map((r) => ({ request: `${r.namespace}/${r.name}`, pod: r.podName, createdAt: iso(r.createdAt!) })),
    problems,
  };
}

/**
 * Judges the pod-certificate mode: each signer's ClusterTrustBundle against the CA layout's bundle
 * (the plan's, the text the controller publishes), and each signer's requests as read. Denied and Failed requests are counted, not problems: a pod no
 * labelled Service selects is meant to be Denied, and the kubelet asks again.
 */
export function evaluatePodCertificates(state: PodCertificateState, ctx: PodCertificateContext): PodCertificatesReport {
  return {
    pendingThreshold: formatDuration(ctx.pendingThreshold),
    trustBundles: state.trustBundles.map((read) => evaluateTrustBundle(read, ctx)),
    strays: evaluateStrays(state.strays),
    signers: state.requests.map((read) => evaluateSignerRequests(read, ctx)),
  };
}
