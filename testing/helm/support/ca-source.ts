import type { V1ClusterRole, V1PolicyRule, V1Role } from '@kubernetes/client-node';
import type { Manifest } from '@eso-mtls/test-kit/manifests';
import type { Values } from '@eso-mtls/test-kit/helm';
import { ruleSet } from './pod-certificates.js';

// The CA source's install (issue 35 item 6, docs/chaining-to-your-pki.md): the values and overlay
// names the chart and deploy/overlays/ca-issuer and ca-from-secret share, and the rules they must add.

/** The names deploy/overlays/ca-issuer and ca-from-secret use. */
export const OVERLAY_NAMES = {
  clusterIssuer: 'organisation-ca',
  intermediateSecret: 'organisation-intermediate',
  roots: 'organisation-roots',
} as const;

/** Chart values of deploy/overlays/ca-issuer: the ClusterIssuer, anchors in a ConfigMap. */
export const ISSUER_OVERLAY_VALUES: Values = {
  ca: {
    source: 'issuer',
    issuer: { kind: 'ClusterIssuer', name: OVERLAY_NAMES.clusterIssuer },
    trustAnchors: { kind: 'ConfigMap', name: OVERLAY_NAMES.roots, key: 'ca.crt' },
  },
};

/** Chart values of deploy/overlays/ca-from-secret: the Secret, anchors in another Secret. */
export const SECRET_OVERLAY_VALUES: Values = {
  ca: {
    source: 'secret',
    secret: { name: OVERLAY_NAMES.intermediateSecret },
    trustAnchors: { kind: 'Secret', name: OVERLAY_NAMES.roots, key: 'ca.crt' },
  },
};

/** The rule on CertificateRequests in ESO's namespace: create, read and delete, no update. */
export const CERTIFICATE_REQUEST_RULE: V1PolicyRule = {
  apiGroups: ['cert-manager.io'],
  resources: ['certificaterequests'],
  verbs: ['create', 'get', 'list', 'watch', 'delete'],
};

/** A read-only rule on the named objects of `resource` in `group`. */
export function readByName(group: string, resource: string, names: readonly string[]): V1PolicyRule {
  return { apiGroups: [group], resources: [resource], resourceNames: [...names], verbs: ['get', 'list', 'watch'] };
}

/** The rules of every Role and ClusterRole among `ms`, as "<kind> <name>" → rules. */
export function rolesOf(ms: readonly Manifest[]): Map<string, V1PolicyRule[]> {
  return new Map(
    ms.filter((m) => m.kind === 'Role' || m.kind === 'ClusterRole').map((m) => [`${m.kind} ${m.metadata!.name}`, (m as V1Role | V1ClusterRole).rules ?? []]),
  );
}

/**
 * What `after` grants beyond `before`, as "<kind> <name>: <rule>" lines (rules in ruleSet's canonical
 * form): the rules of roles that are new or changed, less those `before` had in the same role.
 */
export function addedRules(before: readonly Manifest[], after: readonly Manifest[]): string[] {
  const old = rolesOf(before);
  const added: string[] = [];
  for (const [role, rules] of rolesOf(after)) {
    const had = new Set(ruleSet(old.get(role) ?? []));
    for (const r of ruleSet(rules)) if (!had.has(r)) added.push(`${role}: ${r}`);
  }
  return added.sort();
}

/** `rule` as {@link addedRules} words it in `role`. */
export function ruleLine(role: string, rule: V1PolicyRule): string {
  return `${role}: ${ruleSet([rule])[0]!}`;
}
