import * as phase from './ca-phases.js';
import type { CertificateCache } from '../crypto/cache.js';
import type { CertificateView } from '../x509/certificate.js';
import type { KeyedCertificate } from '../plan/observe.js';
import type { Policy } from '../policy/policy.js';
import type { RotationReason } from '../policy/rules.js';
import { ACTIVE_SINCE_ANNOTATION, ROTATE_ACKNOWLEDGED_ANNOTATION, type SecretState, secretAcknowledgement } from '../plan/snapshot.js';
import { type Duration, type Instant, truncateToSecond } from '../common/time.js';

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
export type CaMaterial = { readonly kind: 'existing'; readonly keyed: KeyedCertificate } | { readonly kind: 'generate' };

/** The CA Secret's content after a plan: active (signs), next (published), retired (trusted, no key). */
export interface CaLayout {
  /** The CA that signs leaves. */
  readonly active?: CaMaterial;
  /** The CA published in every bundle before it signs. */
  readonly next?: CaMaterial;
  /** Former CAs still trusted until nothing in use depends on them. */
  readonly retired: readonly CertificateView[];
}

/** The one write to the CA Secret a plan may hold. */
export interface CaChange {
  /** What the write does, in order. */
  readonly phases: readonly CaPhase[];
  /** Why a new CA is made (create, prepare, recover, emergency); undefined for activate/retire only. */
  readonly reason?: RotationReason;
  /** Why, in a sentence for logs and Events. */
  readonly message: string;
  /** The CA Secret's content after the write. */
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
  /** notAfter of the active CA. */
  readonly active?: Instant;
  /** notAfter of the next CA, while one is published. */
  readonly next?: Instant;
  /** notAfter of each retired CA. */
  readonly retired: readonly Instant[];
}

/** A managed Secret's ca.crt: its certificates (undefined: unreadable) and when we last wrote it, if known. */
export interface ObservedBundle {
  /** The CA certificates it holds; undefined when unreadable. */
  readonly certificates?: readonly CertificateView[];
  /** When we last wrote it, if known. */
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
  /**
   * Set in pod-certificate mode: the longest pod certificate the signer issues. Pod certificates
   * are not observable, so a retired CA stays until the last one it can have signed has expired.
   */
  readonly podCertificateMaxValidity?: Duration;
}

/** The CA side of a plan. */
export interface CaRotationPlan {
  /** Set when the CA Secret is not ours: nothing can be signed. */
  readonly conflict?: string;
  /** The CA Secret write, if any. */
  readonly change?: CaChange;
  /** The layout after the change (or as it is). */
  readonly layout: CaLayout;
  /** An emergency rotation is under way: every leaf is re-issued as `forced`. */
  readonly emergency: boolean;
  /** notAfter of each CA after the plan. */
  readonly status: CaStatus;
  /** Set while no CA signs after the plan (a recovery waits for its new CA): when one is expected to. */
  readonly signingResumesAt?: Instant;
  /** Future instants at which the CA schedule acts. */
  readonly dueAt: readonly Instant[];
}

/** The CA certificates of a layout, in bundle order: active, next, retired. */
export function layoutCertificates(layout: CaLayout): (CertificateView | 'active' | 'next')[] {
  const slot = (m: CaMaterial | undefined, name: 'active' | 'next'): (CertificateView | 'active' | 'next')[] =>
    m === undefined ? [] : m.kind === 'existing' ? [m.keyed.certificate] : [name];
  return [...slot(layout.active, 'active'), ...slot(layout.next, 'next'), ...layout.retired];
}

/** The phases after emergency, in the order they are decided (see ca-phases.ts and docs/ca-rotation.md). */
const PHASES: readonly phase.CaPhaseRule[] = [
  phase.restorePhase,
  phase.salvagePhase,
  phase.retirePhase,
  phase.recoverOrCreatePhase,
  phase.activatePhase,
  phase.preparePhase,
];

/**
 * The CA schedule, stateless: every time is derived from the certificates themselves.
 * prepare at active.notAfter − caLookahead; activate once next has been published for
 * propagationDelay and every managed bundle holds it; retire once no leaf in use is signed by a
 * retired CA and propagationDelay + maxConnectionAge have passed since the last replacement.
 */
export function planCaRotation(input: CaRotationInput): CaRotationPlan {
  const { now, caSecret } = input;
  if (caSecret?.ownership === 'foreign') {
    return {
      conflict: 'the CA Secret exists but was not written by this installation; it is left alone and nothing can be signed',
      layout: { retired: [] },
      emergency: false,
      status: { retired: [] },
      dueAt: [],
    };
  }
  const reading = phase.readCaSecret(input);
  const status: CaStatus = {
    active: reading.active?.certificate.notAfter,
    next: reading.next?.certificate.notAfter,
    retired: reading.retired.map((c) => c.notAfter),
  };
  const { request } = reading;
  const annotations: Record<string, string> = request === undefined ? {} : { [ROTATE_ACKNOWLEDGED_ANNOTATION]: secretAcknowledgement(request) };
  // How the CA write addresses the Secret: create, or update from the version read; any request is acknowledged.
  const secretWrite = { create: caSecret === undefined, base: caSecret?.version, annotations };

  const activeSince = { [ACTIVE_SINCE_ANNOTATION]: new Date(truncateToSecond(now)).toISOString() };
  const emergency = phase.emergencyPhase(reading);
  if (emergency) {
    return {
      change: {
        ...secretWrite,
        annotations: { ...annotations, ...activeSince },
        phases: ['emergency'],
        reason: emergency.reason,
        message: emergency.message!,
        layout: emergency.slots,
      },
      layout: emergency.slots,
      emergency: true,
      status,
      dueAt: emergency.dueAt,
    };
  }
  const steps: phase.CaStep[] = [];
  let slots = phase.initialSlots(reading);
  for (const decide of PHASES) {
    const step = decide(reading, slots);
    steps.push(step);
    slots = step.slots;
  }
  steps.push(phase.generatedSchedule(reading, slots));

  const acted = steps.filter((s) => s.phase !== undefined);
  const resumesAt = steps.findLast((s) => s.resumesAt !== undefined)?.resumesAt;
  const activates = acted.some((s) => s.phase === 'create' || s.phase === 'activate');
  const change =
    acted.length > 0 || request !== undefined
      ? {
          ...secretWrite,
          annotations: activates ? { ...annotations, ...activeSince } : annotations,
          phases: acted.map((s) => s.phase!),
          reason: acted.find((s) => s.reason !== undefined)?.reason,
          message: acted.map((s) => s.message).join('; ') || `rotation request ${request} acknowledged`,
          layout: slots,
        }
      : undefined;
  return {
    change,
    layout: slots,
    emergency: false,
    status,
    dueAt: steps.flatMap((s) => s.dueAt).filter((t) => t > now),
    ...(slots.active === undefined && resumesAt !== undefined ? { signingResumesAt: resumesAt } : {}),
  };
}
