import { truncate } from '../common/truncate.js';
import { type Duration, type Instant, parseInstant, truncateToSecond } from '../common/time.js';
import type { CertificateCache } from '../crypto/cache.js';
import type { Observed } from '../common/observed.js';
import { type ObservedBundle, type ObservedCaSecret, SecretKeys, caKeyField, observeCaSecret } from '../secret/observe.js';
import { isEmergencyRequest, secretRotationRequest } from '../secret/rotate-request.js';
import type { SecretState } from '../secret/snapshot.js';
import type { Policy } from '../policy/policy.js';
import { type RotationReason, issuedNoLaterThan } from '../policy/rules.js';
import type { CertificateView, KeyedCertificate } from '../x509/certificate.js';
import { textOf } from '../x509/pem.js';
import { anchorOf, isIntermediate, pathNotAfter, topOf } from '../x509/ca-path.js';
import { CA_SOURCE_ANNOTATION, SELF_SIGNED_SOURCE, type UpstreamReading } from './upstream.js';
import { rsaExponentRefusal } from '../x509/rsa-public-key.js';
import { ACTIVE_SINCE_ANNOTATION, type CaLayout, type CaMaterial, NEXT_SINCE_ANNOTATION } from './ca-layout.js';
import { isLeftBehind, leftBehindFrom } from './left-behind.js';

/**
 * What a CA write does; one write may do several (retire an old CA and prepare the next).
 * - `create`: no CA anywhere: a new active CA at once.
 * - `prepare`: generate the next CA and publish it in every bundle; it signs nothing yet.
 * - `activate`: the next CA signs from now on; the old active one is retired (still trusted).
 * - `retire`: drop retired CAs nothing in use depends on any more.
 * - `recover`: the CA key is lost or unreadable: keep the old certificates trusted as retired
 *   and prepare a new CA, without a hard cut-over.
 * - `emergency`: a new active CA at once and every older one out of every bundle.
 * - `restore`: a CA key is good but its certificate is missing or unreadable: the certificate is
 *   put back from the client Secret's bundle; nothing is re-issued.
 * - `renew`: an upstream intermediate is replaced by the source's new one under the same anchor:
 *   it signs at once, no bundle changes, and leaves move onto it as `ca_rotated`.
 */
export type CaPhase = 'create' | 'prepare' | 'activate' | 'retire' | 'recover' | 'emergency' | 'restore' | 'renew';

/** What `planCaRotation` (ca-rotation.ts) needs besides the CA Secret. */
export interface CaRotationInput {
  readonly now: Instant;
  readonly policy: Policy;
  readonly cache: CertificateCache;
  readonly caSecret?: SecretState;
  /**
   * CA certificates in the managed client Secret's ca.crt (ESO namespace): the only place trust
   * is recovered from when the CA Secret is lost. Never a provider namespace.
   */
  readonly clientBundle: readonly CertificateView[];
  /**
   * The intermediates the managed client Secret's tls.crt serves after its leaf (ESO namespace):
   * where an upstream intermediate whose certificate the CA Secret lost is restored from, its
   * anchor from {@link clientBundle}. Never a provider namespace. Absent: none.
   */
  readonly clientChain?: readonly CertificateView[];
  /** Usable leaves in managed Secrets that count (namespaces with labelled Services, and the client), each with the intermediates served after it. */
  readonly leavesInUse: readonly Pick<KeyedCertificate, 'certificate' | 'chain'>[];
  /** The bundles of those managed Secrets, which must hold `next` for propagationDelay before it signs. */
  readonly bundles: readonly ObservedBundle[];
  /**
   * Set in pod-certificate mode: the longest pod certificate the signer issues. Pod certificates
   * are not observable, so a retired CA stays until the last one it can have signed has expired.
   */
  readonly podCertificateMaxValidity?: Duration;
  /**
   * Set when the CA comes from an upstream PKI (ca/upstream.ts): its intermediates are taken from
   * the source instead of generated, and the self-signed CA is moved away from like any anchor.
   * Absent: the self-signed CA, as always.
   */
  readonly upstream?: UpstreamReading;
}

