import type { Instant } from '@eso-mtls/core';
import { type StatusCondition, conditionOf, instantOf } from './conditions.js';
import { pemFromBase64 } from './pem-bound.js';

/*
 * What a cert-manager CertificateRequest's status says, read the way cert-manager writes it
 * (pkg/apis/certmanager/v1 types_certificaterequest.go): an approver sets Approved or Denied, the
 * issuer's controller sets Ready (reason Pending, Issued, Failed or Denied) and InvalidRequest,
 * and puts the signed chain in status.certificate (base64 PEM) and, best effort, the CA in
 * status.ca. Denied, InvalidRequest and Ready=Failed are final: cert-manager never retries them.
 */

/** The status of a CertificateRequest, as cert-manager writes it. */
export interface CertificateRequestStatusObject {
  readonly conditions?: readonly StatusCondition[];
  /** base64 PEM: the certificate issued, then its chain. */
  readonly certificate?: string;
  /** base64 PEM: the CA the issuer says it signed with (best effort; often empty). */
  readonly ca?: string;
  readonly failureTime?: string;
}

/** Where a request stands: waiting for an approver, approved and waiting for the issuer, issued, or ended without a certificate. */
export type CaRequestState = 'pending' | 'approved' | 'issued' | 'denied' | 'failed';

/** Why an issued request's certificate was not taken. */
export type IssuedRefusalReason = 'too_large' | 'unreadable';

/** A request's state, since when, and what cert-manager said. */
export interface CaRequestStatus {
  readonly state: CaRequestState;
  /** When the condition deciding the state last changed (for `pending` without one: the request's creation); undefined when unknown. */
  readonly since: Instant | undefined;
  /** The deciding condition's reason (`Pending`, `Issued`, `Failed`, the approver's own...), if any. */
  readonly reason: string | undefined;
  /** What cert-manager (or the approver) said, or a sentence of ours when it said nothing. */
  readonly message: string;
  /** `issued` only: status.certificate as PEM (the intermediate first, then its chain), unparsed. */
  readonly certificatePem?: string;
  /** `issued` only, when status.ca is set: the issuer's CA as PEM, unparsed; a cross-check only, never trusted. */
  readonly caPem?: string;
  /** `issued` only: why status.certificate and status.ca were not taken (neither is then given). */
  readonly refusal?: { readonly reason: IssuedRefusalReason; readonly message: string };
}

const isTrue = (c: StatusCondition | undefined): c is StatusCondition => c?.status === 'True';

/** One state with the condition deciding it. */
const decided = (state: CaRequestState, condition: StatusCondition, otherwise: string): CaRequestStatus => ({
  state,
  since: instantOf(condition.lastTransitionTime),
  reason: condition.reason,
  message: condition.message || otherwise,
});

/** An issued request's PEM, each field within the bound, or the refusal of both. */
function issuedPem(status: CertificateRequestStatusObject, what: string): Pick<CaRequestStatus, 'certificatePem' | 'caPem' | 'refusal'> {
  if (!status.certificate) return { refusal: { reason: 'unreadable', message: `${what} is Ready with reason Issued but status.certificate is empty` } };
  const certificate = pemFromBase64(status.certificate, `${what} status.certificate`);
  if (!certificate.ok) return { refusal: { reason: 'too_large', message: certificate.message } };
  if (!certificate.pem.includes('-----BEGIN ')) return { refusal: { reason: 'unreadable', message: `${what} status.certificate is not PEM` } };
  if (!status.ca) return { certificatePem: certificate.pem };
  const ca = pemFromBase64(status.ca, `${what} status.ca`);
  if (!ca.ok) return { refusal: { reason: 'too_large', message: ca.message } };
  return { certificatePem: certificate.pem, caPem: ca.pem };
}

/**
 * Classifies a request's status. Final states win over the rest, in the order cert-manager
 * reaches them: Denied, InvalidRequest, Ready=False reason Failed; then Ready=True reason Issued
 * with its PEM (bounded: over 1 MiB is refused, unread); then Approved; else pending.
 * `created` is the request's creationTimestamp, the `since` of a request no one has looked at.
 */
export function classifyCaRequest(status: CertificateRequestStatusObject | undefined, created: string | undefined, what: string): CaRequestStatus {
  const condition = (type: string): StatusCondition | undefined => conditionOf(status?.conditions, type);
  const ready = condition('Ready');
  const denied = condition('Denied');
  if (isTrue(denied)) return decided('denied', denied, `${what} was denied by an approver`);
  const invalid = condition('InvalidRequest');
  if (isTrue(invalid)) return decided('failed', invalid, `${what} is invalid`);
  if (ready?.status === 'False' && ready.reason === 'Failed') return decided('failed', ready, `${what} failed`);
  if (isTrue(ready) && ready.reason === 'Issued') return { ...decided('issued', ready, `${what} was issued`), ...issuedPem(status ?? {}, what) };
  const approved = condition('Approved');
  if (isTrue(approved)) return decided('approved', ready ?? approved, `${what} is approved, waiting for its issuer`);
  if (ready) return decided('pending', ready, `${what} waits for an approver`);
  return { state: 'pending', since: instantOf(created), reason: undefined, message: `${what} waits for an approver` };
}
