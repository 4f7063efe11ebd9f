import type { CertificateCache } from './cache.js';
import type { CertificateView } from './certificate.js';
import { type KeyedCertificate, type Observed, type ObservedCaSecret, SecretKeys, observeCaSecret } from './observe.js';
import { textOf } from './pem.js';
import type { Policy } from './policy.js';
import { type RotationReason, issuedNoLaterThan } from './rules.js';
import {
  ROTATE_ACKNOWLEDGED_ANNOTATION, type SecretState, isEmergencyRequest, secretRotationRequest,
} from './snapshot.js';
import { type Instant, truncateToSecond } from './time.js';

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

/** A CA slot after the plan: kept as it is, or generated when the plan is executed. */
export type CaMaterial =
  | { readonly kind: 'existing'; readonly keyed: KeyedCertificate }
  | { readonly kind: 'generate' };

/** The CA Secret's content after a plan: active (signs), next (published), retired (trusted, no key). */
export interface CaLayout {
  readonly active?: CaMaterial;
  readonly next?: CaMaterial;
  readonly retired: readonly CertificateView[];
}

/** The one write to the CA Secret a plan may hold. */
export interface CaChange {
  readonly phases: readonly CaPhase[];
  /** Why a new CA is made (create, prepare, recover, emergency); undefined for activate/retire only. */
  readonly reason?: RotationReason;
  readonly message: string;
  readonly layout: CaLayout;
  /** Create (POST) rather than update the Secret. */
  readonly create: boolean;
  /** resourceVersion planned from, for an update. */
  readonly base?: string;
  /** Annotations to set (merged over the existing ones). */
  readonly annotations: Readonly<Record<string, string>>;
}

/** notAfter of each CA certificate, for the `eso_ca_certificate_expiry_seconds{state}` gauge. */
export interface CaStatus {
  readonly active?: Instant;
  readonly next?: Instant;
  readonly retired: readonly Instant[];
}

/** A managed Secret's ca.crt: its certificates (undefined: unreadable) and when we last wrote it, if known. */
export interface ObservedBundle {
  readonly certificates?: readonly CertificateView[];
  readonly writtenAt?: Instant;
}

/** What {@link planCaRotation} needs besides the CA Secret. */
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
  /** Usable leaves in managed Secrets that count: namespaces with labelled Services, and the client. */
  readonly leavesInUse: readonly CertificateView[];
  /** The bundles of those managed Secrets, which must hold `next` for propagationDelay before it signs. */
  readonly bundles: readonly ObservedBundle[];
}

/** The CA side of a plan. */
export interface CaRotationPlan {
  /** Set when the CA Secret is not ours: nothing can be signed. */
  readonly conflict?: string;
  readonly change?: CaChange;
  /** The layout after the change (or as it is). */
  readonly layout: CaLayout;
  /** An emergency rotation is under way: every leaf is re-issued as `forced`. */
  readonly emergency: boolean;
  readonly status: CaStatus;
  /** Set while no CA signs after the plan (a recovery waits for its new CA): when one is expected to. */
  readonly signingResumesAt?: Instant;
  /** Future instants at which the CA schedule acts. */
  readonly dueAt: readonly Instant[];
}

const existing = (keyed: KeyedCertificate): CaMaterial => ({ kind: 'existing', keyed });
const GENERATE: CaMaterial = { kind: 'generate' };
const certOf = (m: CaMaterial | undefined): CertificateView | undefined => (m?.kind === 'existing' ? m.keyed.certificate : undefined);

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
 * namespace, which tenants can write) whose public key matches and whose signature verifies.
 */
function restorableCertificate(
  keyText: string, clientBundle: readonly CertificateView[], cache: CertificateCache, now: Instant,
): KeyedCertificate | undefined {
  if (keyText.trim() === '') return undefined;
  const certificate = clientBundle.find((c) => c.isCa && c.notAfter > now && c.subject === c.issuer
    && cache.isSignedBy(c, c) && cache.checkKey(c, keyText) === 'match');
  return certificate && { certificate, privateKeyPem: keyText };
}

/** Every certificate in `text` that parses and is a CA; nothing on garbage. */
function readableCas(text: unknown, cache: CertificateCache): CertificateView[] {
  if (typeof text !== 'string' && !(text instanceof Uint8Array)) return [];
  try {
    const s = textOf(text);
    return s.trim() === '' ? [] : cache.parseBundle(s).filter((c) => c.isCa);
  } catch {
    return [];
  }
}

function dedupe(certificates: readonly CertificateView[]): CertificateView[] {
  const seen = new Set<string>();
  return certificates.filter((c) => !seen.has(c.pem) && (seen.add(c.pem), true));
}

/** The CA certificates of a layout, in bundle order: active, next, retired. */
export function layoutCertificates(layout: CaLayout): (CertificateView | 'active' | 'next')[] {
  const slot = (m: CaMaterial | undefined, name: 'active' | 'next'): (CertificateView | 'active' | 'next')[] =>
    m === undefined ? [] : m.kind === 'existing' ? [m.keyed.certificate] : [name];
  return [...slot(layout.active, 'active'), ...slot(layout.next, 'next'), ...layout.retired];
}

