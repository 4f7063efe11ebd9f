import { type CaRotationInput } from '../ca/ca-phases.js';
import { type CaRotationPlan, planCaRotation } from '../ca/ca-rotation.js';
import { readUpstream } from '../ca/upstream.js';
import { pathNotAfter } from '../x509/ca-path.js';
import { type CaLayout, expectedBundle } from '../ca/ca-layout.js';
import { isLeftBehind, lacksSigningCa, leftBehindMessage, refusalsAreLocal } from '../ca/left-behind.js';
import { type Instant, parseInstant, truncateToSecond } from '../common/time.js';
import { orderIssuances } from './issuance-order.js';
import { type DueIssuance, bundleUpdate, planLeaves } from './leaves.js';
import { BUNDLE_WRITTEN_AT_ANNOTATION } from '../secret/observe.js';
import type { Snapshot } from '../secret/snapshot.js';
import { type LeafSubject, type Subjects, collectSubjects } from './subjects.js';
import type { BundleUpdate, Conflict, DeferredLeaf, LeafIssuance, LeftBehindNamespace, Plan, PlanContext, PlanStatus } from './vocabulary.js';

/*
 * The planner as a pipeline, the way planCaRotation folds its phases: collect the subjects
 * (subjects.ts), plan the CA (ca-rotation.ts), plan the leaves under it (leaves.ts), then order the
 * issuances (issuance-order.ts). Each step returns values; planRotation only joins them.
 */

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
  const { now, policy } = ctx;
  checkBound('maxIssuances', ctx.maxIssuances);
  checkBound('maxNamespaces', ctx.maxNamespaces);
  ctx.cache.reserve(cacheEntriesFor(snapshot));

  const found = collectSubjects(snapshot, ctx);
  const { conflicts, refused, excluded } = found;
  const subjects = localRefusalsOnly(found.subjects);
  const ca = planCaRotation(caRotationInput(snapshot, subjects, ctx));
  const status = planStatus(subjects, ca);
  if (ca.conflict !== undefined) return caConflictPlan(ca.conflict, ca, found, status, ctx);

  const bundle = expectedBundle(ca.layout);
  const planned = planLeaves(subjects, ca, bundle, ctx);
  const ordered = orderIssuances(planned.due, ctx.maxIssuances);
  const leaves = ordered.issue.map((d) => d.issuance);
  const held = deferLeaves(ordered.defer, bundle);
  return {
    now,
    policy,
    ca: ca.change,
    trust: ca.layout,
    bundle,
    leaves,
    bundles: [...planned.bundles, ...held.bundles],
    conflicts,
    waiting: planned.waiting,
    refused,
    deferred: held.deferred,
    excluded,
    leftBehind: leftBehindNamespaces(subjects, ca.layout, ctx),
    status,
    nextDueAt: nextDueAt([...ca.dueAt, ...planned.renewals, ...followUps(ca, leaves, held.deferred, ctx)], now),
    ...(ca.upstream ? { upstream: ca.upstream } : {}),
  };
}

/** The plan when the CA Secret is not ours: nothing can be signed, so no leaf or bundle is written. */
function caConflictPlan(conflict: string, ca: CaRotationPlan, found: Subjects, status: PlanStatus, { now, policy }: PlanContext): Plan {
  const { conflicts, refused, excluded } = found;
  const caConflict: Conflict = { target: 'ca', services: [], message: conflict };
  return {
    now,
    policy,
    trust: ca.layout,
    leaves: [],
    bundles: [],
    conflicts: [...conflicts, caConflict],
    waiting: [],
    refused,
    deferred: [],
    excluded,
    leftBehind: [],
    status,
  };
}

/** The subjects, without their refusals when every served provider namespace is refused (see refusalsAreLocal). */
function localRefusalsOnly(subjects: readonly LeafSubject[]): readonly LeafSubject[] {
  const providers = subjects.filter((s) => typeof s.target === 'object');
  if (refusalsAreLocal(providers.map((s) => s.writesRefused))) return subjects;
  return subjects.map(({ writesRefused: _, ...s }) => s);
}

/**
 * The provider namespaces the CA rotation goes on without: their writes refused for refusalGrace,
 * and their bundle short of the CA that signs after the plan or the one about to.
 */
function leftBehindNamespaces(subjects: readonly LeafSubject[], layout: CaLayout, { now, policy }: PlanContext): LeftBehindNamespace[] {
  return subjects.flatMap((s) => {
    const refusal = s.writesRefused;
    if (typeof s.target !== 'object' || !refusal || !isLeftBehind({ refusedSince: refusal.since }, now, policy)) return [];
    const bundle = s.observed?.bundle.ok ? s.observed.bundle.value : undefined;
    if (!lacksSigningCa(bundle, layout)) return [];
    const { namespace } = s.target;
    const message = leftBehindMessage(namespace, refusal, policy);
    return [{ namespace, services: s.services, reason: refusal.reason, since: refusal.since, message }];
  });
}

