import type { KubeConfig, V1LabelSelector, V1NetworkPolicyEgressRule, V1NetworkPolicyPeer, V1NetworkPolicyPort, V1ObjectMeta } from '@kubernetes/client-node';
import { type Answer, rawAnswer } from '@eso-mtls/test-kit/answers';

/**
 * A NetworkPolicy as YAML and the apiserver's JSON spell it. client-node's model renames the
 * ingress rule's `from` to `_from` and maps it only in its own serializer, so manifests read from
 * kustomize or helm are typed with this instead and sent as they are.
 */
export interface NetworkPolicy {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata?: V1ObjectMeta;
  readonly spec?: {
    readonly podSelector: V1LabelSelector;
    readonly policyTypes?: string[];
    readonly ingress?: { readonly from?: V1NetworkPolicyPeer[]; readonly ports?: V1NetworkPolicyPort[] }[];
    readonly egress?: V1NetworkPolicyEgressRule[];
  };
}

/**
 * A label selector as the `labelSelector` query parameter writes it, so the apiserver does the
 * matching: `k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`. `{}` selects everything ('').
 */
export function selectorQuery(selector: V1LabelSelector): string {
  const terms = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of selector.matchExpressions ?? []) {
    const values = (e.values ?? []).join(',');
    const term = { In: `${e.key} in (${values})`, NotIn: `${e.key} notin (${values})`, Exists: e.key, DoesNotExist: `!${e.key}` }[e.operator];
    if (term === undefined) throw new Error(`label selector operator ${e.operator} (key ${e.key}) is not one Kubernetes knows`);
    terms.push(term);
  }
  return terms.join(',');
}

/** The ports of every ingress rule, rule by rule. */
export function ingressPorts(policy: NetworkPolicy): (string | number)[][] {
  return (policy.spec!.ingress ?? []).map((rule) => (rule.ports ?? []).map((p) => p.port as string | number));
}

/**
 * Creates `policy` with fieldValidation=Strict, so an unknown or misplaced field is an error and
 * not a warning, and with dryRun=All unless `dryRun` is false. client-node has no fieldValidation
 * parameter, so this is one plain HTTPS request with the KubeConfig's credentials.
 */
export async function createNetworkPolicyStrictly(kc: KubeConfig, policy: NetworkPolicy, dryRun = true): Promise<Answer> {
  const namespace = policy.metadata!.namespace!;
  const query = `fieldValidation=Strict${dryRun ? '&dryRun=All' : ''}`;
  return rawAnswer(kc, 'POST', `/apis/networking.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/networkpolicies?${query}`, policy);
}
