import type { CaLayout } from '../ca/ca-layout.js';
import type { CaChange, CaStatus } from '../ca/ca-rotation.js';
import type { Duration, Instant } from '../common/time.js';
import type { CertificateCache } from '../crypto/cache.js';
import type { NamespaceRequirement } from '../policy/namespace-requirement.js';
import type { Policy } from '../policy/policy.js';
import type { RotationReason } from '../policy/rules.js';
import type { CertificateView } from '../x509/certificate.js';
import type { SecretData } from '../secret/observe.js';
import type { WriteRefusalReason } from '../secret/snapshot.js';
import type { SecretTarget } from '../secret/target.js';
import type { UpstreamPlan } from '../ca/upstream-plan.js';

/*
 * What a plan holds: the words planRotation answers in, and executePlan, the simulation and the
 * adapters read.
 */

/** Issue a new leaf (fresh key) into a Secret, signed by the CA that signs after the plan's CA change. */
export interface LeafIssuance {
  /** A provider's server leaf or the ESO client leaf. */
  readonly kind: 'serverLeaf' | 'clientLeaf';
  /** The Secret that receives it. */
  readonly target: SecretTarget;
  /** The labelled Services of the namespace (empty for the client), for Events and metrics. */
  readonly services: readonly string[];
  /**
   * Those of {@link services} it is first about: the Services whose names it adds and those whose
   * rotation request it answers. An adapter that reports on a few of the Services starts with these.
   */
  readonly promptedBy: readonly string[];
  /** subjectAltName dNSNames of a server leaf (empty for the client). */
  readonly dnsNames: readonly string[];
  /** The rule that made it due. */
  readonly reason: RotationReason;
  /** Why, in a sentence for logs and Events. */
  readonly message: string;
  /** The Secret does not exist yet: create it. */
  readonly create: boolean;
  /** The resourceVersion the write replaces (optimistic concurrency). */
  readonly base?: string;
  /** Annotations to set, such as the acknowledgement of a rotation request. */
  readonly annotations: Readonly<Record<string, string>>;
  /** The CA certificates the Secret's ca.crt holds now (undefined: absent or unreadable). */
  readonly currentBundle?: readonly CertificateView[];
}

/** Rewrite `ca.crt` alone, keeping the rest of the data. Not a rotation. */
export interface BundleUpdate {
  /** The Secret whose ca.crt is rewritten. */
  readonly target: SecretTarget;
  /** The resourceVersion the write replaces (optimistic concurrency). */
  readonly base?: string;
  /** The Secret's data as observed; only ca.crt changes. */
  readonly data: SecretData;
  /** The CA certificates its ca.crt holds now (undefined: unreadable). */
  readonly currentBundle?: readonly CertificateView[];
}

/** Something the planner will not touch, reported to the user. */
export interface Conflict {
  /** The Secret left alone. */
  readonly target: SecretTarget;
  /** Services to attach Events to. */
  readonly services: readonly string[];
  /** Why, and what the user can do. */
  readonly message: string;
}

/** A leaf that is due while no CA signs (a recovery waits for its new CA's propagation). */
export interface WaitingLeaf {
  /** The Secret whose leaf waits. */
  readonly target: SecretTarget;
  /** The labelled Services of the namespace (empty for the client), for Events. */
  readonly services: readonly string[];
  /** The rule that made it due. */
  readonly reason: RotationReason;
  /** Why it waits, in a sentence. */
  readonly message: string;
  /** When a CA is expected to sign again (the new CA's activation), if known. */
  readonly until?: Instant;
}

/**
 * A leaf that is due but held back by {@link PlanContext.maxIssuances}: more urgent leaves took
 * this plan's issuances (see docs/flood-control.md). A following plan issues it; not an error.
 */
export interface DeferredLeaf {
  /** The Secret whose leaf waits. */
  readonly target: SecretTarget;
  /** The labelled Services of the namespace (empty for the client). */
  readonly services: readonly string[];
  /** The rule that made it due. */
  readonly reason: RotationReason;
  /** Why it is due, in a sentence. */
  readonly message: string;
}

/**
 * Why a namespace with labelled Services is not served: the cap on namespaces
 * ({@link PlanContext.maxNamespaces}, the newest are left out) or the namespace requirement
 * ({@link PlanContext.namespaceRequirement}: the namespace lacks the label).
 */
export type ExclusionReason = 'cap' | 'not_allowed';

/** Every {@link ExclusionReason}, for metrics that list each one. */
export const EXCLUSION_REASONS: readonly ExclusionReason[] = ['cap', 'not_allowed'];

/**
 * A namespace with labelled Services that the plan leaves out: nothing is issued, renewed or
 * bundled in it, and its Secret has no say in the CA rotation, as if it had no labelled Service.
 * See {@link ExclusionReason}, docs/flood-control.md and docs/label-policy.md.
 */
export interface ExcludedNamespace {
  /** The namespace. */
  readonly namespace: string;
  /** Which rule left it out. */
  readonly reason: ExclusionReason;
  /** Its labelled Services, for Events. */
  readonly services: readonly string[];
  /** Why, naming the cap, for an Event on each Service. */
  readonly message: string;
}

/** Why a labelled Service's request or names are left out of its namespace's certificate. */
export type RefusalReason = 'rotate_request_too_large' | 'certificate_too_large';

