import { type Instant, truncateToSecond } from '../common/time.js';
import { ROTATE_ACKNOWLEDGED_ANNOTATION, secretAcknowledgement } from '../secret/rotate-request.js';
import type { RotationReason } from '../policy/rules.js';
import { ACTIVE_SINCE_ANNOTATION, type CaLayout } from './ca-layout.js';
import * as phase from './ca-phases.js';
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