/*
 * The phases of a CA plan, one small pure function each, in the order planCaRotation decides
 * them (docs/ca-rotation.md has a section per phase, in the same order): emergency, restore,
 * salvage, retire, recover or create, activate, prepare. Each reads the CA Secret as read and the
 * slots the phase before it left, and says what it did.
 */

/** The CA Secret as read, and what every phase may look at. */
export interface CaReading {
  readonly input: CaRotationInput;
  readonly observed: ObservedCaSecret;
  /** The CA Secret is ours (not absent, not a placeholder). */
  readonly managed: boolean;
  /** A pending `eso-mtls.io/rotate` request on the CA Secret. */
  readonly request?: string;
  /** The active and next CA with their keys: readable and unexpired, or restored. */
  readonly active?: KeyedCertificate;
  readonly next?: KeyedCertificate;
  /** Certificates of good keys put back from the client Secret, for the restore phase to report. */
  readonly restored: readonly Restored[];
  /** retired.crt as read (empty when unreadable). */
  readonly retired: readonly CertificateView[];
  /** Since when the active CA as read has signed, from the CA Secret's annotation; undefined when unknown or none is active. */
  readonly activeSince?: Instant;
  /** Since when next as read has been published, from the CA Secret's annotation, if written. */
  readonly nextSince?: Instant;
  /** The source of the CA Secret's CAs as it records it ({@link CA_SOURCE_ANNOTATION}; absent: self-signed). */
  readonly recordedSource: string;
}

/** A good key's certificate put back from the client Secret: which keys, what, from where, and what was wrong. */
export interface Restored {
  readonly keys: string;
  readonly keyed: KeyedCertificate;
  /** `the client Secret's ca.crt` (a self-signed root) or `the client Secret's tls.crt chain` (an upstream intermediate). */
  readonly from: string;
  readonly detail: string;
}

/** What one phase decided: the slots after it, and, when it acts, what goes into the CA write. */
export interface CaStep {
  readonly slots: CaLayout;
  readonly phase?: CaPhase;
  readonly reason?: RotationReason;
  readonly message?: string;
  /** Future instants at which this phase will act. */
  readonly dueAt: readonly Instant[];
  /** When a CA is expected to sign again, where this phase knows. */
  readonly resumesAt?: Instant;
  /** With an upstream CA: this phase would take a new intermediate, and the source has none on offer yet (why, for messages). */
  readonly wants?: string;
  /** With an upstream CA: the reason it wants one, for the request (as `reason` when acting). */
  readonly wantsReason?: RotationReason;
}

/** One phase: pure, like the leaf rules. */
export type CaPhaseRule = (reading: CaReading, slots: CaLayout) => CaStep;

const GENERATE: CaMaterial = { kind: 'generate' };
const existing = (keyed: KeyedCertificate): CaMaterial => ({ kind: 'existing', keyed });
const certOf = (m: CaMaterial | undefined): CertificateView | undefined => (m?.kind === 'existing' ? m.keyed.certificate : undefined);
const anchorOfSlot = (m: CaMaterial | undefined): CertificateView | undefined => (m?.kind === 'existing' ? anchorOf(m.keyed) : undefined);
const idle = (slots: CaLayout): CaStep => ({ slots, dueAt: [] });