/**
 * A labelled Service the plan does not fully honour: its rotation request is ignored
 * (`rotate_request_too_large`), or its DNS names would make the namespace's certificate too large
 * to handshake (`certificate_too_large`: the names are left out; the others keep being served).
 */
export interface RefusedService {
  /** The Service's namespace. */
  readonly namespace: string;
  /** The Service's name. */
  readonly service: string;
  /** What was refused. */
  readonly reason: RefusalReason;
  /** Why, naming the limit, for an Event on the Service. */
  readonly message: string;
}

/**
 * A provider namespace the CA rotation does not wait for: its Secret has refused our writes for a
 * reason retrying cannot change, for longer than refusalGrace, and its ca.crt lacks the CA that
 * signs or the one about to. Its writes are still planned every round, so it catches up as soon
 * as the Secret can be written again (docs/ca-rotation.md).
 */
export interface LeftBehindNamespace {
  /** The namespace. */
  readonly namespace: string;
  /** Its labelled Services, for Events. */
  readonly services: readonly string[];
  /** Why its writes are refused. */
  readonly reason: WriteRefusalReason;
  /** Since when its writes have been refused. */
  readonly since: Instant;
  /** What happened, what breaks and what its owner can do, for an Event and a log line. */
  readonly message: string;
}

/** notAfter of what is in use, for metrics computed at scrape time. */
export interface PlanStatus {
  /** notAfter of the active, next and retired CA. */
  readonly ca: CaStatus;
  /** While no CA signs (a recovery waits for its new CA's propagation): when one is expected to sign again. */
  readonly signingPausedUntil?: Instant;
  /** notAfter of the client leaf. */
  readonly client?: Instant;
  /** Per provider namespace: its labelled Services and its leaf's notAfter. */
  readonly namespaces: readonly { readonly namespace: string; readonly services: readonly string[]; readonly notAfter?: Instant }[];
}

/** What to do now. Pure data; {@link executePlan} materialises it. */
export interface Plan {
  /** The instant it was planned for. */
  readonly now: Instant;
  /** The policy it was planned under. */
  readonly policy: Policy;
  /** The CA write, if any. Written first. */
  readonly ca?: CaChange;
  /** The CA layout after the plan: leaves are signed by its active CA, bundles hold its certificates. */
  readonly trust: CaLayout;
  /** The expected bundle text, or undefined while it holds a CA still to be generated. */
  readonly bundle?: string;
  /** Leaves to issue, after the CA write. */
  readonly leaves: readonly LeafIssuance[];
  /** Bundles to rewrite without a new leaf. */
  readonly bundles: readonly BundleUpdate[];
  /** Secrets left alone, to report. */
  readonly conflicts: readonly Conflict[];
  /** Leaves due but waiting for a CA that signs. */
  readonly waiting: readonly WaitingLeaf[];
  /** Labelled Services whose request or names are refused; the rest of their namespace is planned as usual. */
  readonly refused: readonly RefusedService[];
  /** Leaves due but held back by {@link PlanContext.maxIssuances}, most urgent first; nextDueAt is then a second away. */
  readonly deferred: readonly DeferredLeaf[];
  /** Namespaces left out by {@link PlanContext.namespaceRequirement} or {@link PlanContext.maxNamespaces}. */
  readonly excluded: readonly ExcludedNamespace[];
  /** Namespaces whose Secret refuses our writes and that the CA rotation no longer waits for. */
  readonly leftBehind: readonly LeftBehindNamespace[];
  /** What is in use after the plan, for metrics. */
  readonly status: PlanStatus;
  /** Earliest future instant at which anything comes due; plan again then. */
  readonly nextDueAt?: Instant;
  /** With an upstream CA: what it gives, the request to make, and the problems that stand. */
  readonly upstream?: UpstreamPlan;
}

/** Inputs of {@link planRotation} other than the snapshot. */
export interface PlanContext {
  /** The instant to plan for (the caller's clock). */
  readonly now: Instant;
  /** The policy, from {@link resolvePolicy}. */
  readonly policy: Policy;
  /** Caller-owned: a steady-state resync re-parses and re-verifies nothing. */
  readonly cache: CertificateCache;
  /**
   * Set when pod certificates are issued (pod-certificate mode): the longest one the signer issues.
   * A retired CA then stays trusted until every pod certificate it can have signed has expired.
   */
  readonly podCertificateMaxValidity?: Duration;
  /**
   * The most leaves one plan issues (a whole number, at least 1); undefined: no bound. The most
   * urgent go first and the rest are {@link Plan.deferred} to a plan a second later; the leaves of an
   * emergency CA rotation are never held back, and bundle rewrites are not counted (docs/flood-control.md).
   */
  readonly maxIssuances?: number;
  /**
   * The most provider namespaces served (a whole number, at least 1); undefined: no cap. The
   * newest beyond it are {@link Plan.excluded}; a namespace that holds our certificate keeps its place.
   */
  readonly maxNamespaces?: number;
  /**
   * The label a namespace must carry before its labelled Services are served; undefined: every
   * namespace is. A namespace whose {@link ProviderNamespace.allowed} is not true is
   * {@link Plan.excluded} (`not_allowed`) before the cap on namespaces counts it.
   */
  readonly namespaceRequirement?: NamespaceRequirement;
}

/** True when the plan writes nothing. */
export function isPlanEmpty(plan: Plan): boolean {
  return plan.ca === undefined && plan.leaves.length === 0 && plan.bundles.length === 0;
}
