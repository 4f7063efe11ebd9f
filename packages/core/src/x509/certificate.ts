import type { Instant } from '../common/time.js';

/**
 * What the planner knows of one X.509 certificate: plain data, parsed once and cached by the
 * caller-owned {@link CertificateCache}. Names follow RFC 5280.
 *
 * CONTRACT (implemented by the x509 layer: parse.ts / issue.ts / observe.ts / verify.ts).
 */
export interface CertificateView {
  /** Normalised PEM (one certificate, `\n` line ends, trailing newline). Also its identity. */
  readonly pem: string;
  /** The certificate's DER encoding. */
  readonly der: Uint8Array;
  /** Lower-case hex, no leading zero octet. */
  readonly serialNumber: string;
  /** RFC 4514 string of the subject distinguished name. */
  readonly subject: string;
  /** RFC 4514 string of the issuer distinguished name. */
  readonly issuer: string;
  /** The subject's commonName, if any. */
  readonly subjectCommonName: string | undefined;
  /** Start of the validity period. */
  readonly notBefore: Instant;
  /** End of the validity period. */
  readonly notAfter: Instant;
  /** basicConstraints cA; false when the extension is absent. */
  readonly isCa: boolean;
  /** basicConstraints pathLenConstraint, if present. */
  readonly pathLenConstraint: number | undefined;
  /** subjectAltName dNSName entries, in certificate order. */
  readonly dnsNames: readonly string[];
  /** subjectAltName uniformResourceIdentifier entries. */
  readonly uris: readonly string[];
  /** extendedKeyUsage purposes: 'serverAuth', 'clientAuth', or the dotted OID of any other. */
  readonly extendedKeyUsage: readonly string[];
  /** Lower-case hex of the subjectKeyIdentifier, if present. */
  readonly subjectKeyIdentifier: string | undefined;
  /** Lower-case hex of the authorityKeyIdentifier keyIdentifier, if present. */
  readonly authorityKeyIdentifier: string | undefined;
  /** DER SubjectPublicKeyInfo. */
  readonly subjectPublicKeyInfo: Uint8Array;
  /** DER of the signed TBSCertificate. */
  readonly tbsCertificate: Uint8Array;
  /** Dotted OID of the signatureAlgorithm. */
  readonly signatureAlgorithm: string;
  /** The signature bits. */
  readonly signatureValue: Uint8Array;
}

/** A certificate and the stored private key that belongs to it. */
export interface KeyedCertificate {
  /** The certificate. */
  readonly certificate: CertificateView;
  /** Its private key, PKCS#8 PEM; for a CA whose key a CaSigner holds, the reference to it. */
  readonly privateKeyPem: string;
  /**
   * The certificates above it, bottom up, each signed by the next: for an intermediate CA from an
   * upstream PKI, its issuers with the trust anchor last; for a leaf, the intermediates served
   * after it. Absent (or empty) for a self-signed root and for a leaf signed by one.
   */
  readonly chain?: readonly CertificateView[];
}
