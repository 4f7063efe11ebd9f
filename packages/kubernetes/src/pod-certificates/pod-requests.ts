import { MAX_STUB_REQUEST_BYTES, type PodRequestView, type PodSignerRole } from '@eso-mtls/core';

/** The longest base64 `stubPKCS10Request` cached: the core's byte bound, encoded. */
const MAX_STUB_REQUEST_BASE64 = Math.ceil(MAX_STUB_REQUEST_BYTES / 3) * 4;

/** A PodCertificateRequest (certificates.k8s.io/v1) as read; the signer caches it pending only, trimmed by {@link pendingRequest}. */
export interface PodCertificateRequest {
  readonly metadata?: {
    readonly name?: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly resourceVersion?: string;
  };
  readonly spec?: {
    readonly signerName?: string;
    readonly podName?: string;
    readonly podUID?: string;
    readonly serviceAccountName?: string;
    readonly serviceAccountUID?: string;
    readonly nodeName?: string;
    readonly nodeUID?: string;
    readonly maxExpirationSeconds?: number;
    /** base64 DER; undefined in the cache when over {@link MAX_STUB_REQUEST_BASE64}. */
    readonly stubPKCS10Request?: string;
  };
  readonly status?: {
    readonly conditions?: readonly { readonly type?: string; readonly status?: string; readonly reason?: string }[];
  };
}

/** The terminal condition types: after one of them the apiserver freezes the status. */
const TERMINAL: ReadonlySet<string> = new Set(['Issued', 'Denied', 'Failed']);

/** A request's condition as read: its type and reason. */
type Condition = { readonly type?: string; readonly reason?: string };

/**
 * The request's terminal condition (Issued, Denied or Failed; the apiserver allows one), or
 * undefined while it waits for its signer.
 *
 * @internal Shared with \@eso-mtls/controller (`eso-mtls status`); not part of the supported API.
 */
export function terminalCondition<C extends Condition>(request: { readonly status?: { readonly conditions?: readonly C[] } }): C | undefined {
  return (request.status?.conditions ?? []).find((c) => c.type !== undefined && TERMINAL.has(c.type));
}

/** True while no Issued, Denied or Failed condition is set: the request waits for its signer. */
function isPending(request: PodCertificateRequest): boolean {
  return terminalCondition(request) === undefined;
}

/**
 * What the cache keeps of a request while it waits for its signer: identity and spec, never its
 * status; undefined once it is decided, so the cache holds pending requests only (a decided one
 * needs nothing more from us, and thousands stay in the API for 30 minutes after a burst). The stub
 * request is dropped when it is larger than any kubelet's (the request is then Denied as
 * unreadable), so a forged request cannot make the cache large.
 */
export function pendingRequest(r: PodCertificateRequest): PodCertificateRequest | undefined {
  if (!isPending(r)) return undefined;
  const m = r.metadata ?? {};
  const s = r.spec ?? {};
  const stub = s.stubPKCS10Request;
  return {
    metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion },
    spec: {
      signerName: s.signerName,
      podName: s.podName,
      podUID: s.podUID,
      serviceAccountName: s.serviceAccountName,
      serviceAccountUID: s.serviceAccountUID,
      nodeName: s.nodeName,
      nodeUID: s.nodeUID,
      maxExpirationSeconds: s.maxExpirationSeconds,
      stubPKCS10Request: stub !== undefined && stub.length <= MAX_STUB_REQUEST_BASE64 ? stub : undefined,
    },
  };
}

/** The request as the core decides it, for a signer role. Field values the apiserver requires are never absent. */
export function requestView(r: PodCertificateRequest, role: PodSignerRole): PodRequestView {
  const s = r.spec ?? {};
  const stub = s.stubPKCS10Request === undefined ? new Uint8Array() : new Uint8Array(Buffer.from(s.stubPKCS10Request, 'base64'));
  return {
    namespace: r.metadata?.namespace ?? '',
    role,
    podName: s.podName ?? '',
    podUid: s.podUID ?? '',
    serviceAccountName: s.serviceAccountName ?? '',
    stubPkcs10Request: stub,
    ...(s.maxExpirationSeconds === undefined ? {} : { maxExpirationSeconds: s.maxExpirationSeconds }),
  };
}
