import { type Instant, truncateToSecond } from '../common/time.js';
import { ROTATE_ACKNOWLEDGED_ANNOTATION, secretAcknowledgement } from '../secret/rotate-request.js';
import type { RotationReason } from '../policy/rules.js';
import { ACTIVE_SINCE_ANNOTATION, type CaLayout, NEXT_SINCE_ANNOTATION } from './ca-layout.js';
import * as phase from './ca-phases.js';
import { CA_REQUEST_ANNOTATION, CA_SOURCE_ANNOTATION, SELF_SIGNED_SOURCE } from './upstream.js';
import { type UpstreamPlan, upstreamPlan } from './upstream-plan.js';
import type { CaPhase, CaRotationInput } from './ca-phases.js';

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
  /** With an upstream CA: what it gives, what it is asked for, and what stands in the way. */
  readonly upstream?: UpstreamPlan;
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
  const { upstream } = input;
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
      upstream: upstream && upstreamPlan(reading, [emergency], emergency.slots),
      change: {
        ...secretWrite,
        annotations: { ...annotations, ...activeSince, ...sourceAnnotations(reading, ['emergency']) },
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
  const activates = acted.some((s) => s.phase === 'create' || s.phase === 'activate' || s.phase === 'renew');
  // An upstream CA meets a request only once its source gives a new intermediate: until then it stands.
  const requestMet = request !== undefined && (!upstream || acted.some((s) => NEW_CA_PHASES.has(s.phase!)));
  const acknowledged: Record<string, string> = requestMet ? annotations : {};
  const kept = pendingKept(reading, slots);
  slots = { ...slots, ...kept };
  // The answer to the pending request is placed: the CA Secret no longer names it.
  const answered: Record<string, string> = upstream?.pending && kept.pending === undefined ? { [CA_REQUEST_ANNOTATION]: '' } : {};
  const change =
    acted.length > 0 || requestMet
      ? {
          ...secretWrite,
          annotations: {
            ...acknowledged,
            ...(activates ? activeSince : {}),
            ...sourceAnnotations(
              reading,
              acted.map((s) => s.phase!),
            ),
            ...answered,
          },
          phases: acted.map((s) => s.phase!),
          reason: acted.find((s) => s.reason !== undefined)?.reason,
          message: acted.map((s) => s.message).join('; ') || `rotation request ${request} acknowledged`,
          layout: slots,
        }
      : undefined;
  const upstreamPart = upstream && upstreamPlan(reading, steps, slots);
  return {
    upstream: upstreamPart,
    change,
    layout: slots,
    emergency: false,
    status,
    dueAt: [...steps.flatMap((s) => s.dueAt), ...(upstreamPart?.dueAt ?? [])].filter((t) => t > now),
    ...(slots.active === undefined && resumesAt !== undefined ? { signingResumesAt: resumesAt } : {}),
  };
}

/** Phases that place a new CA: with an upstream CA, these meet a rotation request. */
const NEW_CA_PHASES: ReadonlySet<CaPhase> = new Set(['create', 'recover', 'prepare', 'renew', 'emergency']);

/**
 * The CA Secret's source annotations of a write doing `phases`: the active CA's source once a CA
 * from the configured source signs, and since when next is published once one is placed. Written
 * only with an upstream CA, or when moving back from one, so the self-signed CA's writes are as always.
 */
function sourceAnnotations(reading: phase.CaReading, phases: readonly CaPhase[]): Record<string, string> {
  const { upstream, now } = reading.input;
  const source = upstream?.source ?? SELF_SIGNED_SOURCE;
  if (!upstream && reading.recordedSource === SELF_SIGNED_SOURCE) return {};
  const out: Record<string, string> = {};
  if (phases.some((p) => p === 'create' || p === 'activate' || p === 'renew' || p === 'emergency')) out[CA_SOURCE_ANNOTATION] = source;
  if (upstream && phases.some((p) => p === 'prepare' || p === 'recover')) out[NEXT_SINCE_ANNOTATION] = new Date(truncateToSecond(now)).toISOString();
  return out;
}

/** The pending key the CA write keeps: the one asked for, unless this write places its intermediate. */
function pendingKept(reading: phase.CaReading, slots: CaLayout): Pick<CaLayout, 'pending'> {
  const pending = reading.input.upstream?.pending;
  if (!pending) return {};
  const offer = reading.input.upstream!.offer?.certificate.pem;
  const placed = offer !== undefined && [slots.active, slots.next].some((m) => m?.kind === 'existing' && m.keyed.certificate.pem === offer);
  return placed ? {} : { pending: pending.key };
}
