import type { Instant } from './time.js';

/**
 * What the planner knows of one X.509 certificate: plain data, parsed once and cached by the
 * caller-owned {@link CertificateCache}. Names follow RFC 5280.
 *
 * CONTRACT (implemented by the x509 layer: parse.ts / issue.ts / observe.ts / verify.ts).
 */
export interface CertificateView {
  /** Normalised PEM (one certificate, `\n` line ends, trailing newline). Also its identity. */
  readonly pem: string;
  readonly der: Uint8Array;
  /** Lower-case hex, no leading zero octet. */
  readonly serialNumber: string;
  /** RFC 4514 string of the subject / issuer distinguished names. */
  readonly subject: string;
  readonly issuer: string;
  readonly subjectCommonName: string | undefined;
  readonly notBefore: Instant;
  readonly notAfter: Instant;
  /** basicConstraints cA; false when the extension is absent. */
  readonly isCa: boolean;
  readonly pathLenConstraint: number | undefined;
  /** subjectAltName dNSName entries, in certificate order. */
  readonly dnsNames: readonly string[];
  /** subjectAltName uniformResourceIdentifier entries. */
  readonly uris: readonly string[];
  /** extendedKeyUsage purposes: 'serverAuth', 'clientAuth', or the dotted OID of any other. */
  readonly extendedKeyUsage: readonly string[];
  /** Lower-case hex of the subjectKeyIdentifier / authorityKeyIdentifier keyIdentifier. */
  readonly subjectKeyIdentifier: string | undefined;
  readonly authorityKeyIdentifier: string | undefined;
  /** DER SubjectPublicKeyInfo. */
  readonly subjectPublicKeyInfo: Uint8Array;
  /** DER of the signed TBSCertificate, the OID of its signatureAlgorithm, and the signature bits. */
  readonly tbsCertificate: Uint8Array;
  readonly signatureAlgorithm: string;
  readonly signatureValue: Uint8Array;
}
