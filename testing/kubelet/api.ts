// The certificates.k8s.io/v1 objects a kubelet reads and writes for pod certificates. client-node
// 1.4 knows them only as v1alpha1/v1beta1 (with fields v1 dropped), so the few fields used are
// declared here, as kube-apiserver v1.37 serves them (docs/pod-certificates-facts.md, section 1).

/** The API group and version both kinds are served at. */
export const CERTIFICATES_V1 = 'certificates.k8s.io/v1';

/** A `metav1.Condition` as JSON: times are RFC 3339 strings with whole seconds. */
export interface Condition {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
  readonly lastTransitionTime?: string;
}

/** What a kubelet asks of a signer for one pod; immutable once created. */
export interface PodCertificateRequestSpec {
  readonly signerName: string;
  readonly podName: string;
  readonly podUID: string;
  readonly serviceAccountName: string;
  readonly serviceAccountUID: string;
  readonly nodeName: string;
  readonly nodeUID: string;
  readonly maxExpirationSeconds?: number;
  /** Base64 of the DER PKCS#10 request; the apiserver verifies its self-signature. */
  readonly stubPKCS10Request: string;
  readonly unverifiedUserAnnotations?: Readonly<Record<string, string>>;
}

/** What the signer answered: one of the conditions Issued, Denied or Failed, and for Issued the chain and times. */
export interface PodCertificateRequestStatus {
  readonly conditions?: readonly Condition[];
  /** PEM, leaf first. */
  readonly certificateChain?: string;
  readonly notBefore?: string;
  readonly beginRefreshAt?: string;
  readonly notAfter?: string;
}

/** A PodCertificateRequest (namespaced). */
export interface PodCertificateRequest {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: {
    readonly name?: string;
    readonly generateName?: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly resourceVersion?: string;
    readonly ownerReferences?: readonly { apiVersion: string; kind: string; name: string; uid: string }[];
  };
  readonly spec: PodCertificateRequestSpec;
  readonly status?: PodCertificateRequestStatus;
}

/** A ClusterTrustBundle (cluster-scoped), as far as a kubelet projects it. */
export interface ClusterTrustBundle {
  readonly metadata: { readonly name?: string; readonly labels?: Readonly<Record<string, string>> };
  readonly spec: { readonly signerName?: string; readonly trustBundle: string };
}

/** Collection path of PodCertificateRequests: in `namespace`, or across namespaces. */
export function podCertificateRequestsPath(namespace?: string): string {
  const scope = namespace === undefined ? '' : `/namespaces/${encodeURIComponent(namespace)}`;
  return `/apis/${CERTIFICATES_V1}${scope}/podcertificaterequests`;
}

/** Path of one PodCertificateRequest, or of its `status` subresource. */
export function podCertificateRequestPath(namespace: string, name: string, subresource?: 'status'): string {
  return `${podCertificateRequestsPath(namespace)}/${encodeURIComponent(name)}${subresource ? `/${subresource}` : ''}`;
}

/** Collection path of ClusterTrustBundles. */
export const CLUSTER_TRUST_BUNDLES_PATH = `/apis/${CERTIFICATES_V1}/clustertrustbundles`;