/** Reads the CA Secret: what is usable, what can be restored, and the pending request. */
export function readCaSecret(input: CaRotationInput): CaReading {
  const { now, cache, caSecret } = input;
  const managed = caSecret?.ownership === 'managed';
  const observed: ObservedCaSecret = managed ? observeCaSecret(caSecret.data, cache) : { active: undefined, next: undefined, retired: undefined };
  const read = (pair: ObservedCaSecret['active'], keyKey: string, keys: string) => {
    if (pair?.ok) return { keyed: pair.value.certificate.isCa && pair.value.certificate.notAfter > now ? pair.value : undefined };
    const found = pair === undefined || !managed ? undefined : restorableCertificate(textValue(caSecret.data[keyKey]), input);
    return { keyed: found?.keyed, restored: found && pair && { keys, keyed: found.keyed, from: found.from, detail: pair.detail } };
  };
  // The key is ca.key, or ca.key-ref where a CaSigner holds it: the reference is then the key.
  const keyField = (slot: 'active' | 'next'): string => caKeyField(caSecret?.data ?? {}, slot);
  const active = read(observed.active, keyField('active'), `ca.crt/${keyField('active')}`);
  const next = read(observed.next, keyField('next'), `next.crt/${keyField('next')}`);
  return {
    input,
    observed,
    managed,
    request: secretRotationRequest(caSecret),
    active: active.keyed,
    next: next.keyed,
    restored: [active.restored, next.restored].filter((r) => r !== undefined),
    retired: observed.retired?.ok ? observed.retired.value : [],
    activeSince: active.keyed && managed ? parseInstant(caSecret.annotations[ACTIVE_SINCE_ANNOTATION]) : undefined,
    nextSince: next.keyed && managed ? parseInstant(caSecret.annotations[NEXT_SINCE_ANNOTATION]) : undefined,
    recordedSource: (managed ? caSecret.annotations[CA_SOURCE_ANNOTATION] : undefined) || SELF_SIGNED_SOURCE,
  };
}

/** The slots as read, before any phase. */
export function initialSlots(reading: CaReading): CaLayout {
  return { active: reading.active && existing(reading.active), next: reading.next && existing(reading.next), retired: reading.retired.filter((c) => c.isCa) };
}

/** Part of the CA Secret is unreadable and was not restored. */
function isBroken({ observed, active }: CaReading): boolean {
  return (observed.active !== undefined && !active) || (observed.retired !== undefined && !observed.retired.ok);
}

/**
 * Emergency: `eso-mtls.io/rotate: emergency` on the CA Secret: a new active CA at once, every older
 * one out. With an upstream CA, once the source offers a new intermediate (until then the request
 * stands unacknowledged, and preparePhase asks for one).
 */
export function emergencyPhase(reading: CaReading): CaStep | undefined {
  const { input, request } = reading;
  if (!isEmergencyRequest(request)) return undefined;
  const offer = input.upstream && newOffer(reading, initialSlots(reading));
  if (input.upstream && !offer) return undefined;
  return {
    slots: { active: offer ? existing(offer) : GENERATE, retired: [] },
    phase: 'emergency',
    reason: 'forced',
    message: `emergency CA rotation requested (${truncate(request!, 64)}): new CA, every older one leaves every bundle`,
    dueAt: [truncateToSecond(input.now + input.policy.caValidity) - input.policy.caLookahead],
  };
}

/** Restore: a good key whose certificate is missing or unreadable got it back from the client Secret (see readCaSecret). */
export const restorePhase: CaPhaseRule = ({ restored }, slots) =>
  restored.length === 0
    ? idle(slots)
    : {
        slots,
        phase: 'restore',
        dueAt: [],
        message: restored
          .map(
            (r) =>
              `${r.keys}: ${r.detail}; the key is good, so its certificate ${truncate(r.keyed.certificate.subject)} (serial ${truncate(r.keyed.certificate.serialNumber, 64)}) is restored from ${r.from} and nothing is re-issued`,
          )
          .join('; '),
      };

/**
 * Salvage: with key material lost or unreadable, every anchor still readable (the last certificate
 * of each CA slot's path, retired.crt, then the client bundle in the ESO namespace) stays trusted
 * as retired, so no leaf loses its chain.
 */
export const salvagePhase: CaPhaseRule = (reading, slots) => {
  const { caSecret, clientBundle, cache } = reading.input;
  if (reading.managed && !isBroken(reading) && (slots.active || slots.next)) return idle(slots);
  const salvaged = [
    ...(reading.managed
      ? [
          ...[SecretKeys.caCertificate, SecretKeys.nextCertificate].flatMap((k) => readableCas(caSecret!.data[k], cache).slice(-1)),
          ...readableCas(caSecret!.data[SecretKeys.retiredCertificates], cache),
        ]
      : []),
    ...clientBundle.filter((c) => c.isCa),
  ];
  const keep = new Set([anchorOfSlot(slots.active)?.pem, anchorOfSlot(slots.next)?.pem]);
  return idle({ ...slots, retired: dedupe([...slots.retired, ...salvaged.filter((c) => !keep.has(c.pem))]) });
};

