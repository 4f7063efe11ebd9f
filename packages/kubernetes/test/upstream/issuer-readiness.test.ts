// An issuer's readiness from its object (the real cert-manager's cases are in cert-manager.test.ts).
import { describe, expect, it } from '@jest/globals';
import { issuerPath, issuerReadinessOf } from '../../src/upstream/issuer-readiness.js';

const CLUSTER = { kind: 'ClusterIssuer', name: 'org', group: 'cert-manager.io' } as const;
const ready = (status: string, observedGeneration?: number) => ({
  type: 'Ready',
  status,
  reason: status === 'True' ? 'KeyPairVerified' : 'ErrGetKeyPair',
  message: 'm',
  lastTransitionTime: '2026-11-29T09:00:00Z',
  observedGeneration,
});

describe('issuerReadinessOf', () => {
  it('ready only with Ready=True for the current generation', () => {
    expect(issuerReadinessOf({ metadata: { generation: 2 }, status: { conditions: [ready('True', 2)] } }, CLUSTER, 'eso')).toEqual({ state: 'ready' });
    expect(issuerReadinessOf({ metadata: { generation: 3 }, status: { conditions: [ready('True', 2)] } }, CLUSTER, 'eso')).toMatchObject({
      state: 'not_ready',
      message: 'ClusterIssuer org: cert-manager has not yet looked at generation 3 (Ready is of 2)',
    });
  });

  it('not ready with the reason and message cert-manager gave, or without a condition yet', () => {
    expect(issuerReadinessOf({ status: { conditions: [ready('False')] } }, CLUSTER, 'eso')).toEqual({
      state: 'not_ready',
      reason: 'ErrGetKeyPair',
      message: 'ClusterIssuer org is not Ready (ErrGetKeyPair): m',
      since: Date.parse('2026-11-29T09:00:00Z'),
    });
    expect(issuerReadinessOf({}, { kind: 'Issuer', name: 'x', group: 'cert-manager.io' }, 'eso')).toMatchObject({
      state: 'not_ready',
      message: 'Issuer eso/x has no Ready condition yet (is cert-manager running?)',
    });
  });

  it('missing when there is no object; an external issuer is named with its group', () => {
    expect(issuerReadinessOf(undefined, { kind: 'Issuer', name: 'x', group: 'awspca.cert-manager.io' }, 'eso')).toEqual({
      state: 'missing',
      message: 'Issuer.awspca.cert-manager.io eso/x does not exist; create it, or fix --ca-issuer',
    });
  });

  it('paths: a namespaced Issuer, a ClusterIssuer, an external group at its version', () => {
    expect(issuerPath({ kind: 'Issuer', name: 'x', group: 'cert-manager.io' }, 'eso')).toBe('/apis/cert-manager.io/v1/namespaces/eso/issuers/x');
    expect(issuerPath(CLUSTER, 'eso')).toBe('/apis/cert-manager.io/v1/clusterissuers/org');
    expect(issuerPath({ kind: 'ClusterIssuer', name: 'y', group: 'example.com' }, 'eso', 'v1beta1')).toBe('/apis/example.com/v1beta1/clusterissuers/y');
  });
});
