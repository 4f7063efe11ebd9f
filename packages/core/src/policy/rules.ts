import type { CertificateView, KeyedCertificate } from '../x509/certificate.js';
import { topOf } from '../x509/ca-path.js';
import type { Observed } from '../common/observed.js';
import type { Policy } from './policy.js';
import { truncate, truncateList } from '../common/truncate.js';
import { type Duration, type Instant, truncateToSecond } from '../common/time.js';

/**
 * Why a certificate is issued. When several apply, the first in this order wins; the strings are
 * the `reason` label of the rotation metric, of Events and of log lines.
 */
export const ROTATION_REASONS = ['invalid', 'secret_missing', 'forced', 'ca_rotated', 'ca_mismatch', 'dns_changed', 'expiring', 'initial'] as const;
/** One of {@link ROTATION_REASONS}. */
export type RotationReason = (typeof ROTATION_REASONS)[number];

/** A rule that fired: the reason, and a sentence for logs and Events. */
export interface Trigger {
  readonly reason: RotationReason;
  readonly message: string;
}

/** Whether a leaf Secret exists, and in what form. */
export type SecretPresence = 'absent' | 'placeholder' | 'present';

/** The CAs as they will be once this plan's CA change is written; `active` is undefined while a new one is to be generated, or while none signs. */
export interface LeafTrust {
  /** The CA that signs. */
  readonly active?: CertificateView;
  /** The anchor the active CA's path ends at: the active CA itself when self-signed, else its upstream anchor. */
  readonly activeAnchor?: CertificateView;
  readonly next?: CertificateView;
  /** Former anchors still trusted (self-signed: former CAs). */
  readonly retired: readonly CertificateView[];
}

/** What a leaf must say about its subject: a namespace's DNS names, or the ESO client identity. */
export type LeafIdentity =
  { readonly kind: 'server'; readonly dnsNames: readonly string[] } | { readonly kind: 'client'; readonly uri: string; readonly commonName: string };

/** Everything a leaf rule may look at. Plain data plus a memoised signature check. */
export interface LeafRuleContext {
  readonly now: Instant;
  readonly policy: Policy;
  /** For messages: `namespace team-a`, `the client certificate`. */
  readonly subject: string;
  readonly presence: SecretPresence;
  readonly previouslyIssued: boolean;
  /** The observed leaf when the Secret is present (undefined when absent or a placeholder). */
  readonly leaf?: Observed<KeyedCertificate>;
  /** Set when a forced rotation is pending: who asked for it. */
  readonly forcedBy?: string;
  readonly trust: LeafTrust;
  readonly isSignedBy: (leaf: CertificateView, ca: CertificateView) => boolean;
  readonly identity: LeafIdentity;
}

/** One trigger: fires with a reason, or returns undefined. Pure. */
export type LeafRule = (ctx: LeafRuleContext) => Trigger | undefined;

const usableLeaf = (ctx: LeafRuleContext): CertificateView | undefined => (ctx.presence === 'present' && ctx.leaf?.ok ? ctx.leaf.value.certificate : undefined);

const describe = (c: CertificateView): string => `${truncate(c.subject)} (serial ${truncate(c.serialNumber, 64)})`;
const iso = (t: Instant): string => new Date(t).toISOString();

/** Our Secret holds data that cannot be served: garbage, a missing or mismatched key, several certificates. */
export const invalidRule: LeafRule = (ctx) => {
  if (ctx.presence !== 'present' || ctx.leaf === undefined || ctx.leaf.ok) return undefined;
  return { reason: 'invalid', message: `${ctx.subject}: ${ctx.leaf.problem}: ${ctx.leaf.detail}` };
};

/** The Secret was issued by us before and is gone. */
export const secretMissingRule: LeafRule = (ctx) =>
  ctx.presence === 'absent' && ctx.previouslyIssued
    ? { reason: 'secret_missing', message: `${ctx.subject}: the Secret was issued before and has been deleted` }
    : undefined;

/** Someone asked for a new certificate (annotation, or an emergency CA rotation). Only for an existing Secret. */
export const forcedRule: LeafRule = (ctx) =>
  ctx.presence === 'present' && ctx.forcedBy !== undefined ? { reason: 'forced', message: `${ctx.subject}: rotation requested by ${ctx.forcedBy}` } : undefined;

const signedByActive = (ctx: LeafRuleContext, leaf: CertificateView): boolean => ctx.trust.active !== undefined && ctx.isSignedBy(leaf, ctx.trust.active);

/**
 * The trusted anchor a leaf's served path ends at, other than through the active CA: a retired
 * anchor, or the active CA's own anchor reached through a former intermediate.
 */
function formerPathOf(ctx: LeafRuleContext): { readonly anchor: CertificateView; readonly retired: boolean } | undefined {
  if (!ctx.leaf?.ok) return undefined;
  const top = topOf(ctx.leaf.value);
  const retired = ctx.trust.retired.find((ca) => ctx.isSignedBy(top, ca));
  if (retired) return { anchor: retired, retired: true };
  const anchor = ctx.trust.activeAnchor;
  return anchor && anchor !== ctx.trust.active && ctx.isSignedBy(top, anchor) ? { anchor, retired: false } : undefined;
}

/** Signed by a CA that no longer signs (still trusted during the overlap, or under the same anchor). */
export const caRotatedRule: LeafRule = (ctx) => {
  const leaf = usableLeaf(ctx);
  if (!leaf || signedByActive(ctx, leaf)) return undefined;
  const former = formerPathOf(ctx);
  if (!former) return undefined;
  const message = former.retired
    ? leaf.issuer === former.anchor.subject && ctx.isSignedBy(leaf, former.anchor)
      ? `signed by the retired CA ${describe(former.anchor)}`
      : `signed by ${truncate(leaf.issuer)} under the retired anchor ${describe(former.anchor)}`
    : `signed by ${truncate(leaf.issuer)}, a former intermediate under the same anchor ${describe(former.anchor)}`;
  return { reason: 'ca_rotated', message: `${ctx.subject}: ${message}` };
};