/**
 * Retire: a retired CA leaves once nothing in use is signed by it and every replacement has had
 * propagationDelay + maxConnectionAge to reach its peers, or at once when it has expired. In
 * pod-certificate mode it also waits for {@link podCertificatesEnd}.
 */
export const retirePhase: CaPhaseRule = (reading, slots) => {
  const { now, policy, cache, leavesInUse } = reading.input;
  const podEnd = podCertificatesEnd(reading);
  // The last replacement is bounded by the newest leaf in use (whatever signed it: during a
  // recovery no CA is active, yet replaced leaves may still be served).
  let lastReplacement = -Infinity;
  if (slots.retired.length > 0) for (const l of leavesInUse) lastReplacement = Math.max(lastReplacement, issuedNoLaterThan(l.certificate, policy));
  const retireAfter = lastReplacement + policy.propagationDelay + policy.maxConnectionAge;
  const dueAt: Instant[] = [];
  const kept = slots.retired.filter((ca) => {
    if (ca.notAfter <= now) return false;
    // A leaf depends on an anchor when its served path ends at it: the leaf itself under a self-signed CA.
    const inUse = leavesInUse.some((l) => cache.isSignedBy(topOf(l), ca));
    if (inUse) dueAt.push(now + 1000 + policy.propagationDelay + policy.maxConnectionAge);
    else if (now < retireAfter) dueAt.push(retireAfter);
    if (now < podEnd && Number.isFinite(podEnd)) dueAt.push(podEnd);
    dueAt.push(ca.notAfter);
    return inUse || now < retireAfter || now < podEnd;
  });
  // Only certificates retired.crt held count: salvaged ones nothing needs were never published as retired.
  const dropped = reading.retired.filter((c) => !kept.includes(c)).length;
  const step = { slots: { ...slots, retired: kept }, dueAt };
  return dropped === 0 ? step : { ...step, phase: 'retire', message: `retiring ${dropped} CA certificate(s) nothing in use depends on` };
};

/**
 * Until when a pod certificate signed by a retired CA can still be in use, plus the time for its
 * replacement to reach peers: the active CA's activation (every retired CA stopped signing by then)
 * plus the longest pod certificate, propagationDelay and maxConnectionAge. Without pod certificates,
 * -Infinity; with an unknown activation (no active CA, or no annotation), Infinity: the CA stays
 * until it expires.
 */
function podCertificatesEnd({ input, activeSince }: CaReading): Instant {
  const { podCertificateMaxValidity, policy } = input;
  if (podCertificateMaxValidity === undefined) return -Infinity;
  if (activeSince === undefined) return Infinity;
  return activeSince + podCertificateMaxValidity + policy.propagationDelay + policy.maxConnectionAge;
}

/**
 * Recover or create: no CA signs and none is waiting. With a retired CA still valid, a new CA is
 * published as next (no hard cut-over); with none, a new active CA is created at once.
 */
export const recoverOrCreatePhase: CaPhaseRule = (reading, slots) => {
  const { now, clientBundle, upstream } = reading.input;
  const lostWhy: RotationReason = reading.managed ? 'invalid' : 'secret_missing';
  const { observed } = reading;
  if (!slots.active && !slots.next && upstream) return upstreamFirstCa(reading, slots, lostWhy);
  if (!slots.active && !slots.next) {
    if (slots.retired.some((c) => c.notAfter > now)) {
      const why = reading.managed
        ? `unusable (${problemOf(observed.active) ?? 'no ca.crt/ca.key'}) and no certificate in the client Secret's ca.crt matches it`
        : 'gone';
      return {
        slots: { ...slots, next: GENERATE },
        phase: 'recover',
        reason: lostWhy,
        dueAt: [],
        message: `the CA key is ${why}: ${slots.retired.length} CA certificate(s) stay trusted as retired while a new CA is published`,
      };
    }
    const reason: RotationReason = reading.managed ? 'invalid' : clientBundle.some((c) => c.isCa) ? 'secret_missing' : 'initial';
    return { slots: { ...slots, active: GENERATE }, phase: 'create', reason, message: 'no CA anywhere: creating one', dueAt: [] };
  }
  if (!isBroken(reading)) return idle(slots);
  return {
    slots,
    phase: 'recover',
    reason: lostWhy,
    dueAt: [],
    message: `part of the CA Secret is unreadable (${problemOf(observed.active) ?? problemOf(observed.retired) ?? 'ca.crt/ca.key'}): readable CA certificates stay trusted as retired`,
  };
};

