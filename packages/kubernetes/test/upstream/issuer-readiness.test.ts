// An issuer's readiness from its object (the real cert-manager's cases are in cert-manager.test.ts).
import { describe, expect, it } from '@jest/globals';
import { issuerPath, servedKind } from '../../src/upstream/issuer-api.js';
import { issuerReadinessOf, issuerUnreadable } from '../../src/upstream/issuer-readiness.js';
import { unreadable } from '../../src/upstream/upstream-read.js';

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
    expect(issuerReadinessOf({ metadata: { generation: 2 }, status: { conditions: [ready('True', 2)] } }, CLUSTER, 'eso')).toEqual({
      state: 'ready',
      message: 'ClusterIssuer org is Ready',
    });
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

  it('names an external kind in the scope discovery found, whatever its name says; by its name before discovery answered', () => {
    const odd = { kind: 'OrgCA', name: 'root', group: 'pki.example.com' };
    const cluster = { version: 'v1beta1', plural: 'orgcas', namespaced: false };
    expect(issuerReadinessOf(undefined, odd, 'eso', cluster).message).toBe('OrgCA.pki.example.com root does not exist; create it, or fix --ca-issuer');
    expect(issuerReadinessOf(undefined, odd, 'eso').message).toBe('OrgCA.pki.example.com eso/root does not exist; create it, or fix --ca-issuer');
    const clusterNamed = { kind: 'ClusterlessIssuer', name: 'n', group: 'pki.example.com' };
    expect(issuerUnreadable(clusterNamed, 'eso', 'refused', '403', { ...cluster, namespaced: true }).message).toMatch(
      /^ClusterlessIssuer\.pki\.example\.com eso\/n cannot be read: 403;/,
    );
    expect(issuerUnreadable(clusterNamed, 'eso', 'not_served', 'not served').message).toMatch(/^ClusterlessIssuer\.pki\.example\.com n cannot be read/);
  });

  it('paths: a namespaced Issuer, a ClusterIssuer, an external kind at its version and scope', () => {
    const issuers = { version: 'v1', plural: 'issuers', namespaced: true };
    expect(issuerPath({ kind: 'Issuer', name: 'x', group: 'cert-manager.io' }, 'eso', issuers)).toBe('/apis/cert-manager.io/v1/namespaces/eso/issuers/x');
    expect(issuerPath(CLUSTER, 'eso', { version: 'v1', plural: 'clusterissuers', namespaced: false })).toBe('/apis/cert-manager.io/v1/clusterissuers/org');
    const pca = { kind: 'AWSPCAClusterIssuer', name: 'y', group: 'awspca.cert-manager.io' };
    expect(issuerPath(pca, 'eso', { version: 'v1beta1', plural: 'awspcaclusterissuers', namespaced: false })).toBe(
      '/apis/awspca.cert-manager.io/v1beta1/awspcaclusterissuers/y',
    );
  });

  it("a kind in discovery's resource list: its plural and scope, never a subresource", () => {
    const list = {
      resources: [
        { name: 'originissuers/status', kind: 'OriginIssuer', namespaced: true },
        { name: 'originissuers', kind: 'OriginIssuer', namespaced: true },
        { name: 'clusteroriginissuers', kind: 'ClusterOriginIssuer', namespaced: false },
      ],
    };
    expect(servedKind(list, 'OriginIssuer', 'v1')).toEqual({ version: 'v1', plural: 'originissuers', namespaced: true });
    expect(servedKind(list, 'ClusterOriginIssuer', 'v1')).toEqual({ version: 'v1', plural: 'clusteroriginissuers', namespaced: false });
    expect(servedKind(list, 'Issuer', 'v1')).toBeUndefined();
    expect(servedKind({}, 'Issuer', 'v1')).toBeUndefined();
  });
  it('an input the controller cannot read: the apiserver quoted (bounded) and what to check, per cause', () => {
    const answer = new Error(`GET /api/v1/namespaces/eso/secrets: HTTP 403 Forbidden: ${'x'.repeat(1000)}`);
    const refusal = unreadable('Secret eso/org-roots', answer, "check the controller's RBAC on it (its resourceNames), or fix --ca-trust-anchors");
    expect(refusal).toMatchObject({ ok: false, problem: 'unreadable' });
    expect(refusal.message).toMatch(
      /^Secret eso\/org-roots cannot be read: GET \/api\/v1\/namespaces\/eso\/secrets: HTTP 403 Forbidden: x+; check the controller's RBAC/,
    );
    expect(refusal.message.length).toBeLessThan(450);
    expect(issuerUnreadable(CLUSTER, 'eso', 'refused', 'the apiserver refused its list (403)')).toEqual({
      state: 'missing',
      message:
        "ClusterIssuer org cannot be read: the apiserver refused its list (403); check the controller's RBAC on it (the chart's ca.issuer.resource and ca.issuer.scope), or fix --ca-issuer",
    });
    expect(issuerUnreadable(CLUSTER, 'eso', 'not_served', 'the apiserver does not serve the API group cert-manager.io')).toEqual({
      state: 'missing',
      message:
        "ClusterIssuer org cannot be read: the apiserver does not serve the API group cert-manager.io; install cert-manager's CRDs (looked for again meanwhile), or fix --ca-issuer",
    });
  });
});
