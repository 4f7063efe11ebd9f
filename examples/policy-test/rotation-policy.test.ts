import { describe, expect, it } from '@jest/globals';
import { type Policy, PolicyError, type SimulationEvent, days, hours, minutes, resolvePolicy, simulate } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';

// Our platform team's policy: short-lived leaves (30 days, renewed 10 days ahead), a two-year CA,
// and kubelets that may take up to 5 minutes to deliver an updated Secret. resolvePolicy fills in
// the rest from the defaults and refuses an unsafe combination.
const ourPolicy: Policy = resolvePolicy({
  clusterDomain: 'cluster.local',
  caValidity: days(730),
  caLookahead: days(90),
  leafValidity: days(30),
  leafLookahead: days(10),
  leafJitter: hours(12),
  propagationDelay: minutes(5),
});

const services = [
  { namespace: 'vault-provider', name: 'vault' },
  { namespace: 'vault-provider', name: 'vault-canary' },
  { namespace: 'aws-provider', name: 'aws' },
];

describe('our rotation policy', () => {
  it('keeps every connection trusted through three years, a CA rotation and a deleted Secret', async () => {
    const start = Date.UTC(2027, 0, 1);
    const events: SimulationEvent[] = [
      { at: start + days(200), kind: 'requestCaRotation', token: 'drill-2027' },
      { at: start + days(400), kind: 'deleteSecret', target: { namespace: 'aws-provider' } },
      { at: start + days(500), kind: 'addService', namespace: 'aws-provider', service: 'aws-eu' },
    ];
    const { summary } = await simulate({ policy: ourPolicy, crypto: createNodeCryptoBackend(), services, start, duration: days(3 * 365), events });

    // The simulator checks trust, expiry and idempotence at every reconcile.
    expect(summary.violations).toEqual([]);
    // No certificate in use ever came within 5 days of its notAfter.
    expect(summary.minRemainingValidity).toBeGreaterThanOrEqual(days(5));
    // Leaves were renewed for expiry about every 20 days per namespace, and re-issued for the CA drill.
    expect(summary.byReason.expiring ?? 0).toBeGreaterThan(2 * 40);
    expect(summary.byReason.ca_rotated ?? 0).toBeGreaterThan(0);
    expect(summary.byReason.secret_missing).toBe(1);
  });

  it('holds with RSA-2048 keys too, fast: the simulation reuses a small pool of real keys for the leaves', async () => {
    const rsa = resolvePolicy({ ...ourPolicy, keyAlgorithm: 'RSA-2048' });
    const { summary } = await simulate({ policy: rsa, crypto: createNodeCryptoBackend(), services, duration: days(3 * 365) });
    expect(summary.violations).toEqual([]);
    // A few real RSA keys stand for every leaf; pass freshLeafKeys: true for one per leaf (minutes with RSA).
    expect(summary.leafKeys.pooled).toBe(true);
    expect(summary.leafKeys.handedOut).toBe(summary.serverIssuances + summary.clientIssuances);
    expect(summary.leafKeys.generated).toBeLessThan(summary.leafKeys.handedOut);
  });

  it('is refused when leaves would be renewed too late for the kubelet to deliver them', () => {
    expect(() => resolvePolicy({ leafValidity: days(30), leafLookahead: days(1), leafJitter: 0 })).toThrow(PolicyError);
  });
});
