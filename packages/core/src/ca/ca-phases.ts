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
import { topOf } from '../x509/ca-path.js';
import { rsaExponentRefusal } from '../x509/rsa-public-key.js';
import { ACTIVE_SINCE_ANNOTATION, type CaLayout, type CaMaterial } from './ca-layout.js';
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
 */
export type CaPhase = 'create' | 'prepare' | 'activate' | 'retire' | 'recover' | 'emergency' | 'restore';

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
  /** Usable leaves in managed Secrets that count (namespaces with labelled Services, and the client), each with the intermediates served after it. */
  readonly leavesInUse: readonly Pick<KeyedCertificate, 'certificate' | 'chain'>[];
  /** The bundles of those managed Secrets, which must hold `next` for propagationDelay before it signs. */
  readonly bundles: readonly ObservedBundle[];
  /**
   * Set in pod-certificate mode: the longest pod certificate the signer issues. Pod certificates
   * are not observable, so a retired CA stays until the last one it can have signed has expired.
   */
  readonly podCertificateMaxValidity?: Duration;
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
  /** Certificates of good keys put back from the client bundle, for the restore phase to report. */
  readonly restored: readonly { readonly keys: string; readonly keyed: KeyedCertificate; readonly detail: string }[];
  /** retired.crt as read (empty when unreadable). */
  readonly retired: readonly CertificateView[];
  /** Since when the active CA as read has signed, from the CA Secret's annotation; undefined when unknown or none is active. */
  readonly activeSince?: Instant;
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
}

/** One phase: pure, like the leaf rules. */
export type CaPhaseRule = (reading: CaReading, slots: CaLayout) => CaStep;

const GENERATE: CaMaterial = { kind: 'generate' };
const existing = (keyed: KeyedCertificate): CaMaterial => ({ kind: 'existing', keyed });
const certOf = (m: CaMaterial | undefined): CertificateView | undefined => (m?.kind === 'existing' ? m.keyed.certificate : undefined);
const idle = (slots: CaLayout): CaStep => ({ slots, dueAt: [] });

/** Reads the CA Secret: what is usable, what can be restored, and the pending request. */
export function readCaSecret(input: CaRotationInput): CaReading {
  const { now, cache, caSecret } = input;
  const managed = caSecret?.ownership === 'managed';
  const observed: ObservedCaSecret = managed ? observeCaSecret(caSecret.data, cache) : { active: undefined, next: undefined, retired: undefined };
  const read = (pair: ObservedCaSecret['active'], keyKey: string, keys: string) => {
    if (pair?.ok) return { keyed: pair.value.certificate.isCa && pair.value.certificate.notAfter > now ? pair.value : undefined };
    const keyed = pair === undefined || !managed ? undefined : restorableCertificate(textValue(caSecret.data[keyKey]), input.clientBundle, cache, now);
    return { keyed, restored: keyed && pair && { keys, keyed, detail: pair.detail } };
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

/** Emergency: `eso-mtls.io/rotate: emergency` on the CA Secret: a new active CA at once, every older one out. */
export function emergencyPhase({ input, request }: CaReading): CaStep | undefined {
  if (!isEmergencyRequest(request)) return undefined;
  return {
    slots: { active: GENERATE, retired: [] },
    phase: 'emergency',
    reason: 'forced',
    message: `emergency CA rotation requested (${truncate(request!, 64)}): new CA, every older one leaves every bundle`,
    dueAt: [truncateToSecond(input.now + input.policy.caValidity) - input.policy.caLookahead],
  };
}

/** Restore: a good key whose certificate is missing or unreadable got it back from the client bundle (see readCaSecret). */
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
              `${r.keys}: ${r.detail}; the key is good, so its certificate ${truncate(r.keyed.certificate.subject)} (serial ${truncate(r.keyed.certificate.serialNumber, 64)}) is restored from the client Secret's ca.crt and nothing is re-issued`,
          )
          .join('; '),
      };

/**
 * Salvage: with key material lost or unreadable, every CA certificate still readable (CA Secret,
 * then the client bundle in the ESO namespace) stays trusted as retired, so no leaf loses its chain.
 */
