import { expectedBundle } from '../ca/bundle.js';
import type { CertificateCache } from '../crypto/cache.js';
import { type CaChange, type CaLayout, type CaStatus, planCaRotation } from '../ca/ca-rotation.js';
import type { CertificateView } from '../x509/certificate.js';
import { type DueLeaf, capNamespaces, orderIssuances } from './issuance-order.js';
import { CLIENT_COMMON_NAME, InvalidNameError, PROVIDER_LABEL, clientSpiffeId, serviceDnsNames } from '../x509/names.js';
import { MAX_DNS_NAME_BYTES, fitServiceNames } from '../x509/name-budget.js';
import { type NamespaceRequirement, notAllowedMessage } from '../policy/namespace-requirement.js';
import { type ObservedLeafSecret, type SecretData, observeLeafSecret } from './observe.js';
import type { Policy } from '../policy/policy.js';
import { type LeafIdentity, type LeafRuleContext, type LeafTrust, type RotationReason, evaluateLeafRules, renewalTime } from '../policy/rules.js';
import { shown, shownList } from '../common/shown.js';
import {
  BUNDLE_WRITTEN_AT_ANNOTATION,
  type ProviderNamespace,
  type ProviderService,
  ROTATE_ACKNOWLEDGED_ANNOTATION,
  type SecretState,
  type Snapshot,
  namespaceRotationRequest,
  pendingRotationRequests,
  rotateRequestProblem,
  secretAcknowledgement,
  secretRotationRequest,
} from './snapshot.js';
import { type Duration, type Instant, parseInstant, truncateToSecond } from '../common/time.js';

/** A Secret the plan writes: the CA Secret, the client Secret, or a provider namespace's Secret. */
export type SecretTarget = 'ca' | 'client' | { readonly namespace: string };

/** `ca`, `client` or `namespace/<name>`: for logs, maps and messages. */
export function describeTarget(target: SecretTarget): string {
  return typeof target === 'string' ? target : `namespace/${target.namespace}`;
}

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
  /** What is in use after the plan, for metrics. */
  readonly status: PlanStatus;
  /** Earliest future instant at which anything comes due; plan again then. */
  readonly nextDueAt?: Instant;
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

/**
 * A namespace with labelled Services that lacks the required label, left out before anything else
 * is judged (its Service names and Secret included); undefined when it is served or has no
 * labelled Service.
 */
function notAllowedNamespace(ns: ProviderNamespace, requirement: NamespaceRequirement | undefined): ExcludedNamespace | undefined {
  if (requirement === undefined || ns.services.length === 0 || ns.allowed === true) return undefined;
  return { namespace: ns.namespace, reason: 'not_allowed', services: ns.services.map((s) => s.name), message: notAllowedMessage(ns.namespace, requirement) };
}

/** True when the plan writes nothing. */
export function isPlanEmpty(plan: Plan): boolean {
  return plan.ca === undefined && plan.leaves.length === 0 && plan.bundles.length === 0;
}

/** One leaf Secret as the planner sees it. */
interface LeafSubject {
  readonly target: SecretTarget;
  /** For messages: `the client certificate`, `namespace team-a`. */
  readonly label: string;
  readonly kind: 'serverLeaf' | 'clientLeaf';
  readonly services: readonly string[];
  readonly promptedBy: readonly string[];
  readonly secret?: SecretState;
  readonly observed?: ObservedLeafSecret;
  readonly previouslyIssued: boolean;
  readonly identity: LeafIdentity;
  readonly request?: string;
  readonly forcedBy?: string;
  /** Its oldest labelled Service's creationTimestamp (namespaces only), if known. */
  readonly since?: Instant;
}

/**
 * Cache entries a plan keeps live per table: each namespace's leaf, and during a CA rotation its
 * next leaf and bundle too, plus the ESO namespace's Secrets. Room for all of them keeps a resync
 * from evicting what it is about to use again.
 */
const CACHE_ENTRIES_PER_NAMESPACE = 3;
function cacheEntriesFor(snapshot: Snapshot): number {
  return CACHE_ENTRIES_PER_NAMESPACE * (snapshot.namespaces.length + 2);
}

/**
 * Plans what to write: `snapshot + now + policy → plan`. Deterministic and side-effect free; bad
 * Secrets and bad Service names become rotations or conflicts, never exceptions.
 */