/**
 * With an upstream CA and nothing signing or waiting: the source's intermediate signs at once when
 * no retired anchor is still trusted or its anchor is one of them; otherwise it is published as
 * next first. Without one on offer, nothing signs until the source gives one.
 */
function upstreamFirstCa(reading: CaReading, slots: CaLayout, lostWhy: RotationReason): CaStep {
  const { now, clientBundle } = reading.input;
  const source = reading.input.upstream!.source;
  const offer = newOffer(reading, slots);
  const trusted = slots.retired.filter((c) => c.notAfter > now);
  // A CA Secret holding only the pending key of a first request has lost nothing.
  const lost = reading.observed.active !== undefined || trusted.length > 0;
  const reason: RotationReason = lost ? lostWhy : clientBundle.some((c) => c.isCa) ? 'secret_missing' : 'initial';
  if (!offer) {
    const why = trusted.length > 0 ? 'no CA signs: the CA key is lost' : 'no CA anywhere';
    return { ...idle(slots), wants: `${why}; waiting for an intermediate from ${source}`, wantsReason: reason };
  }
  const described = `the intermediate ${truncate(offer.certificate.subject)} from ${source}`;
  if (trusted.length > 0 && !trusted.some((c) => c.pem === anchorOf(offer).pem)) {
    return {
      slots: { ...slots, next: existing(offer) },
      phase: 'recover',
      reason,
      dueAt: [],
      message: `no CA signs: ${trusted.length} anchor(s) stay trusted as retired while ${described}, under another anchor, is published`,
    };
  }
  return { slots: { ...slots, active: existing(offer) }, phase: 'create', reason, message: `no CA signs: ${described} signs from now on`, dueAt: [] };
}

/**
 * Activate: next signs once its anchor has been published for propagationDelay and every managed
 * bundle holds it, or at a deadline past which waiting would do more harm; the old active CA's
 * anchor is retired. A bundle whose writes have been refused for refusalGrace (left-behind.ts) is
 * not waited for. An upstream intermediate under the anchor already in force signs at once.
 */
