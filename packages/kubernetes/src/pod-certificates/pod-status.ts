import type { Instant, PodCertificate } from '@eso-mtls/core';
import type { PodCertificateRequest } from './pod-requests.js';

/** The condition reason of an issued request. */
export const ISSUED_REASON = 'Issued';
/** The condition reason of a request failed because no CA can sign a certificate the apiserver accepts. */
export const CA_UNAVAILABLE_REASON = 'CAUnavailable';
// metav1.Condition allows 32 KiB; ours are one sentence.
const MAX_CONDITION_MESSAGE = 1024;

/** The status written to a request: Issued with the chain and times, or Denied or Failed with a reason. */
export type PodRequestOutcome =
  { readonly kind: 'Issued'; readonly certificate: PodCertificate } | { readonly kind: 'Denied' | 'Failed'; readonly reason: string; readonly message: string };

/**
 * The body of `PUT .../podcertificaterequests/<name>/status`: the request as cached, at its
 * resourceVersion (so a concurrent writer makes ours fail with 409), with the one terminal
 * condition. Times are RFC 3339 with whole seconds: the apiserver requires the status times to
 * equal the leaf's exactly.
 */
export function statusBody(request: PodCertificateRequest, outcome: PodRequestOutcome, now: Instant): unknown {
  const at = rfc3339(now);
  const condition =
    outcome.kind === 'Issued'
      ? { type: 'Issued', status: 'True', reason: ISSUED_REASON, message: 'issued by eso-mtls', lastTransitionTime: at }
      : { type: outcome.kind, status: 'True', reason: outcome.reason, message: outcome.message.slice(0, MAX_CONDITION_MESSAGE), lastTransitionTime: at };
  const issued =
    outcome.kind === 'Issued'
      ? {
          certificateChain: outcome.certificate.certificateChain,
          notBefore: rfc3339(outcome.certificate.notBefore),
          notAfter: rfc3339(outcome.certificate.notAfter),
          beginRefreshAt: rfc3339(outcome.certificate.beginRefreshAt),
        }
      : {};
  return {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'PodCertificateRequest',
    metadata: {
      name: request.metadata?.name,
      namespace: request.metadata?.namespace,
      uid: request.metadata?.uid,
      resourceVersion: request.metadata?.resourceVersion,
    },
    spec: request.spec,
    status: { conditions: [condition], ...issued },
  };
}

/** metav1.Time: RFC 3339 in UTC with whole seconds. */
function rfc3339(t: Instant): string {
  return new Date(Math.floor(t / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
