import type { CertificateView, KeyedCertificate } from '../x509/certificate.js';
import { serialHex } from '../x509/certificate-reader.js';
import { pathNotAfter, pathNotBefore, servedIntermediates } from '../x509/ca-path.js';
import { bundlePem } from '../x509/parse.js';
import { type IssueContext, issuePodLeaf, randomSerialNumber } from '../crypto/issue.js';
import type { PodRequestDecision } from './pod-request.js';
import { type PodValidity, podValidity } from './pod-validity.js';
import type { Duration } from '../common/time.js';

/** An issued pod certificate: what goes into the request's status. */
export interface PodCertificate extends PodValidity {
  /** The leaf. */
  readonly certificate: CertificateView;
  /**
   * `status.certificateChain`: the leaf's PEM, then an upstream intermediate CA's path but its
   * anchor (the anchors reach peers through the trust bundles).
   */
  readonly certificateChain: string;
}

/** A pod certificate, or why the CA cannot give one the apiserver would accept. */
export type PodIssueResult = ({ readonly ok: true } & PodCertificate) | { readonly ok: false; readonly detail: string };

/**
 * Issues the certificate an `issue` decision calls for, signed by `issuer` (the active CA): a
 * fresh serial, the times of podValidity, then the leaf. Fails, issuing nothing, when the CA ends
 * too soon for a certificate of the apiserver's minimum lifetime.
 */
export async function issuePodCertificate(
  ctx: IssueContext,
  issuer: KeyedCertificate,
  decision: Extract<PodRequestDecision, { kind: 'issue' }>,
  limits: { readonly maxExpirationSeconds: number | undefined; readonly maxValidity: Duration },
): Promise<PodIssueResult> {
  const serialNumber = randomSerialNumber(ctx.crypto.random);
  const validity = podValidity({
    now: ctx.now,
    maxExpirationSeconds: limits.maxExpirationSeconds,
    maxValidity: limits.maxValidity,
    caNotAfter: pathNotAfter(issuer),
    caNotBefore: pathNotBefore(issuer),
    serialNumber: serialHex(serialNumber),
    policy: ctx.policy,
  });
  if (!validity.ok) return validity;
  const certificate = await issuePodLeaf(ctx, issuer, {
    role: decision.role,
    subjectPublicKeyInfo: decision.subjectPublicKeyInfo,
    dnsNames: decision.dnsNames,
    serialNumber,
    notBefore: validity.notBefore,
    notAfter: validity.notAfter,
  });
  return {
    ok: true,
    certificate,
    certificateChain: bundlePem([certificate, ...servedIntermediates(issuer)]),
    notBefore: validity.notBefore,
    notAfter: validity.notAfter,
    beginRefreshAt: validity.beginRefreshAt,
  };
}