export const activatePhase: CaPhaseRule = (reading, slots) => {
  const { input } = reading;
  const { now, policy } = input;
  const nextCert = certOf(slots.next);
  if (!nextCert) return idle(slots);
  const activeEnd = slots.active?.kind === 'existing' ? pathNotAfter(slots.active.keyed) : undefined;
  const nextAnchor = anchorOfSlot(slots.next)!;
  const activeAnchor = anchorOfSlot(slots.active);
  if (activeAnchor !== undefined && activeAnchor.pem === nextAnchor.pem) {
    return {
      slots: { active: slots.next, next: undefined, retired: slots.retired },
      phase: 'activate',
      dueAt: [],
      message: `activating the next CA ${truncate(nextCert.subject)}: under the anchor already in force, nothing waits`,
    };
  }
  // A bundle counts once it has held next's anchor for propagationDelay: since next was published,
  // and since the bundle was last written (a write that failed and was retried reached peers later).
  // An upstream intermediate's notBefore is its issuer's: the CA Secret records when we placed it.
  let lastWrite = reading.nextSince !== undefined ? reading.nextSince + 1000 : issuedNoLaterThan(nextCert, policy);
  let ready = true;
  const holdsNext = (b: ObservedBundle): boolean => b.certificates?.some((c) => c.pem === nextAnchor.pem) ?? false;
  // One namespace that cannot be written must not hold every other one's rotation for months.
  const leftBehind = input.bundles.filter((b) => !holdsNext(b) && isLeftBehind(b, now, policy)).length;
  const leftBehindAt = input.bundles.flatMap((b) => (holdsNext(b) ? [] : (leftBehindFrom(b, policy) ?? [])));
  for (const b of input.bundles) {
    if (!holdsNext(b)) ready &&= isLeftBehind(b, now, policy);
    // + 1 s like issuedNoLaterThan: never in the same instant as the write, even with no delay.
    else if (b.writtenAt !== undefined && b.writtenAt <= now) lastWrite = Math.max(lastWrite, b.writtenAt + 1000);
  }
  const activationAt = lastWrite + policy.propagationDelay;
  // Past this point leaves signed by the old CA would be due at birth; stop waiting for a bundle
  // that cannot be written (a CA without an active one waits at most one more propagationDelay).
  const deadline =
    activeEnd !== undefined ? activeEnd - policy.leafLookahead - policy.leafJitter : activationAt + policy.propagationDelay + policy.reconcileInterval;
  if (now >= activationAt && (ready || now >= deadline)) {
    return {
      slots: { active: slots.next, next: undefined, retired: dedupe([...(activeAnchor ? [activeAnchor] : []), ...slots.retired]) },
      phase: 'activate',
      dueAt: [],
      message: `activating the next CA ${truncate(nextCert.subject)}${ready ? '' : ' (deadline reached before every bundle held it)'}${leftBehind > 0 ? ` without ${leftBehind} namespace(s) whose Secret refuses our writes (left behind)` : ''}`,
    };
  }
  // Bundles short of next are written this round: they count from a second after now.
  const resumesAt = ready ? activationAt : Math.min(deadline, Math.max(activationAt, truncateToSecond(now) + 1000 + policy.propagationDelay));
  return { slots, dueAt: [activationAt, deadline, ...leftBehindAt], resumesAt };
};

/**
 * Prepare: a next CA is generated and published when the active one enters its lookahead, a
 * rotation is asked for, or next is unreadable. A request while a CA is being created or recovered
 * is met by that new CA. With an upstream CA the next one is the source's intermediate instead
 * (see {@link upstreamNext}), and a CA from another source than the one configured is moved away from.
 */
export const preparePhase: CaPhaseRule = (reading, slots) => {
  const { now, policy, upstream } = reading.input;
  const { request } = reading;
  const signing = slots.active?.kind === 'existing' ? slots.active.keyed : undefined;
  const freshCa = slots.active?.kind === 'generate' || slots.next?.kind === 'generate' || offerPlaced(reading, slots);
  const prepareAt = signing ? signing.certificate.notAfter - caLookahead(signing, policy, upstream) : Infinity;
  const nextBroken = reading.observed.next !== undefined && !reading.next;
  const reason = prepareReason({
    requested: request !== undefined && !freshCa,
    signing: signing !== undefined,
    hasNext: slots.next !== undefined,
    nextBroken,
    due: now >= prepareAt,
    sourceChanged: signing !== undefined && reading.recordedSource !== (upstream?.source ?? SELF_SIGNED_SOURCE),
  });
  if (upstream) return upstreamNext(reading, slots, reason, prepareAt);
  if (reason === undefined) return { slots, dueAt: signing && !slots.next ? [prepareAt] : [] };
  return {
    slots: { ...slots, next: GENERATE },
    phase: 'prepare',
    reason,
    message: `preparing the next CA (${prepareWhy(reason, reading, signing)})`,
    dueAt: [],
  };
};

/** Why a next CA is prepared, in words. */
function prepareWhy(reason: RotationReason, reading: CaReading, signing: KeyedCertificate | undefined): string {
  if (reason === 'forced') return `rotation requested: ${truncate(reading.request!, 64)}`;
  if (reason === 'invalid') return 'next.crt/next.key unreadable';
  if (reason === 'ca_mismatch')
    return `the CA source is now ${reading.input.upstream?.source ?? SELF_SIGNED_SOURCE}, not ${truncate(reading.recordedSource, 128)}`;
  return `active CA notAfter ${new Date(signing!.certificate.notAfter).toISOString()}`;
}

