import { describe, expect, it } from '@jest/globals';
import { demoPolicy, DEMO_SCHEDULE } from '../src/demo/schedule.js';
import { MAX_PROVIDERS, MIN_PROVIDERS, demoScenario, minDemoDuration } from '../src/demo/scenario.js';

describe('the demo scenario', () => {
  const counts = Array.from({ length: MAX_PROVIDERS - MIN_PROVIDERS + 1 }, (_, i) => MIN_PROVIDERS + i);

  it.each(counts)('with %i providers, at its shortest and at 2 minutes, leaves the CA rotation long enough alone to retire its old CA', (providers) => {
    const policy = demoPolicy();
    for (const duration of [minDemoDuration(providers), 120_000]) {
      const steps = demoScenario(duration, providers);
      const ca = steps.find((s) => s.action.kind === 'rotateCa')!;
      // prepare at ca.at; activate within 1 s (notBefore truncated) + 1 s + propagationDelay; retire
      // 1 s + propagationDelay + maxConnectionAge after the leaves activation issues.
      const retiredBy = ca.at + 2000 + policy.propagationDelay + 1000 + policy.propagationDelay + policy.maxConnectionAge;
      const next = steps.find((s) => s.at > ca.at)!;
      expect(next.at).toBeGreaterThan(retiredBy);
      expect(steps.at(-1)!.at).toBeLessThan(duration);
      // Every step is there, and the damaged folder is repaired before the second Service comes.
      const kinds = steps.map((s) => s.action.kind);
      for (const k of ['rotateCa', 'deleteSecret', 'rotateClient', 'corruptFolder', 'resyncFolder', 'labelSecondService', 'unlabelSecondService']) {
        expect(kinds.filter((x) => x === k)).toHaveLength(1);
      }
      expect(kinds.filter((x) => x === 'rotateService')).toHaveLength(3 * providers);
      const at = (k: string) => steps.find((s) => s.action.kind === k)!.at;
      expect(at('resyncFolder') - at('corruptFolder')).toBe(DEMO_SCHEDULE.kubeletResyncMs);
      expect(at('labelSecondService')).toBeLessThan(at('unlabelSecondService'));
    }
  });

  it("the compressed schedule passes the policy validator as it is: only waits are short, lifetimes are the design's", () => {
    const policy = demoPolicy();
    expect(policy.leafValidity).toBe(90 * 86_400_000);
    expect(policy.caValidity).toBe(365 * 86_400_000);
    expect(policy.maxConnectionAge).toBe(DEMO_SCHEDULE.providerMaxConnectionAgeMs + DEMO_SCHEDULE.providerMaxConnectionAgeGraceMs);
    // The kubelet's slowest delivery reaches the folder within the propagation delay the planner waits for.
    expect(DEMO_SCHEDULE.deliveryDelayMs.max).toBeLessThan(policy.propagationDelay);
    // No call outlives the grace a connection gets after its maximum age.
    expect(DEMO_SCHEDULE.callDeadlineMs).toBeLessThanOrEqual(DEMO_SCHEDULE.providerMaxConnectionAgeGraceMs);
  });
});
