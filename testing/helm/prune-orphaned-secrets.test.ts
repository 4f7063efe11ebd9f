import { afterAll, describe, expect, it } from '@jest/globals';
import type { V1ClusterRole, V1Deployment } from '@kubernetes/client-node';
import { find, kustomizeBuild } from '@eso-mtls/test-kit/manifests';
import { Helm, HelmError, chartDir } from '@eso-mtls/test-kit/helm';
import { containerOf, flagsOf } from './support/pod-certificates.js';

// The chart's pruneOrphanedSecrets value against the kustomize overlay: the same one RBAC rule and
// the same flag, nothing else, and nothing of it by default.
const helm = new Helm();
afterAll(() => helm.remove());

const NAME = 'eso-mtls-controller';
const DELETE_RULE = { apiGroups: [''], resources: ['secrets'], resourceNames: ['external-secrets-provider-tls'], verbs: ['delete'] };

const deletes = (role: V1ClusterRole) => (role.rules ?? []).filter((r) => r.verbs.includes('delete') || r.verbs.includes('*'));
const render = (values: Record<string, unknown>) => helm.template(chartDir, 'eso-mtls', 'external-secrets', { fullnameOverride: NAME, ...values });

describe('pruning of orphaned provider Secrets in the chart and the overlay', () => {
  it('grants delete nowhere by default, in deploy/base or the chart, and passes no flag', () => {
    const chart = render({});
    expect(deletes(find<V1ClusterRole>(chart, 'ClusterRole', NAME))).toEqual([]);
    expect(deletes(find<V1ClusterRole>(kustomizeBuild('deploy/base'), 'ClusterRole', NAME))).toEqual([]);
    const args = containerOf(find<V1Deployment>(chart, 'Deployment', NAME), 'controller').args ?? [];
    expect(flagsOf(args)['prune-orphaned-secrets-after']).toBeUndefined();
  });

  it('adds the same single rule and the same 24h flag as deploy/overlays/prune-orphaned-secrets', () => {
    const chart = render({ pruneOrphanedSecrets: { enabled: true } });
    const overlay = kustomizeBuild('deploy/overlays/prune-orphaned-secrets');
    expect(deletes(find<V1ClusterRole>(chart, 'ClusterRole', NAME))).toEqual([DELETE_RULE]);
    expect(deletes(find<V1ClusterRole>(overlay, 'ClusterRole', NAME))).toEqual([DELETE_RULE]);
    for (const deployment of [find<V1Deployment>(chart, 'Deployment', NAME), find<V1Deployment>(overlay, 'Deployment', NAME)]) {
      expect(flagsOf(containerOf(deployment, 'controller').args ?? [])['prune-orphaned-secrets-after']).toBe('24h');
    }
    const longer = render({ pruneOrphanedSecrets: { enabled: true, after: '72h' } });
    expect(flagsOf(containerOf(find<V1Deployment>(longer, 'Deployment', NAME), 'controller').args ?? [])['prune-orphaned-secrets-after']).toBe('72h');
  });

  it('refuses pod-certificate-only mode and a grace under an hour', () => {
    expect(() => render({ modes: ['pod-certificate'], pruneOrphanedSecrets: { enabled: true } })).toThrow(
      'pruneOrphanedSecrets.enabled needs modes to include secret',
    );
    expect(() => render({ pruneOrphanedSecrets: { enabled: true, after: '30m' } })).toThrow(HelmError);
  });
});