export function planRotation(snapshot: Snapshot, ctx: PlanContext): Plan {
  const { now, policy, cache } = ctx;
  checkBound('maxIssuances', ctx.maxIssuances);
  checkBound('maxNamespaces', ctx.maxNamespaces);
  cache.reserve(cacheEntriesFor(snapshot));
  const conflicts: Conflict[] = [];
  const refused: RefusedService[] = [];
  const subjects: LeafSubject[] = [];

  const client = snapshot.clientSecret;
  if (client?.ownership === 'foreign') {
    conflicts.push({ target: 'client', services: [], message: 'the client Secret exists but was not written by this installation; it is left alone' });
  } else {
    const request = secretRotationRequest(client);
    subjects.push({
      target: 'client',
      label: 'the client certificate',
      kind: 'clientLeaf',
      services: [],
      promptedBy: [],
      secret: client,
      previouslyIssued: snapshot.clientPreviouslyIssued ?? false,
      observed: client?.ownership === 'managed' ? observeLeafSecret(client.data, cache) : undefined,
      identity: { kind: 'client', uri: clientSpiffeId(policy.clusterDomain, policy.esoNamespace, policy.serviceAccount), commonName: CLIENT_COMMON_NAME },
      request: request === undefined ? undefined : secretAcknowledgement(request),
      forcedBy: request === undefined ? undefined : `the client Secret's annotation eso-mtls.io/rotate (${shown(request, 64)})`,
    });
  }
  const candidates: { ns: ProviderNamespace; valid: ProviderService[] }[] = [];
  const excluded: ExcludedNamespace[] = [];
  for (const ns of snapshot.namespaces) {
    const notAllowed = notAllowedNamespace(ns, ctx.namespaceRequirement);
    if (notAllowed) {
      excluded.push(notAllowed);
      continue;
    }
    const valid = validServices(ns.namespace, ns.services, policy.clusterDomain, conflicts);
    // A namespace without labelled Services is left alone: not renewed, no bundle, no say in retiring a CA.
    if (valid.length === 0) continue;
    if (ns.secret?.ownership === 'foreign') {
      conflicts.push({
        target: { namespace: ns.namespace },
        services: valid.map((s) => s.name),
        message: `namespace ${ns.namespace}: Secret external-secrets-provider-tls exists but was not written by this installation; it is left alone`,
      });
      continue;
    }
    candidates.push({ ns, valid });
  }
  const capped = capNamespaces(
    candidates.map((c) => ({
      item: c,
      namespace: c.ns.namespace,
      served: c.ns.secret?.ownership === 'managed' || c.ns.previouslyIssued,
      since: oldestService(c.valid),
    })),
    ctx.maxNamespaces,
  );
  excluded.push(
    ...capped.left.map(({ ns, valid }) => ({
      namespace: ns.namespace,
      reason: 'cap' as const,
      services: valid.map((s) => s.name),
      message: `namespace ${ns.namespace} is not served: at most ${ctx.maxNamespaces} provider namespaces are (the cap on namespaces; the controller's --max-namespaces), and the newest beyond it are left out, so its certificate is neither issued nor renewed. Raise the cap, or remove the label ${PROVIDER_LABEL} from Services in namespaces that need no certificate.`,
    })),
  );
  for (const { ns, valid } of capped.served) {
    const target = { namespace: ns.namespace };
    const observed = ns.secret?.ownership === 'managed' ? observeLeafSecret(ns.secret.data, cache) : undefined;
    const served = observed?.leaf.ok ? observed.leaf.value.certificate.dnsNames : undefined;
    const { services, added, dnsNames } = fitNamespace(ns.namespace, valid, served, policy.clusterDomain, refused);
    const request = namespaceRotationRequest(services);
    const pending = pendingRotationRequests(services, ns.secret?.annotations[ROTATE_ACKNOWLEDGED_ANNOTATION]);
    subjects.push({
      target,
      label: `namespace ${ns.namespace}`,
      kind: 'serverLeaf',
      services: services.map((s) => s.name),
      promptedBy: [...new Set([...pending, ...added.map((s) => s.name)])],
      secret: ns.secret,
      previouslyIssued: ns.previouslyIssued,
      observed,
      identity: { kind: 'server', dnsNames },
      request,
      forcedBy: pending.length > 0 ? `the annotation eso-mtls.io/rotate of ${listServices(pending)}` : undefined,
      since: oldestService(valid),
    });
  }

  const managed = subjects.filter((s) => s.observed !== undefined);
  const clientSubject = subjects.find((s) => s.target === 'client');
  const ca = planCaRotation({
    now,
    policy,
    cache,
    caSecret: snapshot.caSecret,
    clientBundle: clientSubject?.observed?.bundle.ok ? clientSubject.observed.bundle.value : [],
    leavesInUse: managed.flatMap((s) => (s.observed!.leaf.ok ? [s.observed!.leaf.value.certificate] : [])),
    bundles: [
      ...managed.map((s) => ({
        certificates: s.observed!.bundle.ok ? s.observed!.bundle.value : undefined,
        writtenAt: parseInstant(s.secret!.annotations[BUNDLE_WRITTEN_AT_ANNOTATION]),
      })),
      ...(snapshot.trustBundles ?? []),
    ],
    ...(ctx.podCertificateMaxValidity === undefined ? {} : { podCertificateMaxValidity: ctx.podCertificateMaxValidity }),
  });
  const status: PlanStatus = {
    ca: ca.status,
    signingPausedUntil: ca.signingResumesAt,
    client: clientSubject && notAfterOf(clientSubject),
    namespaces: subjects
      .filter((s) => s.target !== 'client')
      .map((s) => ({
        namespace: (s.target as { namespace: string }).namespace,
        services: s.services,
        notAfter: notAfterOf(s),
      })),
  };
  if (ca.conflict !== undefined) {
    conflicts.push({ target: 'ca', services: [], message: ca.conflict });
    return { now, policy, trust: ca.layout, leaves: [], bundles: [], conflicts, waiting: [], refused, deferred: [], excluded, status };
  }

  const layout = ca.layout;
  // The CAs a leaf rule checks signatures against (certificates only), not the layout the plan returns.
  const leafTrust: LeafTrust = {
    active: layout.active?.kind === 'existing' ? layout.active.keyed.certificate : undefined,
    next: layout.next?.kind === 'existing' ? layout.next.keyed.certificate : undefined,
    retired: layout.retired,
  };
  const bundle = expectedBundle(layout);
  const signer = layout.active;
  const dueAt = [...ca.dueAt];
  const isSignedBy = (leaf: CertificateView, caCert: CertificateView): boolean => cache.isSignedBy(leaf, caCert);
  const due: DueLeaf<{ s: LeafSubject; issuance: LeafIssuance }>[] = [];
  const bundles: BundleUpdate[] = [];
  const waiting: WaitingLeaf[] = [];
  for (const s of subjects) {
    const presence = s.secret === undefined ? 'absent' : s.secret.ownership === 'placeholder' ? 'placeholder' : 'present';
    const ruleContext: LeafRuleContext = {
      now,
      policy,
      subject: s.label,
      presence,
      previouslyIssued: s.previouslyIssued,
      leaf: s.observed?.leaf,
      forcedBy: s.forcedBy ?? (ca.emergency ? 'an emergency CA rotation' : undefined),
      trust: leafTrust,
      isSignedBy,
      identity: s.identity,
    };
    const trigger = evaluateLeafRules(ruleContext);
    if (trigger && signer) {
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
      const emergency = ca.emergency && presence === 'present';
      // The client's certificate is ESO's own, used with every provider: first within its class.
      const since = s.target === 'client' ? -Infinity : s.since;
      due.push({ item: { s, issuance }, reason: trigger.reason, emergency, pastRenewal, notAfter: leaf?.notAfter, since });
      continue;
    }
    if (trigger)
      waiting.push({
        target: s.target,
        services: s.services,
        until: ca.signingResumesAt,
        reason: trigger.reason,
        message: `${trigger.message} (waiting: no CA signs until the new one is activated)`,
      });
    if (s.observed && s.observed.bundleText !== bundle)
      bundles.push({ target: s.target, base: s.secret!.version, data: s.secret!.data, currentBundle: currentBundleOf(s) });
    if (!trigger && s.observed?.leaf.ok) dueAt.push(renewalTime(s.observed.leaf.value.certificate, policy));
  }
  const ordered = orderIssuances(due, ctx.maxIssuances);
  const leaves = ordered.issue.map((d) => d.issuance);
  const deferred: DeferredLeaf[] = [];
  for (const { s, issuance } of ordered.defer) {
    deferred.push({ target: s.target, services: s.services, reason: issuance.reason, message: issuance.message });
    // Its bundle is still kept current: a CA activation waits for every bundle, never for the bound.
    if (s.observed && s.observed.bundleText !== bundle)
      bundles.push({ target: s.target, base: s.secret!.version, data: s.secret!.data, currentBundle: currentBundleOf(s) });
  }
  // The rest are issued by the next plan, a second from now (the writes of this one land first).
  if (deferred.length > 0) dueAt.push(truncateToSecond(now) + 1000);
  if (signer && leaves.length > 0) {
    // Earliest renewal of a leaf issued now, so an adapter waking at nextDueAt is never late.
    const remaining = signer.kind === 'existing' ? signer.keyed.certificate.notAfter - now : policy.caValidity;
    dueAt.push(truncateToSecond(now) + Math.min(policy.leafValidity, remaining) - policy.leafLookahead - policy.leafJitter);
  }
  const future = dueAt.filter((t) => t > now);
  return {
    now,
    policy,
    ca: ca.change,
    trust: layout,
    bundle,
    leaves,
    bundles,
    conflicts,
    waiting,
    refused,
    deferred,
    excluded,
    status,
    nextDueAt: future.length > 0 ? future.reduce((a, b) => Math.min(a, b)) : undefined,
  };
}

