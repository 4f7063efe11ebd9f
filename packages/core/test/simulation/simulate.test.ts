import { describe, expect, it } from '@jest/globals';
import { type SimulationEvent, days, hours, minutes, resolvePolicy, simulate } from '@eso-mtls/core';
import { T0, testCrypto } from '../support/planner.js';

const services = Array.from({ length: 40 }, (_, i) => ({ namespace: `team-${i % 10}`, name: `provider-${i}` }));

describe('simulate', () => {
  it('three years with the default policy: renewals, three overlap CA rotations, no violation, few reconciles', async () => {
    const policy = resolvePolicy();
    const { summary, timeline } = await simulate({ policy, crypto: testCrypto(1), services, start: T0, duration: days(3 * 365) });
    expect(summary.violations).toEqual([]);
    expect(summary.caPhases).toEqual({ create: 1, prepare: 3, activate: 3, retire: 3 });
    expect(summary.byReason.initial).toBe(11);
    expect(summary.byReason.ca_rotated).toBe(3 * 11);
    // Every leaf lives 90 days and is renewed 35 to 38 days before its end: 52 to 55 days apart.
    const perLeaf = (3 * 365) / 55;
    expect(summary.byReason.expiring).toBeGreaterThan(11 * (perLeaf - 5));
    expect(summary.byReason.expiring).toBeLessThan((11 * (3 * 365)) / 52);
    expect(summary.minRemainingValidity).toBeGreaterThanOrEqual(days(35) - minutes(10));
    // Jumping to each plan's nextDueAt: one reconcile per due instant, not one per 10 minutes.
    expect(summary.reconciles).toBeLessThan(summary.serverIssuances + summary.clientIssuances + 20);
    // The first CA rotation starts exactly caLookahead before the first CA's notAfter.
    const prepare = timeline.find((e) => e.phases?.includes('prepare'))!;
    expect(prepare.at).toBe(T0 + policy.caValidity - policy.caLookahead);
    const activate = timeline.find((e) => e.phases?.includes('activate'))!;
    expect(activate.at - prepare.at).toBe(policy.propagationDelay + 1000);
  });

  it('is reproducible: the same seed gives the same timeline', async () => {
    const run = async (): Promise<string[]> =>
      (
        await simulate({
          policy: resolvePolicy(),
          crypto: testCrypto(42),
          services: services.slice(0, 8),
          start: T0,
          duration: days(200),
        })
      ).timeline.map((e) => `${e.at} ${e.kind} ${e.target} ${e.reason ?? ''}`);
    expect(await run()).toEqual(await run());
  });

  it('events: Service churn, forced rotations, deleted and corrupted Secrets, CA loss and an emergency, each with its reason', async () => {
    const at = (d: number): number => T0 + days(d);
    const events: SimulationEvent[] = [
      { at: at(10), kind: 'addService', namespace: 'team-0', service: 'extra' },
      { at: at(11), kind: 'removeService', namespace: 'team-0', service: 'extra' },
      { at: at(12), kind: 'requestRotation', namespace: 'team-1', service: 'provider-1', token: 'please' },
      { at: at(13), kind: 'deleteSecret', target: { namespace: 'team-2' } },
      { at: at(14), kind: 'corruptSecret', target: { namespace: 'team-3' }, corruption: 'garbage' },
      { at: at(15), kind: 'corruptSecret', target: { namespace: 'team-4' }, corruption: 'foreignLeaf' },
      { at: at(16), kind: 'corruptSecret', target: { namespace: 'team-5' }, corruption: 'foreignBundle' },
      { at: at(17), kind: 'addService', namespace: 'brand-new', service: 'p' },
      { at: at(20), kind: 'deleteSecret', target: 'ca' },
      { at: at(40), kind: 'requestCaRotation', token: 'rotate-now' },
      { at: at(60), kind: 'requestCaRotation', token: 'emergency' },
    ];
    const { summary, timeline } = await simulate({ policy: resolvePolicy(), crypto: testCrypto(7), services, start: T0, duration: days(70), events });
    expect(summary.violations).toEqual([]);
    const reasonAt = (d: number, target: string): string | undefined =>
      timeline.find((e) => e.at >= at(d) && e.at < at(d) + hours(1) && e.target === target && e.kind !== 'event')?.reason;
    expect(reasonAt(10, 'namespace/team-0')).toBe('dns_changed');
    expect(reasonAt(11, 'namespace/team-0')).toBe('dns_changed');
    expect(reasonAt(12, 'namespace/team-1')).toBe('forced');
    expect(reasonAt(13, 'namespace/team-2')).toBe('secret_missing');
    expect(reasonAt(14, 'namespace/team-3')).toBe('invalid');
    expect(reasonAt(15, 'namespace/team-4')).toBe('ca_mismatch');
    expect(timeline.find((e) => e.at === at(16) && e.target === 'namespace/team-5' && e.kind !== 'event')?.kind).toBe('bundle');
    expect(reasonAt(17, 'namespace/brand-new')).toBe('initial');
    expect(summary.caPhases).toMatchObject({ create: 1, recover: 1, prepare: 1, emergency: 1 });
    expect(reasonAt(60, 'client')).toBe('forced');
  });

  it('any valid policy: a short-lived one rotates often and still never breaks', async () => {
    const policy = resolvePolicy({
      caValidity: days(10),
      caLookahead: days(4),
      leafValidity: days(4),
      leafLookahead: days(2) + hours(1),
      leafJitter: hours(12),
      reconcileInterval: minutes(10),
      propagationDelay: minutes(20),
      maxConnectionAge: minutes(20),
    });
    const { summary } = await simulate({ policy, crypto: testCrypto(5), services: services.slice(0, 12), start: T0, duration: days(60) });
    expect(summary.violations).toEqual([]);
    expect(summary.caPhases.activate).toBeGreaterThanOrEqual(9);
    expect(summary.minRemainingValidity).toBeGreaterThanOrEqual(days(1));
  });
});