/**
 * The lead by which the active CA is replaced: the policy's, or for an upstream intermediate the
 * same share of the validity the issuer actually gave as the policy's lead is of the validity asked
 * for (an issuer may shorten it).
 */
export function caLookahead(ca: KeyedCertificate, policy: Policy, upstream: UpstreamReading | undefined): number {
  if (!upstream || !isIntermediate(ca)) return policy.caLookahead;
  const given = ca.certificate.notAfter - ca.certificate.notBefore;
  return Math.round(policy.caLookahead * Math.min(1, given / upstream.requestedValidity));
}

/**
 * With an upstream CA, when a new intermediate is called for: the source's, when it offers one
 * that is neither active nor next. Under the active CA's anchor it signs at once (no bundle
 * changes, so nothing waits); under another anchor it is published as next and activated like any
 * new anchor. A user's Secret holding a new intermediate is taken whenever it appears. Without an
 * offer the step says it wants one; past the renewal time that is a standing problem.
 */
function upstreamNext(reading: CaReading, slots: CaLayout, reason: RotationReason | undefined, prepareAt: Instant): CaStep {
  const upstream = reading.input.upstream!;
  const offer = slots.next ? undefined : newOffer(reading, slots);
  const renewed = upstream.kind === 'secret' && offer !== undefined && slots.active?.kind === 'existing';
  const why = reason ?? (renewed ? 'forced' : undefined);
  if (why === undefined || slots.next !== undefined) return { slots, dueAt: slots.active && !slots.next ? [prepareAt] : [] };
  const words =
    reason === undefined
      ? `${upstream.source} holds a new intermediate`
      : prepareWhy(reason, reading, slots.active?.kind === 'existing' ? slots.active.keyed : undefined);
  if (!offer) return { ...idle(slots), wants: words, wantsReason: why };
  const activeAnchor = anchorOfSlot(slots.active);
  const described = `${truncate(offer.certificate.subject)} from ${upstream.source}`;
  if (activeAnchor?.pem === anchorOf(offer).pem) {
    return {
      slots: { ...slots, active: existing(offer) },
      phase: 'renew',
      reason: why,
      dueAt: [],
      message: `renewing the intermediate (${words}): ${described} signs from now on, under the same anchor`,
    };
  }
  return {
    slots: { ...slots, next: existing(offer) },
    phase: 'prepare',
    reason: why,
    dueAt: [],
    message: `preparing the next CA (${words}): ${described}, under another anchor`,
  };
}

/** True when an earlier phase of this plan placed the source's intermediate (a new CA, like a generated one). */
function offerPlaced(reading: CaReading, slots: CaLayout): boolean {
  const offer = reading.input.upstream?.offer?.certificate.pem;
  if (offer === undefined || [reading.active, reading.next].some((k) => k?.certificate.pem === offer)) return false;
  return [certOf(slots.active), certOf(slots.next)].some((c) => c?.pem === offer);
}

/** The source's verified intermediate when it is neither the active CA nor next, if any. */
function newOffer(reading: CaReading, slots: CaLayout): KeyedCertificate | undefined {
  const offer = reading.input.upstream?.offer;
  if (!offer) return undefined;
  const held = [certOf(slots.active), certOf(slots.next)].some((c) => c?.pem === offer.certificate.pem);
  return held ? undefined : offer;
}

/** Why the next CA is prepared now, if it is: asked for, unreadable, from another source, or the active CA's lookahead. */
function prepareReason(s: {
  requested: boolean;
  signing: boolean;
  hasNext: boolean;
  nextBroken: boolean;
  due: boolean;
  sourceChanged: boolean;
}): RotationReason | undefined {
  if (s.requested) return 'forced';
  if (!s.signing || s.hasNext) return undefined;
  if (s.nextBroken) return 'invalid';
  if (s.sourceChanged) return 'ca_mismatch';
  return s.due ? 'expiring' : undefined;
}

/**
 * When CAs generated by this plan act next: a new next CA can sign once published for
 * propagationDelay (so signing resumes then, during a recovery); a new active CA is prepared for
 * replacement at the end of its life.
 */
