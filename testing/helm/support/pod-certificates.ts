import type {
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1Deployment,
  V1PodSpec,
  V1PolicyRule,
  V1Role,
  V1RoleBinding,
  V1VolumeProjection,
} from '@kubernetes/client-node';
import type { Manifest } from '@eso-mtls/test-kit/manifests';

// What the pod-certificate manifests must say, from the mode's contract (issue 15,
// docs/pod-certificates.md), and pure checks of rendered manifests against it.

/** The default signer of provider server certificates (--server-signer-name). */
export const SERVER_SIGNER = 'eso-mtls.io/provider-server';
/** The default signer of ESO core's client certificate (--client-signer-name). */
export const CLIENT_SIGNER = 'eso-mtls.io/eso-client';
/** The selector every clusterTrustBundle projection must carry: with a signerName and none, it matches nothing. */
export const TRUST_BUNDLE_SELECTOR = { matchLabels: { 'eso-mtls.io/trust-bundle': 'true' } };

/** The signer's ClusterRole rules of the contract, for the two signer names. */
export function signerRules(serverSigner: string, clientSigner: string): V1PolicyRule[] {
  return [
    { apiGroups: ['certificates.k8s.io'], resources: ['signers'], resourceNames: [serverSigner, clientSigner], verbs: ['sign', 'attest'] },
    { apiGroups: ['certificates.k8s.io'], resources: ['podcertificaterequests'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: ['certificates.k8s.io'], resources: ['podcertificaterequests/status'], verbs: ['update'] },
    { apiGroups: ['certificates.k8s.io'], resources: ['clustertrustbundles'], verbs: ['get', 'list', 'watch', 'create', 'update'] },
    { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
  ];
}

/** The rules the pod-certificate mode shares with the Secret mode: Services and Events. */
export const SHARED_RULES: V1PolicyRule[] = [
  { apiGroups: [''], resources: ['services'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
];

/** A rule as a canonical string: whatever the order of its fields and lists. */
function canonical(rule: V1PolicyRule): string {
  const sorted = (xs: readonly string[] | undefined) => [...(xs ?? [])].sort();
  const { apiGroups, resources, resourceNames, verbs, nonResourceURLs } = rule;
  return JSON.stringify({
    apiGroups: sorted(apiGroups),
    resources: sorted(resources),
    resourceNames: sorted(resourceNames),
    verbs: sorted(verbs),
    nonResourceURLs: sorted(nonResourceURLs),
  });
}

/** Rules as a sorted list of canonical strings: equal when they grant the same, in any order. */
export function ruleSet(rules: readonly V1PolicyRule[]): string[] {
  return rules.map(canonical).sort();
}

/** Whether a rule grants anything on Secrets (wildcards included). */
function grantsSecrets(rule: V1PolicyRule): boolean {
  const groups = rule.apiGroups ?? [];
  const resources = rule.resources ?? [];
  return (groups.includes('') || groups.includes('*')) && resources.some((r) => r === '*' || r === 'secrets' || r.startsWith('secrets/'));
}

/**
 * Every Secret right the manifests give the ServiceAccount `namespace/name` outside `namespace`,
 * each as "<role> <rule>": ClusterRoles bound cluster-wide, and Roles or ClusterRoles bound in
 * another namespace. Empty when its only Secret rights are in its own namespace.
 */
export function secretRightsOutside(manifests: readonly Manifest[], namespace: string, name: string): string[] {
  const isSubject = (subjects: V1RoleBinding['subjects']) =>
    (subjects ?? []).some((s) => s.kind === 'ServiceAccount' && s.namespace === namespace && s.name === name);
  const rulesOf = (kind: string, roleName: string, roleNamespace?: string): V1PolicyRule[] => {
    const role = manifests.find((m) => m.kind === kind && m.metadata?.name === roleName && (kind === 'ClusterRole' || m.metadata?.namespace === roleNamespace));
    return (role as V1ClusterRole | V1Role | undefined)?.rules ?? [];
  };
  const found: string[] = [];
  for (const m of manifests) {
    const binding = m as unknown as V1ClusterRoleBinding | V1RoleBinding;
    if (!isSubject(binding.subjects)) continue;
    const ref = binding.roleRef;
    if (m.kind === 'ClusterRoleBinding') {
      for (const r of rulesOf('ClusterRole', ref.name).filter(grantsSecrets)) found.push(`ClusterRole ${ref.name} (cluster-wide) ${canonical(r)}`);
    }
    if (m.kind === 'RoleBinding' && m.metadata?.namespace !== namespace) {
      for (const r of rulesOf(ref.kind, ref.name, m.metadata?.namespace).filter(grantsSecrets)) {
        found.push(`${ref.kind} ${ref.name} (in ${m.metadata?.namespace}) ${canonical(r)}`);
      }
    }
  }
  return found;
}

/** The flags of a container's args as name → value (`--name=value`; a bare `--name` is `true`). */
export function flagsOf(args: readonly string[]): Record<string, string | true> {
  const flags: Record<string, string | true> = {};
  for (const a of args) {
    const m = /^--([a-z][a-z0-9-]*)(?:=(.*))?$/.exec(a);
    if (m) flags[m[1]!] = m[2] ?? true;
  }
  return flags;
}

/** The one container named `name` of a Deployment. */
export function containerOf(deployment: V1Deployment, name: string): NonNullable<V1PodSpec['containers'][number]> {
  const found = deployment.spec!.template.spec!.containers.filter((c) => c.name === name);
  if (found.length !== 1) throw new Error(`expected one container ${name} in Deployment ${deployment.metadata?.name}, found ${found.length}`);
  return found[0]!;
}

/** The credential volume a pod mounts at `mountPath`: its name and projected sources, and how it is mounted. */
export function credentialVolume(pod: V1PodSpec, container: string, mountPath: string): { name: string; sources: V1VolumeProjection[]; subPath?: string } {
  const mount = pod.containers.find((c) => c.name === container)?.volumeMounts?.find((v) => v.mountPath === mountPath);
  if (!mount) throw new Error(`container ${container} mounts nothing at ${mountPath}`);
  const volume = pod.volumes?.find((v) => v.name === mount.name);
  if (!volume?.projected) throw new Error(`volume ${mount.name} at ${mountPath} is not a projected volume: ${JSON.stringify(volume)}`);
  return { name: mount.name, sources: volume.projected.sources ?? [], ...(mount.subPath === undefined ? {} : { subPath: mount.subPath }) };
}

/**
 * The contract's projected sources for a pod whose certificate `signer` issues and which trusts
 * the CAs of `trustSigner`: one podCertificate (24-hour leaves, key and chain in credentials.pem)
 * and one clusterTrustBundle with the label selector, at ca.crt.
 */
export function expectedSources(signer: string, trustSigner: string): V1VolumeProjection[] {
  return [
    { podCertificate: { signerName: signer, keyType: 'ECDSAP256', maxExpirationSeconds: 86400, credentialBundlePath: 'credentials.pem' } },
    { clusterTrustBundle: { signerName: trustSigner, labelSelector: TRUST_BUNDLE_SELECTOR, path: 'ca.crt' } },
  ];
}