/** A bound of the plan context: undefined, or a whole number from 1. */
function checkBound(name: string, value: number | undefined): void {
  if (value !== undefined && !(Number.isInteger(value) && value >= 1)) throw new RangeError(`${name} must be a whole number from 1, got ${value}`);
}

/** What the CA plan reads of the subjects: the client's bundle, the leaves in use and every managed bundle. */
function caRotationInput(snapshot: Snapshot, subjects: readonly LeafSubject[], ctx: PlanContext): CaRotationInput {
  const { now, policy, cache } = ctx;
  const managed = subjects.filter((s) => s.observed !== undefined);
  const client = subjects.find((s) => s.target === 'client');
  return {
    now,
    policy,
    cache,
    caSecret: snapshot.caSecret,
    clientBundle: client?.observed?.bundle.ok ? client.observed.bundle.value : [],
    clientChain: client?.observed?.leaf.ok ? (client.observed.leaf.value.chain ?? []) : [],
    leavesInUse: managed.flatMap((s) => (s.observed!.leaf.ok ? [s.observed!.leaf.value] : [])),
    bundles: [
      ...managed.map((s) => ({
        certificates: s.observed!.bundle.ok ? s.observed!.bundle.value : undefined,
        writtenAt: parseInstant(s.secret!.annotations[BUNDLE_WRITTEN_AT_ANNOTATION]),
        ...(s.writesRefused ? { refusedSince: s.writesRefused.since } : {}),
      })),
      ...(snapshot.trustBundles ?? []),
    ],
    ...(ctx.podCertificateMaxValidity === undefined ? {} : { podCertificateMaxValidity: ctx.podCertificateMaxValidity }),
    ...(snapshot.upstream
      ? { upstream: readUpstream(snapshot.upstream, snapshot.caSecret?.ownership === 'managed' ? snapshot.caSecret.data : {}, now, cache) }
      : {}),
  };
}

/** notAfter of what is in use: the CAs after the plan, the client and each namespace's leaf as observed. */
function planStatus(subjects: readonly LeafSubject[], ca: CaRotationPlan): PlanStatus {
  const client = subjects.find((s) => s.target === 'client');
  return {
    ca: ca.status,
    signingPausedUntil: ca.signingResumesAt,
    client: client && notAfterOf(client),
    namespaces: subjects
      .filter((s) => s.target !== 'client')
      .map((s) => ({
        namespace: (s.target as { namespace: string }).namespace,
        services: s.services,
        notAfter: notAfterOf(s),
      })),
  };
}

function notAfterOf(s: LeafSubject): Instant | undefined {
  return s.observed?.leaf.ok ? s.observed.leaf.value.certificate.notAfter : undefined;
}

/** The leaves held back by maxIssuances; their bundles are still kept current. */
function deferLeaves(held: readonly DueIssuance[], bundle: string | undefined): { deferred: DeferredLeaf[]; bundles: BundleUpdate[] } {
  return {
    deferred: held.map(({ subject: s, issuance }) => ({ target: s.target, services: s.services, reason: issuance.reason, message: issuance.message })),
    // A CA activation waits for every bundle, never for the bound.
    bundles: held.flatMap(({ subject }) => bundleUpdate(subject, bundle) ?? []),
  };
}

/** When the plan's own writes call for the next plan: a second away after a deferral, and before the new leaves' renewal. */
function followUps(ca: CaRotationPlan, leaves: readonly LeafIssuance[], deferred: readonly DeferredLeaf[], { now, policy }: PlanContext): Instant[] {
  // The rest are issued by the next plan, a second from now (the writes of this one land first).
  const afterDeferral = deferred.length > 0 ? [truncateToSecond(now) + 1000] : [];
  const signer = ca.layout.active;
  if (!signer || leaves.length === 0) return afterDeferral;
  // Earliest renewal of a leaf issued now, so an adapter waking at nextDueAt is never late.
  const remaining = signer.kind === 'existing' ? pathNotAfter(signer.keyed) - now : policy.caValidity;
  return [...afterDeferral, truncateToSecond(now) + Math.min(policy.leafValidity, remaining) - policy.leafLookahead - policy.leafJitter];
}

/** The earliest of `instants` after `now`, if any. */
function nextDueAt(instants: readonly Instant[], now: Instant): Instant | undefined {
  const future = instants.filter((t) => t > now);
  return future.length > 0 ? future.reduce((a, b) => Math.min(a, b)) : undefined;
}
