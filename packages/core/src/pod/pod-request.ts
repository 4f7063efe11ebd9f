import { type FittedServices, fitServiceNames } from '../x509/name-budget.js';
import { InvalidNameError, isDnsLabel } from '../x509/names.js';
import { type NamespaceRequirement, notAllowedMessage } from '../policy/namespace-requirement.js';
import { type PodKeyType, podKeyTypeOf } from './pod-key.js';
import type { Policy } from '../policy/policy.js';
import { truncate } from '../common/truncate.js';
import { StubRequestError, stubRequestPublicKey } from './stub-request.js';

/** Which of the two signers a request names: provider servers, or ESO core's client. */
export type PodSignerRole = 'server' | 'client';

/** What the signer reads of a PodCertificateRequest. Every field comes from the request's spec. */
export interface PodRequestView {
  /** The request's namespace: the pod's. */
  readonly namespace: string;
  /** The signer it names. */
  readonly role: PodSignerRole;
  readonly podName: string;
  readonly podUid: string;
  readonly serviceAccountName: string;
  /** `spec.stubPKCS10Request`, DER. */
  readonly stubPkcs10Request: Uint8Array;
  readonly maxExpirationSeconds?: number;
}

/** The pod as read with a metadata-only GET: its UID and labels; undefined when it does not exist. */
export interface PodMetadataView {
  readonly uid: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** A labelled Service of the pod's namespace, with its selector (undefined or empty: selects no pod). */
export interface SelectingService {
  readonly name: string;
  readonly selector?: Readonly<Record<string, string>>;
  /** `spec.type` (undefined: ClusterIP); see {@link isExternalName}. */
  readonly type?: string;
}

/**
 * An ExternalName Service is a DNS alias (a CNAME) of another host: Kubernetes ignores its
 * selector, so its names never lead to the pods the selector matches, and no pod gets a
 * certificate for them.
 */
export function isExternalName(service: { readonly type?: string }): boolean {
  return service.type === 'ExternalName';
}

/**
 * Why a request is Denied: the condition's `reason`, which the apiserver requires to match
 * `[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?`, and the label of the Denied counter.
 */
export type PodDenyReason =
  | 'NoProviderService'
  | 'NamespaceNotAllowed'
  | 'UnsupportedKeyType'
  | 'PodNotFound'
  | 'PodMismatch'
  | 'UnauthorizedServiceAccount'
  | 'InvalidStubRequest'
  | 'InvalidServiceName'
  | 'ExternalNameService';

/** Every {@link PodDenyReason}, for metrics that list each one. */
export const POD_DENY_REASONS: readonly PodDenyReason[] = [
  'NoProviderService',
  'NamespaceNotAllowed',
  'UnsupportedKeyType',
  'PodNotFound',
  'PodMismatch',
  'UnauthorizedServiceAccount',
  'InvalidStubRequest',
  'InvalidServiceName',
  'ExternalNameService',
];

/** What the signer does with a request. */
export type PodRequestDecision =
  | {
      readonly kind: 'issue';
      readonly role: PodSignerRole;
      /** The key to certify, taken from the stub request. */
      readonly subjectPublicKeyInfo: Uint8Array;
      readonly keyType: PodKeyType;
      /** A server certificate's DNS names: the design's four for every selecting Service (empty for the client). */
      readonly dnsNames: readonly string[];
      /** The selecting Services whose names the certificate carries, sorted (empty for the client). */
      readonly services: readonly string[];
      /** Selecting Services left out because their names would make the certificate too large. */
      readonly refused: readonly string[];
    }
  | { readonly kind: 'deny'; readonly reason: PodDenyReason; readonly message: string };

/** Everything {@link decidePodRequest} reads. */
export interface PodRequestInput {
  readonly request: PodRequestView;
  /** The pod, from a metadata-only read; undefined when it is gone. */
  readonly pod: PodMetadataView | undefined;
  /** The labelled Services of the request's namespace (ignored for the client signer). */
  readonly services: readonly SelectingService[];
  /** ESO's namespace and ServiceAccount, and the cluster domain. */
  readonly policy: Policy;
  /** The label a namespace must carry before its pods get server certificates; undefined: none. */
  readonly namespaceRequirement?: NamespaceRequirement;
  /** Whether the request's namespace carries that label (read only with a requirement). */
  readonly namespaceAllowed?: boolean;
}

/**
 * Decides one request, as a chain of small rules in order: the pod must exist with the request's
 * UID; the key must be of a type we issue for; then the role's own rule. A server certificate
 * needs the namespace requirement met, if there is one, and at least one labelled Service of the namespace selecting the pod's labels (matched against
 * the labels, not EndpointSlices: a pod is not Ready before it has its certificate). A client
 * certificate goes only to ESO's ServiceAccount in ESO's namespace.
 */
export function decidePodRequest(input: PodRequestInput): PodRequestDecision {
  const { request, pod } = input;
  const who = `pod ${request.namespace}/${truncate(request.podName, 253)}`;
  if (pod === undefined) return deny('PodNotFound', `${who} does not exist (any more)`);
  if (pod.uid !== request.podUid) return deny('PodMismatch', `${who} has UID ${truncate(pod.uid, 64)}, not the request's ${truncate(request.podUid, 64)}`);
  let subjectPublicKeyInfo: Uint8Array;
  try {
    subjectPublicKeyInfo = stubRequestPublicKey(request.stubPkcs10Request);
  } catch (e) {
    if (!(e instanceof StubRequestError)) throw e;
    return deny('InvalidStubRequest', `the stub PKCS#10 request of ${who} is unreadable: ${e.message}`);
  }
  const keyType = podKeyTypeOf(subjectPublicKeyInfo);
  if (!keyType.ok) return deny('UnsupportedKeyType', `${who} asks for ${keyType.detail}`);
  const key = { subjectPublicKeyInfo, keyType: keyType.type };
  return request.role === 'client' ? decideClient(input, key) : decideServer(input, key);
}

type Key = { readonly subjectPublicKeyInfo: Uint8Array; readonly keyType: PodKeyType };

function decideClient({ request, policy }: PodRequestInput, key: Key): PodRequestDecision {
  if (request.namespace !== policy.esoNamespace || request.serviceAccountName !== policy.serviceAccount) {
    return deny(
      'UnauthorizedServiceAccount',
      `the client signer issues only to ServiceAccount ${policy.esoNamespace}/${policy.serviceAccount}; pod ${request.namespace}/${truncate(request.podName, 253)} runs as ${request.namespace}/${truncate(request.serviceAccountName, 253)}`,
    );
  }
  return { kind: 'issue', role: 'client', ...key, dnsNames: [], services: [], refused: [] };
}

function decideServer({ request, pod, services, policy, namespaceRequirement, namespaceAllowed }: PodRequestInput, key: Key): PodRequestDecision {
  if (namespaceRequirement !== undefined && namespaceAllowed !== true)
    return deny('NamespaceNotAllowed', notAllowedMessage(request.namespace, namespaceRequirement));
  const names = serverNames(request.namespace, request.podName, pod!.labels, services, policy.clusterDomain);
  if (names.kind === 'deny') return names;
  const { dnsNames, services: served, refused } = names;
  return { kind: 'issue', role: 'server', ...key, dnsNames, services: served, refused };
}

/**
 * The DNS names a server certificate for a pod with `labels` carries now: the design's four for
 * every labelled Service of the namespace selecting it, within the certificate size budget (an
 * ExternalName Service's selector counts for nothing: {@link isExternalName}); or why none can be issued. The stale-names gauge compares what pods serve with this.
 */
export function serverNames(
  namespace: string,
  podName: string,
  labels: Readonly<Record<string, string>>,
  services: readonly SelectingService[],
  clusterDomain: string,
):
  | { readonly kind: 'names'; readonly dnsNames: readonly string[]; readonly services: readonly string[]; readonly refused: readonly string[] }
  | Extract<PodRequestDecision, { kind: 'deny' }> {
  const request = { namespace, podName };
  const matching = services.filter((s) => selects(s.selector, labels));
  const selecting = matching.filter((s) => !isExternalName(s));
  const alias = matching.find(isExternalName);
  if (selecting.length === 0 && alias !== undefined) {
    return {
      kind: 'deny',
      reason: 'ExternalNameService',
      message: `Service ${request.namespace}/${truncate(alias.name, 253)} selects pod ${truncate(request.podName, 253)} but is of type ExternalName, an alias of another host: its names do not lead to the pod; label a ClusterIP or headless Service that selects the pod instead`,
    };
  }
  if (selecting.length === 0) {
    return {
      kind: 'deny',
      reason: 'NoProviderService',
      message: `no Service labelled external-secrets.io/provider=true in namespace ${request.namespace} selects pod ${truncate(request.podName, 253)}; label one whose selector matches the pod, and the next request is issued`,
    };
  }
  const bad = selecting.find((s) => !isDnsLabel(s.name));
  if (bad !== undefined)
    return { kind: 'deny', reason: 'InvalidServiceName', message: `Service ${request.namespace}/${truncate(bad.name, 253)} is not a DNS-1123 label` };
  let fitted: FittedServices<{ namespace: string; name: string }>;
  try {
    const refs = selecting.map((s) => ({ namespace: request.namespace, name: s.name })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    fitted = fitServiceNames(refs, undefined, clusterDomain);
  } catch (e) {
    if (!(e instanceof InvalidNameError)) throw e;
    return { kind: 'deny', reason: 'InvalidServiceName', message: e.message };
  }
  return {
    kind: 'names',
    dnsNames: fitted.dnsNames,
    services: fitted.fitted.map((s) => s.name),
    refused: fitted.refused.map((r) => r.service.name),
  };
}

/**
 * A Service selector selects a pod when it is non-empty and every one of its pairs is among the
 * pod's labels: a Service without a selector (or with an empty one) selects no pod, as Kubernetes has it.
 */
export function selects(selector: Readonly<Record<string, string>> | undefined, labels: Readonly<Record<string, string>>): boolean {
  const pairs = Object.entries(selector ?? {});
  return pairs.length > 0 && pairs.every(([k, v]) => Object.hasOwn(labels, k) && labels[k] === v);
}

function deny(reason: PodDenyReason, message: string): PodRequestDecision {
  return { kind: 'deny', reason, message };
}