/**
 * The CA schedule, stateless: every time is derived from the certificates themselves.
 * prepare at active.notAfter − caLookahead; activate once next has been published for
 * propagationDelay and every managed bundle holds it; retire once no leaf in use is signed by a
 * retired CA and propagationDelay + maxConnectionAge have passed since the last replacement.
 */
export function planCaRotation(input: CaRotationInput): CaRotationPlan {
  const { now, policy, cache, caSecret } = input;
  if (caSecret?.ownership === 'foreign') {
    return {
      conflict: 'the CA Secret exists but was not written by this installation; it is left alone and nothing can be signed',
      layout: { retired: [] }, emergency: false, status: { retired: [] }, dueAt: [],
    };
  }
  const observed: ObservedCaSecret = caSecret?.ownership === 'managed'
    ? observeCaSecret(caSecret.data, cache) : { active: undefined, next: undefined, retired: undefined };
  const usable = (o: ObservedCaSecret['active']): KeyedCertificate | undefined =>
    o?.ok && o.value.certificate.isCa && o.value.certificate.notAfter > now ? o.value : undefined;
  const restoreFrom = (o: ObservedCaSecret['active'], keyKey: string): KeyedCertificate | undefined =>
    (o === undefined || o.ok || caSecret?.ownership !== 'managed' ? undefined
      : restorableCertificate(textValue(caSecret.data[keyKey]), input.clientBundle, cache, now));
  const restoredActive = usable(observed.active) ? undefined : restoreFrom(observed.active, SecretKeys.caPrivateKey);
  const restoredNext = usable(observed.next) ? undefined : restoreFrom(observed.next, SecretKeys.nextPrivateKey);
  const activeKeyed = usable(observed.active) ?? restoredActive;
  const nextKeyed = usable(observed.next) ?? restoredNext;
  const retiredNow = observed.retired?.ok ? observed.retired.value : [];
  const status: CaStatus = {
    active: activeKeyed?.certificate.notAfter,
    next: nextKeyed?.certificate.notAfter,
    retired: retiredNow.map((c) => c.notAfter),
  };
  const request = secretRotationRequest(caSecret);
  const annotations: Record<string, string> = request === undefined ? {} : { [ROTATE_ACKNOWLEDGED_ANNOTATION]: request };
  const base = { create: caSecret === undefined, base: caSecret?.version, annotations };
  const dueAt: Instant[] = [];

  if (isEmergencyRequest(request)) {
    const layout: CaLayout = { active: GENERATE, retired: [] };
    return {
      change: { ...base, phases: ['emergency'], reason: 'forced', message: `emergency CA rotation requested (${request}): new CA, every older one leaves every bundle`, layout },
      layout, emergency: true, status, dueAt: [truncateToSecond(now + policy.caValidity) - policy.caLookahead],
    };
  }

  const phases: CaPhase[] = [];
  const messages: string[] = [];
  for (const [restored, pair, keys] of [[restoredActive, observed.active, 'ca.crt/ca.key'], [restoredNext, observed.next, 'next.crt/next.key']] as const) {
    if (!restored || pair === undefined || pair.ok) continue;
    phases.push('restore');
    messages.push(`${keys}: ${pair.detail}; the key is good, so its certificate ${restored.certificate.subject} (serial ${restored.certificate.serialNumber}) is restored from the client Secret's ca.crt and nothing is re-issued`);
  }
  let reason: RotationReason | undefined;
  let active = activeKeyed && existing(activeKeyed);
  let next = nextKeyed && existing(nextKeyed);
  let retired = retiredNow.filter((c) => c.isCa);
  const nextBroken = observed.next !== undefined && !nextKeyed;
  const broken = (observed.active !== undefined && !activeKeyed) || (observed.retired !== undefined && !observed.retired.ok);

  // Lost or unreadable key material: keep every CA certificate we can still read (CA Secret, then
  // the client bundle in the ESO namespace) trusted as retired, so no leaf loses its chain.
  let salvagedAny = false;
  if (caSecret?.ownership !== 'managed' || broken || (!active && !next)) {
    const salvaged = [
      ...(caSecret?.ownership === 'managed' ? [SecretKeys.caCertificate, SecretKeys.nextCertificate, SecretKeys.retiredCertificates]
        .flatMap((k) => readableCas(caSecret.data[k], cache)) : []),
      ...input.clientBundle.filter((c) => c.isCa),
    ];
    const keep = new Set([certOf(active)?.pem, certOf(next)?.pem]);
    retired = dedupe([...retired, ...salvaged.filter((c) => !keep.has(c.pem))]);
    salvagedAny = salvaged.length > 0;
  }
  // Retire: nothing in use is signed by it, and every replacement has had time to reach its peers.
  const activeCert = certOf(active);
  // The last replacement is bounded by the newest leaf in use (whatever signed it: during a
  // recovery no CA is active, yet replaced leaves may still be served).
  let lastReplacement = -Infinity;
  if (retired.length > 0) for (const l of input.leavesInUse) lastReplacement = Math.max(lastReplacement, issuedNoLaterThan(l, policy));
  const retireAfter = lastReplacement + policy.propagationDelay + policy.maxConnectionAge;
  const kept = retired.filter((ca) => {
    if (ca.notAfter <= now) return false;
    const inUse = input.leavesInUse.some((l) => cache.isSignedBy(l, ca));
    if (inUse) dueAt.push(now + 1000 + policy.propagationDelay + policy.maxConnectionAge);
    else if (now < retireAfter) dueAt.push(retireAfter);
    dueAt.push(ca.notAfter);
    return inUse || now < retireAfter;
  });
  const dropped = retiredNow.filter((c) => !kept.includes(c)).length;
  if (dropped > 0) {
    phases.push('retire');
    messages.push(`retiring ${dropped} CA certificate(s) nothing in use depends on`);
  }
  retired = kept;

  const lostWhy: RotationReason = caSecret?.ownership === 'managed' ? 'invalid' : 'secret_missing';
  if (!active && !next) {
    if (retired.some((c) => c.notAfter > now)) {
      next = GENERATE;
      phases.push('recover');
      reason = lostWhy;
      const why = lostWhy === 'invalid' ? `unusable (${problemOf(observed.active) ?? 'no ca.crt/ca.key'}) and no certificate in the client Secret's ca.crt matches it` : 'gone';
      messages.push(`the CA key is ${why}: ${retired.length} CA certificate(s) stay trusted as retired while a new CA is published`);
    } else {
      active = GENERATE;
      phases.push('create');
      reason = caSecret?.ownership === 'managed' ? 'invalid' : salvagedAny ? 'secret_missing' : 'initial';
      messages.push('no CA anywhere: creating one');
    }
  } else if (broken) {
    phases.push('recover');
    reason = lostWhy;
    messages.push(`part of the CA Secret is unreadable (${problemOf(observed.active) ?? problemOf(observed.retired) ?? 'ca.crt/ca.key'}): readable CA certificates stay trusted as retired`);
  }

  // Activate: next has been published for propagationDelay and every managed bundle holds it.
  const nextCert = certOf(next);
  // When the next CA is expected to sign; reported while no CA signs (a recovery's wait).
  let resumesAt: Instant | undefined;
  if (nextCert) {
    // A bundle counts once it has held next for propagationDelay: since next was generated, and
    // since the bundle was last written (a write that failed and was retried reached peers later).
    let lastWrite = issuedNoLaterThan(nextCert, policy);
    let ready = true;
    for (const b of input.bundles) {
      if (!b.certificates?.some((c) => c.pem === nextCert.pem)) ready = false;
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
      retired = dedupe([...(activeCert ? [activeCert] : []), ...retired]);
      active = next;
      next = undefined;
      phases.push('activate');
      messages.push(`activating the next CA ${nextCert.subject}${ready ? '' : ' (deadline reached before every bundle held it)'}`);
    } else {
      dueAt.push(activationAt, deadline);
      // Bundles short of next are written this round: they count from a second after now.
      resumesAt = ready ? activationAt : Math.min(deadline, Math.max(activationAt, truncateToSecond(now) + 1000 + policy.propagationDelay));
    }
  }

  // Prepare: the active CA enters its lookahead, a rotation is asked for, or next is unreadable.
  // A request while a CA is being created or recovered is met by that new CA.
  const signing = certOf(active);
  const freshCa = active?.kind === 'generate' || next?.kind === 'generate';
  const prepareAt = signing ? signing.notAfter - policy.caLookahead : Infinity;
  const why: RotationReason | undefined = request !== undefined && !freshCa ? 'forced'
    : !signing || next ? undefined : nextBroken ? 'invalid' : now >= prepareAt ? 'expiring' : undefined;
  if (why) {
    next = GENERATE;
    phases.push('prepare');
    reason ??= why;
    messages.push(`preparing the next CA (${why === 'forced' ? `rotation requested: ${request}` : why === 'invalid' ? 'next.crt/next.key unreadable' : `active CA notAfter ${new Date(prepareAt + policy.caLookahead).toISOString()}`})`);
  } else if (signing && !next) {
    dueAt.push(prepareAt);
  }
  if (next?.kind === 'generate') {
    resumesAt = truncateToSecond(now - policy.notBeforeBackdate) + policy.notBeforeBackdate + 1000 + policy.propagationDelay;
    dueAt.push(resumesAt);
  }
  if (active?.kind === 'generate') dueAt.push(truncateToSecond(now + policy.caValidity) - policy.caLookahead);

  const layout: CaLayout = { active, next, retired };
  const change = phases.length > 0 || request !== undefined
    ? { ...base, phases, reason, message: messages.join('; ') || `rotation request ${request} acknowledged`, layout }
    : undefined;
  return {
    change, layout, emergency: false, status, dueAt: dueAt.filter((t) => t > now),
    ...(active === undefined && resumesAt !== undefined ? { signingResumesAt: resumesAt } : {}),
  };
}
