import type { CertificateView } from './certificate.js';

/**
 * The signature check of a `SignatureVerifier` (crypto/crypto.ts), which is one: named here
 * because x509/ sits below crypto/ and takes what it needs as a plain shape.
 */
export interface SignatureCheck {
  /**
   * True when `signature` over `data` verifies under the public key `subjectPublicKeyInfo` (DER)
   * with the signature algorithm whose OID is `signatureAlgorithmOid`; false on any failure.
   */
  verify(subjectPublicKeyInfo: Uint8Array, signatureAlgorithmOid: string, data: Uint8Array, signature: Uint8Array): boolean;
}

/** True when `issuer`'s key made `certificate`'s signature. */
export const isSignedBy = (certificate: CertificateView, issuer: CertificateView, check: SignatureCheck): boolean =>
  check.verify(issuer.subjectPublicKeyInfo, certificate.signatureAlgorithm, certificate.tbsCertificate, certificate.signatureValue);
