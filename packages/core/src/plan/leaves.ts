import type { CaRotationPlan } from '../ca/ca-rotation.js';
import type { Instant } from '../common/time.js';
import { type LeafRuleContext, type LeafTrust, type Trigger, evaluateLeafRules, renewalTime } from '../policy/rules.js';
import type { CertificateView } from '../x509/certificate.js';
import { anchorOf } from '../x509/ca-path.js';
import type { DueLeaf } from './issuance-order.js';
import { ROTATE_ACKNOWLEDGED_ANNOTATION } from '../secret/rotate-request.js';
import type { LeafSubject } from './subjects.js';
import type { BundleUpdate, LeafIssuance, PlanContext, WaitingLeaf } from './vocabulary.js';

/*
 * The second step of a plan: each subject's leaf under the CA plan. A leaf is due (to be ordered
 * and issued), waiting (due while no CA signs), or kept until its renewal time; a bundle that
 * differs from the expected one is rewritten without a new leaf.
 */

/** A due leaf and the issuance that renews it. */
export interface DueIssuance {
  readonly subject: LeafSubject;
  readonly issuance: LeafIssuance;
}

/** What the leaves need, as the CA plan leaves them. */
export interface PlannedLeaves {
  /** Leaves to issue, in subject order; {@link orderIssuances} ranks them. */
  readonly due: readonly DueLeaf<DueIssuance>[];
  readonly waiting: readonly WaitingLeaf[];
  /** Bundles of subjects that are not due. */
  readonly bundles: readonly BundleUpdate[];
  /** The renewal time of each leaf kept. */
  readonly renewals: readonly Instant[];
}

/** Judges every subject's leaf against the rules, under `ca` and its expected `bundle`. */
export function planLeaves(subjects: readonly LeafSubject[], ca: CaRotationPlan, bundle: string | undefined, ctx: PlanContext): PlannedLeaves {
  const { layout } = ca;
  // The CAs a leaf rule checks signatures against (certificates only), not the layout the plan returns.
  const trust: LeafTrust = {
    active: layout.active?.kind === 'existing' ? layout.active.keyed.certificate : undefined,
    activeAnchor: layout.active?.kind === 'existing' ? anchorOf(layout.active.keyed) : undefined,
    next: layout.next?.kind === 'existing' ? layout.next.keyed.certificate : undefined,
    retired: layout.retired,
  };
  const isSignedBy = (leaf: CertificateView, caCert: CertificateView): boolean => ctx.cache.isSignedBy(leaf, caCert);
  const judged = subjects.map((s) => judgeLeaf(s, evaluateLeafRules(ruleContext(s, ca, trust, isSignedBy, ctx)), ca, bundle, ctx));
  return {
    due: judged.flatMap((j) => ('due' in j ? [j.due] : [])),
    waiting: judged.flatMap((j) => ('due' in j || j.waiting === undefined ? [] : [j.waiting])),
    bundles: judged.flatMap((j) => ('due' in j || j.bundle === undefined ? [] : [j.bundle])),
    renewals: judged.flatMap((j) => ('due' in j || j.renewal === undefined ? [] : [j.renewal])),
  };
}

/** One subject's leaf: due while a CA signs, or else waiting for one, its bundle rewritten, or kept until renewal. */
type JudgedLeaf = { readonly due: DueLeaf<DueIssuance> } | { readonly waiting?: WaitingLeaf; readonly bundle?: BundleUpdate; readonly renewal?: Instant };

function judgeLeaf(s: LeafSubject, trigger: Trigger | undefined, ca: CaRotationPlan, bundle: string | undefined, ctx: PlanContext): JudgedLeaf {
  if (trigger && ca.layout.active) return { due: dueLeaf(s, trigger, ca, ctx) };
  return {
    waiting: trigger ? waitingLeaf(s, trigger, ca) : undefined,
    bundle: bundleUpdate(s, bundle),
    renewal: !trigger && s.observed?.leaf.ok ? renewalTime(s.observed.leaf.value.certificate, ctx.policy) : undefined,
  };
}

/** A bundle rewrite for `s` when its ca.crt is not the expected `bundle`; undefined otherwise. */
export function bundleUpdate(s: LeafSubject, bundle: string | undefined): BundleUpdate | undefined {
  if (!s.observed || s.observed.bundleText === bundle) return undefined;
  return { target: s.target, base: s.secret!.version, data: s.secret!.data, currentBundle: currentBundleOf(s) };
}

function presenceOf(s: LeafSubject): LeafRuleContext['presence'] {
  return s.secret === undefined ? 'absent' : s.secret.ownership === 'placeholder' ? 'placeholder' : 'present';
}

function ruleContext(
  s: LeafSubject,
  ca: CaRotationPlan,
  trust: LeafTrust,
  isSignedBy: LeafRuleContext['isSignedBy'],
  { now, policy }: PlanContext,
): LeafRuleContext {
  return {
    now,
    policy,
    subject: s.label,
    presence: presenceOf(s),
    previouslyIssued: s.previouslyIssued,
    leaf: s.observed?.leaf,
    forcedBy: s.forcedBy ?? (ca.emergency ? 'an emergency CA rotation' : undefined),
    trust,
    isSignedBy,
    identity: s.identity,
  };
}

/** A leaf a rule made due while a CA signs: its issuance, with what ranks it among the others. */
function dueLeaf(s: LeafSubject, trigger: Trigger, ca: CaRotationPlan, { now, policy }: PlanContext): DueLeaf<DueIssuance> {
  const issuance: LeafIssuance = {
    kind: s.kind,
    target: s.target,
    services: s.services,
    promptedBy: s.promptedBy,
    dnsNames: s.identity.kind === 'server' ? s.identity.dnsNames : [],
    reason: trigger.reason,
    message: trigger.message,
    create: s.secret === undefined,
    base: s.secret?.version,
    annotations: s.request === undefined ? {} : { [ROTATE_ACKNOWLEDGED_ANNOTATION]: s.request },
    currentBundle: currentBundleOf(s),
  };
  const leaf = s.observed?.leaf.ok ? s.observed.leaf.value.certificate : undefined;
  const pastRenewal = leaf !== undefined && now >= renewalTime(leaf, policy);
  // In an emergency every Secret that exists is re-issued at once; one still to be created waits its turn.
  const emergency = ca.emergency && presenceOf(s) === 'present';
  // The client's certificate is ESO's own, used with every provider: first within its class.
  const since = s.target === 'client' ? -Infinity : s.since;
  return { item: { subject: s, issuance }, reason: trigger.reason, emergency, pastRenewal, notAfter: leaf?.notAfter, since };
}

/** A leaf a rule made due while no CA signs (a recovery waits for its new CA). */
function waitingLeaf(s: LeafSubject, trigger: Trigger, ca: CaRotationPlan): WaitingLeaf {
  return {
    target: s.target,
    services: s.services,
    until: ca.signingResumesAt,
    reason: trigger.reason,
    message: `${trigger.message} (waiting: no CA signs until the new one is activated)`,
  };
}

/** The CA certificates the subject's ca.crt holds now (undefined: absent or unreadable). */
function currentBundleOf(s: LeafSubject): readonly CertificateView[] | undefined {
  return s.observed?.bundle.ok ? s.observed.bundle.value : undefined;
}
