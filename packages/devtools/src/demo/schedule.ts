import { type Duration, type Policy, resolvePolicy, seconds } from '@eso-mtls/core';

/**
 * The demo's compressed schedule: only the waits a rotation makes for propagation and for old
 * connections to end are short, so a full overlap CA rotation fits in seconds. Certificate
 * lifetimes stay the design's (TLS checks them against the real clock), and the policy still goes
 * through the controller's validator unchanged. `eso-mtls controller` has no way to ask for this:
 * its --propagation-delay refuses anything under 10 s, it has no connection-age flag, and it refuses
 * `--demo-schedule`.
 */
export const DEMO_SCHEDULE = Object.freeze({
  /** The longest the demo's kubelet takes to deliver a Secret change to a folder, with margin. */
  propagationDelay: seconds(3),
  /** The provider servers' max connection age, and the grace calls get after it. */
  providerMaxConnectionAgeMs: seconds(4),
  providerMaxConnectionAgeGraceMs: seconds(4),
  /** Deadline of each GetSecret call; within the grace, so a connection ageing out never cuts one. */
  callDeadlineMs: seconds(4),
  /** The kubelet's delivery delay is drawn from this range for every change, well below propagationDelay. */
  deliveryDelayMs: Object.freeze({ min: 200, max: 1500 }),
  /** How long after a folder is damaged the kubelet's periodic sync writes the Secret back. */
  kubeletResyncMs: seconds(3),
  /** Pause between two calls to the same provider address. */
  callIntervalMs: 50,
});

/**
 * The policy the demo plans with: the design's defaults, with {@link DEMO_SCHEDULE}'s propagation
 * delay and connection age (the provider servers' age plus grace), validated like any policy.
 */
export function demoPolicy(): Policy {
  const maxConnectionAge: Duration = DEMO_SCHEDULE.providerMaxConnectionAgeMs + DEMO_SCHEDULE.providerMaxConnectionAgeGraceMs;
  return resolvePolicy({ propagationDelay: DEMO_SCHEDULE.propagationDelay, maxConnectionAge });
}