/** Signed by none of our CAs: planted, or left from a CA that is lost. */
export const caMismatchRule: LeafRule = (ctx) => {
  const leaf = usableLeaf(ctx);
  if (!leaf || signedByActive(ctx, leaf) || formerPathOf(ctx)) return undefined;
  return { reason: 'ca_mismatch', message: `${ctx.subject}: ${describe(leaf)} is signed by ${truncate(leaf.issuer)}, which is not our signing CA` };
};

/** The names (or the client identity) no longer match what the Services (or the policy) ask for. */
export const dnsChangedRule: LeafRule = (ctx) => {
  const leaf = usableLeaf(ctx);
  if (!leaf) return undefined;
  if (ctx.identity.kind === 'server') {
    const have = [...new Set(leaf.dnsNames)].sort();
    const want = ctx.identity.dnsNames;
    if (have.length === want.length && have.every((n, i) => n === want[i])) return undefined;
    return { reason: 'dns_changed', message: `${ctx.subject}: DNS names changed from ${have.length} to ${want.length}: ${nameChanges(have, want)}` };
  }
  const { uri, commonName } = ctx.identity;
  if (leaf.subjectCommonName === commonName && leaf.uris.length === 1 && leaf.uris[0] === uri) return undefined;
  return {
    reason: 'dns_changed',
    message: `${ctx.subject}: identity CN=${truncate(leaf.subjectCommonName ?? '')} URI=[${truncateList(leaf.uris)}] differs from CN=${commonName} URI=${uri}`,
  };
};

/**
 * `added [a, b and 3 more]; removed [c]`: what a namespace's Services changed, bounded whatever
 * their number (a namespace's name list is as long as its Services: quoting it whole made each
 * message grow with them, and each change cost a namespace's worth of such messages).
 */
function nameChanges(have: readonly string[], want: readonly string[]): string {
  const had = new Set(have);
  const wanted = new Set(want);
  const added = want.filter((n) => !had.has(n));
  const removed = have.filter((n) => !wanted.has(n));
  return [added.length > 0 ? `added [${truncateList(added)}]` : '', removed.length > 0 ? `removed [${truncateList(removed)}]` : ''].filter(Boolean).join('; ');
}

/** The leaf has reached its renewal time. */
export const expiringRule: LeafRule = (ctx) => {
  const leaf = usableLeaf(ctx);
  if (!leaf) return undefined;
  const due = renewalTime(leaf, ctx.policy);
  return ctx.now >= due ? { reason: 'expiring', message: `${ctx.subject}: notAfter ${iso(leaf.notAfter)}, renewal time ${iso(due)} has passed` } : undefined;
};

/** Nothing was ever issued here (or a chart's empty placeholder waits to be adopted). */
export const initialRule: LeafRule = (ctx) => {
  if (ctx.presence === 'placeholder') return { reason: 'initial', message: `${ctx.subject}: adopting an empty placeholder Secret` };
  return ctx.presence === 'absent' && !ctx.previouslyIssued ? { reason: 'initial', message: `${ctx.subject}: first issuance` } : undefined;
};

/** The rules, in {@link ROTATION_REASONS} order. */
export const LEAF_RULES: readonly LeafRule[] = [
  invalidRule,
  secretMissingRule,
  forcedRule,
  caRotatedRule,
  caMismatchRule,
  dnsChangedRule,
  expiringRule,
  initialRule,
];

/** The first rule that fires, or undefined when the leaf is fine as it is. */
export function evaluateLeafRules(ctx: LeafRuleContext): Trigger | undefined {
  for (const rule of LEAF_RULES) {
    const trigger = rule(ctx);
    if (trigger) return trigger;
  }
  return undefined;
}

/**
 * The share of `maxJitter` a certificate renews early by, from a 32-bit FNV-1a hash of its serial
 * number: leaves issued together spread out, and planning twice gives the same answer.
 * Truncated to whole seconds like every certificate time.
 */
export function rotationJitter(serialNumber: string, maxJitter: Duration): Duration {
  let hash = 0x811c9dc5;
  for (let i = 0; i < serialNumber.length; i++) {
    hash ^= serialNumber.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return truncateToSecond((hash / 0x1_0000_0000) * maxJitter);
}

/**
 * When a leaf is due: notAfter − leafLookahead − its jitter, truncated to the second so that the
 * reconcile scheduled for that instant never runs a fraction of a second too early. A leaf cut
 * short by its CA's end (an upstream intermediate shorter than a leaf) renews by the same share
 * of the life it got, so it is never due at birth.
 */
export function renewalTime(leaf: CertificateView, policy: Policy): Instant {
  const share = Math.min(1, (leaf.notAfter - leaf.notBefore) / policy.leafValidity);
  return truncateToSecond(leaf.notAfter - share * (policy.leafLookahead + rotationJitter(leaf.serialNumber, policy.leafJitter)));
}

/**
 * Latest instant at which a certificate we issued can have been written: notBefore is the issue
 * time minus the backdate, truncated to the second, so the true time is below notBefore + backdate + 1 s.
 */
export function issuedNoLaterThan(certificate: CertificateView, policy: Policy): Instant {
  return certificate.notBefore + policy.notBeforeBackdate + 1000;
}