/** A bound of the plan context: undefined, or a whole number from 1. */
function checkBound(name: string, value: number | undefined): void {
  if (value !== undefined && !(Number.isInteger(value) && value >= 1)) throw new RangeError(`${name} must be a whole number from 1, got ${value}`);
}

/** The earliest creationTimestamp of `services`, if any is known. */
function oldestService(services: readonly ProviderService[]): Instant | undefined {
  let oldest: Instant | undefined;
  for (const s of services) if (s.createdAt !== undefined && (oldest === undefined || s.createdAt < oldest)) oldest = s.createdAt;
  return oldest;
}

function currentBundleOf(s: LeafSubject): readonly CertificateView[] | undefined {
  return s.observed?.bundle.ok ? s.observed.bundle.value : undefined;
}

function notAfterOf(s: LeafSubject): Instant | undefined {
  return s.observed?.leaf.ok ? s.observed.leaf.value.certificate.notAfter : undefined;
}

/** The Services whose names can be DNS SANs; each bad one becomes a conflict. */
function validServices(namespace: string, services: readonly ProviderService[], clusterDomain: string, conflicts: Conflict[]): ProviderService[] {
  return services.filter((s) => {
    try {
      serviceDnsNames({ namespace, name: s.name }, clusterDomain);
      return true;
    } catch (e) {
      if (!(e instanceof InvalidNameError)) throw e;
      conflicts.push({ target: { namespace }, services: [s.name], message: e.message });
      return false;
    }
  });
}

