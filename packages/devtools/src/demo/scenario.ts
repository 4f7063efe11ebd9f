import { type Duration, seconds } from '@eso-mtls/core';
import { DEMO_SCHEDULE } from './schedule.js';

/** One thing the scenario does to the cluster or to a mounted folder. `provider` indexes the providers. */
export type ScenarioAction =
  | { readonly kind: 'rotateService'; readonly provider: number }
  | { readonly kind: 'rotateClient' }
  | { readonly kind: 'rotateCa' }
  | { readonly kind: 'deleteSecret'; readonly provider: number }
  | { readonly kind: 'corruptFolder'; readonly provider: number }
  | { readonly kind: 'resyncFolder'; readonly provider: number }
  | { readonly kind: 'labelSecondService'; readonly provider: number }
  | { readonly kind: 'unlabelSecondService'; readonly provider: number };

/** An action and when it happens, in milliseconds from the start of the run. */
export interface ScenarioStep {
  readonly at: Duration;
  readonly action: ScenarioAction;
}

/** Providers the demo can run: two at least (one is called while another rotates), names for five. */
export const MIN_PROVIDERS = 2;
export const MAX_PROVIDERS = 5;

/**
 * Quiet time the CA rotation gets to itself: activation comes propagationDelay after prepare (the
 * new CA's notBefore is truncated to the second), and the old CA retires only once propagationDelay
 * + maxConnectionAge have passed since the newest leaf in use was issued, so any issuance in
 * between would postpone it.
 */
const CA_WINDOW: Duration = seconds(22);
/** Spacing of the first round of forced leaf rotations, before the CA rotation. */
const FIRST_ROUND_SPACING: Duration = 800;
/** Time left at the end for the last deliveries and reloads to show. */
const TAIL: Duration = seconds(4);
/** The shortest stretch after the CA rotation that fits the other steps, the resync wait included. */
const MIN_REST: Duration = seconds(14);

/** When the CA rotation is asked for: after the first forced rotation of every provider. */
function caRotationAt(providers: number): Duration {
  return seconds(1) + providers * FIRST_ROUND_SPACING;
}

/** The shortest run that plays every step of {@link demoScenario} with `providers` providers. */
export function minDemoDuration(providers: number): Duration {
  return Math.ceil((caRotationAt(providers) + CA_WINDOW + MIN_REST + TAIL) / 1000) * 1000;
}

/**
 * The steps of a run of `duration` with `providers` providers, in time order: a forced rotation
 * of every provider; the CA rotation alone, until its old CA has retired; then, spread over the
 * rest of the run, a deleted Secret, a second and third forced rotation of every provider, the
 * client's forced rotation, a damaged folder and its repair, a second Service labelled into a
 * namespace and later unlabelled.
 */
export function demoScenario(duration: Duration, providers: number): ScenarioStep[] {
  const steps: ScenarioStep[] = [];
  for (let p = 0; p < providers; p++) steps.push({ at: seconds(1) + p * FIRST_ROUND_SPACING, action: { kind: 'rotateService', provider: p } });
  const caAt = caRotationAt(providers);
  steps.push({ at: caAt, action: { kind: 'rotateCa' } });
  const restStart = caAt + CA_WINDOW;
  const rest = Math.max(0, duration - TAIL - restStart);
  const at = (fraction: number): Duration => Math.round(restStart + rest * fraction);
  for (let p = 0; p < providers; p++) {
    for (const start of [0.12, 0.7]) steps.push({ at: at(start + 0.04 * p), action: { kind: 'rotateService', provider: p } });
  }
  const damaged = 2 % providers;
  steps.push(
    { at: at(0), action: { kind: 'deleteSecret', provider: 1 % providers } },
    { at: at(0.32), action: { kind: 'rotateClient' } },
    { at: at(0.36), action: { kind: 'corruptFolder', provider: damaged } },
    { at: at(0.36) + DEMO_SCHEDULE.kubeletResyncMs, action: { kind: 'resyncFolder', provider: damaged } },
    { at: at(0.55), action: { kind: 'labelSecondService', provider: 0 } },
    { at: at(0.97), action: { kind: 'unlabelSecondService', provider: 0 } },
  );
  return steps.sort((a, b) => a.at - b.at);
}
