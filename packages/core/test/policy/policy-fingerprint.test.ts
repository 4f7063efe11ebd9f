import { describe, expect, it } from '@jest/globals';
import { days, minutes, policyFingerprint, resolvePolicy } from '@eso-mtls/core';

describe('policyFingerprint', () => {
  it('is 12 hex digits, the same for the same policy, and pinned for the defaults (a change would make every controller look like another)', () => {
    const fp = policyFingerprint(resolvePolicy());
    expect(fp).toMatch(/^[0-9a-f]{12}$/);
    expect(policyFingerprint(resolvePolicy({}))).toBe(fp);
    expect(fp).toBe(policyFingerprint(resolvePolicy({ clusterDomain: 'cluster.local' })));
    expect(fp).toBe('dbc01ef0f889');
  });

  it('changes with every field that shapes what is issued', () => {
    const base = policyFingerprint(resolvePolicy());
    for (const overrides of [
      { clusterDomain: 'other.local' },
      { serviceAccount: 'eso' },
      { esoNamespace: 'eso' },
      { keyAlgorithm: 'RSA-2048' as const },
      { caValidity: days(400) },
      { leafValidity: days(80) },
      { leafLookahead: days(30) },
      { leafJitter: days(2) },
      { caLookahead: days(70) },
      { notBeforeBackdate: minutes(4) },
    ]) {
      expect([overrides, policyFingerprint(resolvePolicy(overrides))]).not.toEqual([overrides, base]);
    }
  });

  it("ignores the controller's own timings, which change nothing that is issued", () => {
    const base = policyFingerprint(resolvePolicy());
    expect(policyFingerprint(resolvePolicy({ reconcileInterval: minutes(1) }))).toBe(base);
    expect(policyFingerprint(resolvePolicy({ propagationDelay: minutes(4) }))).toBe(base);
    expect(policyFingerprint(resolvePolicy({ maxConnectionAge: minutes(20) }))).toBe(base);
  });
});