/**
 * The Services a namespace's certificate serves: those whose names fit its size bound (see
 * fitServiceNames), and their DNS names. Each Service left out, and each oversized rotation
 * request, is refused.
 */
function fitNamespace(
  namespace: string,
  services: readonly ProviderService[],
  served: readonly string[] | undefined,
  clusterDomain: string,
  refused: RefusedService[],
): { services: readonly ProviderService[]; added: readonly ProviderService[]; dnsNames: readonly string[] } {
  const fit = fitServiceNames(
    services.map((s) => ({ ...s, namespace })),
    served,
    clusterDomain,
  );
  for (const { service, bytes } of fit.refused) {
    refused.push({
      namespace,
      service: service.name,
      reason: 'certificate_too_large',
      message: `Service ${namespace}/${service.name} is left out of the certificate of namespace ${namespace}: with its DNS names they would take ${bytes} bytes, over the limit of ${MAX_DNS_NAME_BYTES} (a larger certificate fails the TLS handshake); the ${fit.fitted.length} Service(s) that fit keep being served. Label fewer Services in this namespace, or use shorter names.`,
    });
  }
  for (const s of fit.fitted) {
    const problem = rotateRequestProblem(s.rotateRequest);
    if (problem !== undefined)
      refused.push({ namespace, service: s.name, reason: 'rotate_request_too_large', message: `Service ${namespace}/${s.name}: ${problem}` });
  }
  return { services: fit.fitted, added: fit.added, dnsNames: fit.dnsNames };
}

/** `Service a`, `Services a, b, c and 4 more`: bounded, for messages. */
function listServices(names: readonly string[]): string {
  return `${names.length === 1 ? 'Service' : 'Services'} ${shownList(names, 3)}`;
}