export const salvagePhase: CaPhaseRule = (reading, slots) => {
  const { caSecret, clientBundle, cache } = reading.input;
  if (reading.managed && !isBroken(reading) && (slots.active || slots.next)) return idle(slots);
  const salvaged = [
    ...(reading.managed
      ? [SecretKeys.caCertificate, SecretKeys.nextCertificate, SecretKeys.retiredCertificates].flatMap((k) => readableCas(caSecret!.data[k], cache))
      : []),
    ...clientBundle.filter((c) => c.isCa),
  ];
  const keep = new Set([certOf(slots.active)?.pem, certOf(slots.next)?.pem]);
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
  const { now, clientBundle } = reading.input;
  const lostWhy: RotationReason = reading.managed ? 'invalid' : 'secret_missing';
  const { observed } = reading;
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
 * Activate: next signs once it has been published for propagationDelay and every managed bundle
 * holds it, or at a deadline past which waiting would do more harm; the old active CA is retired.
 * A bundle whose writes have been refused for refusalGrace (left-behind.ts) is not waited for.
 */
export const activatePhase: CaPhaseRule = ({ input }, slots) => {
  const { now, policy } = input;
  const nextCert = certOf(slots.next);
  if (!nextCert) return idle(slots);
  const activeCert = certOf(slots.active);
  // A bundle counts once it has held next for propagationDelay: since next was generated, and
  // since the bundle was last written (a write that failed and was retried reached peers later).
  let lastWrite = issuedNoLaterThan(nextCert, policy);
  let ready = true;
  const holdsNext = (b: ObservedBundle): boolean => b.certificates?.some((c) => c.pem === nextCert.pem) ?? false;
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
  const deadline = activeCert
    ? activeCert.notAfter - policy.leafLookahead - policy.leafJitter
    : activationAt + policy.propagationDelay + policy.reconcileInterval;
  if (now >= activationAt && (ready || now >= deadline)) {
    return {
      slots: { active: slots.next, next: undefined, retired: dedupe([...(activeCert ? [activeCert] : []), ...slots.retired]) },
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
 * is met by that new CA.
 */
export const preparePhase: CaPhaseRule = (reading, slots) => {
  const { now, policy } = reading.input;
  const { request } = reading;
  const signing = certOf(slots.active);
  const freshCa = slots.active?.kind === 'generate' || slots.next?.kind === 'generate';
  const prepareAt = signing ? signing.notAfter - policy.caLookahead : Infinity;
  const nextBroken = reading.observed.next !== undefined && !reading.next;
  const reason = prepareReason({
    requested: request !== undefined && !freshCa,
    signing: signing !== undefined,
    hasNext: slots.next !== undefined,
    nextBroken,
    due: now >= prepareAt,
  });
  if (reason === undefined) return { slots, dueAt: signing && !slots.next ? [prepareAt] : [] };
  const why =
    reason === 'forced'
      ? `rotation requested: ${truncate(request!, 64)}`
      : reason === 'invalid'
        ? 'next.crt/next.key unreadable'
        : `active CA notAfter ${new Date(signing!.notAfter).toISOString()}`;
  return { slots: { ...slots, next: GENERATE }, phase: 'prepare', reason, message: `preparing the next CA (${why})`, dueAt: [] };
};

/** Why the next CA is prepared now, if it is: asked for, unreadable, or the active CA's lookahead. */
function prepareReason(s: { requested: boolean; signing: boolean; hasNext: boolean; nextBroken: boolean; due: boolean }): RotationReason | undefined {
  if (s.requested) return 'forced';
  if (!s.signing || s.hasNext) return undefined;
  if (s.nextBroken) return 'invalid';
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
 * The certificate of a good CA key whose own certificate is missing or unreadable: a self-signed,
 * unexpired CA certificate in the client Secret's bundle (ESO namespace, never a provider
 * namespace, which tenants can write) whose public key matches and whose signature verifies, and
 * never one whose RSA exponent the CA Secret's check refuses (it would be restored each round).
 */
function restorableCertificate(keyText: string, clientBundle: readonly CertificateView[], cache: CertificateCache, now: Instant): KeyedCertificate | undefined {
  if (keyText.trim() === '') return undefined;
  const certificate = clientBundle.find(
    (c) =>
      c.isCa &&
      c.notAfter > now &&
      c.subject === c.issuer &&
      rsaExponentRefusal(c.subjectPublicKeyInfo) === undefined &&
      cache.isSignedBy(c, c) &&
      cache.checkKey(c, keyText) === 'match',
  );
  return certificate && { certificate, privateKeyPem: keyText };
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