export function generatedSchedule({ input }: CaReading, slots: CaLayout): CaStep {
  const { now, policy } = input;
  const dueAt: Instant[] = [];
  let resumesAt: Instant | undefined;
  if (slots.next?.kind === 'generate') {
    resumesAt = truncateToSecond(now - policy.notBeforeBackdate) + policy.notBeforeBackdate + 1000 + policy.propagationDelay;
    dueAt.push(resumesAt);
  }
  if (slots.active?.kind === 'generate') dueAt.push(truncateToSecond(now + policy.caValidity) - policy.caLookahead);
  return { slots, dueAt, ...(resumesAt === undefined ? {} : { resumesAt }) };
}

/** The detail of an unusable part of the CA Secret, for messages. */
function problemOf(o: Observed<unknown> | undefined): string | undefined {
  return o !== undefined && !o.ok ? o.detail : undefined;
}

/** A Secret value as text; '' for anything unreadable. */
function textValue(value: unknown): string {
  if (typeof value !== 'string' && !(value instanceof Uint8Array)) return '';
  try {
    return textOf(value);
  } catch {
    return '';
  }
}

/**
 * The certificate of a good CA key whose own certificate is missing or unreadable, from the client
 * Secret only (ESO namespace, never a provider namespace, which tenants can write): a self-signed,
 * unexpired CA certificate in its bundle whose public key matches and whose signature verifies, and
 * never one whose RSA exponent the CA Secret's check refuses (it would be restored each round); or
 * else an upstream intermediate with its path, from the chain its leaf serves ({@link restorablePath}).
 */
function restorableCertificate(keyText: string, input: CaRotationInput): { readonly keyed: KeyedCertificate; readonly from: string } | undefined {
  if (keyText.trim() === '') return undefined;
  const { clientBundle, cache, now } = input;
  const usable = (c: CertificateView): boolean => c.isCa && c.notAfter > now && rsaExponentRefusal(c.subjectPublicKeyInfo) === undefined;
  const root = clientBundle.find((c) => usable(c) && c.subject === c.issuer && cache.isSignedBy(c, c) && cache.checkKey(c, keyText) === 'match');
  if (root) return { keyed: { certificate: root, privateKeyPem: keyText }, from: "the client Secret's ca.crt" };
  const path = restorablePath(keyText, input.clientChain ?? [], clientBundle.filter(usable), input);
  return path && { keyed: path, from: "the client Secret's tls.crt chain" };
}

/**
 * An upstream intermediate of the key among the intermediates the client Secret serves: it, the
 * intermediates above it, each signed by the next and valid, and the anchor of the client bundle
 * that signs the top. ESO's namespace only, as for a root.
 */
function restorablePath(
  keyText: string,
  chain: readonly CertificateView[],
  anchors: readonly CertificateView[],
  { cache, now }: CaRotationInput,
): KeyedCertificate | undefined {
  const at = chain.findIndex((c) => c.isCa && c.notAfter > now && cache.checkKey(c, keyText) === 'match');
  if (at < 0) return undefined;
  const path = chain.slice(at);
  const linked = path.every((c, i) => i === 0 || (c.isCa && c.notAfter > now && cache.isSignedBy(path[i - 1]!, c)));
  const anchor = anchors.find((a) => cache.isSignedBy(path.at(-1)!, a));
  return linked && anchor ? { certificate: path[0]!, privateKeyPem: keyText, chain: [...path.slice(1), anchor] } : undefined;
}

/** Every certificate in `text` that parses and is a CA; nothing on garbage. */
function readableCas(text: unknown, cache: CertificateCache): CertificateView[] {
  const s = textValue(text);
  if (s.trim() === '') return [];
  try {
    return cache.parseBundle(s).filter((c) => c.isCa);
  } catch {
    return [];
  }
}

function dedupe(certificates: readonly CertificateView[]): CertificateView[] {
  const seen = new Set<string>();
  return certificates.filter((c) => !seen.has(c.pem) && (seen.add(c.pem), true));
}
