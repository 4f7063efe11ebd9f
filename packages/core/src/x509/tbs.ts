import type { CertificateView } from './certificate.js';
import {
  Tag,
  bitString,
  boolean,
  children,
  contentsOf,
  equalBytes,
  encodingOf,
  explicit,
  namedBits,
  octetString,
  oid,
  readElement,
  sequence,
  smallInteger,
  text,
  time,
  tlv,
  unsignedInteger,
} from './der.js';
import { sha256 } from './sha256.js';
import type { Instant } from '../common/time.js';

/** ecdsa-with-SHA256 (RFC 5758); the core always signs over SHA-256. */
export const OID_ECDSA_WITH_SHA256 = '1.2.840.10045.4.3.2';
/** sha256WithRSAEncryption (RFC 4055). */
export const OID_SHA256_WITH_RSA = '1.2.840.113549.1.1.11';
const EC_PUBLIC_KEY = oid('1.2.840.10045.2.1');
const RSA_ENCRYPTION = oid('1.2.840.113549.1.1.1');
const ED25519 = oid('1.3.101.112');

// AlgorithmIdentifiers: ECDSA omits parameters (RFC 5758 3.2); RSA carries NULL (RFC 4055 5).
const ECDSA_SHA256 = sequence(oid(OID_ECDSA_WITH_SHA256));
const RSA_SHA256 = sequence(oid(OID_SHA256_WITH_RSA), tlv(Tag.NULL));
const VERSION_3 = explicit(0, smallInteger(2));

const EXT = {
  subjectKeyIdentifier: oid('2.5.29.14'),
  keyUsage: oid('2.5.29.15'),
  subjectAltName: oid('2.5.29.17'),
  basicConstraints: oid('2.5.29.19'),
  authorityKeyIdentifier: oid('2.5.29.35'),
  extKeyUsage: oid('2.5.29.37'),
};
const PURPOSES = { serverAuth: oid('1.3.6.1.5.5.7.3.1'), clientAuth: oid('1.3.6.1.5.5.7.3.2') };

/** keyUsage bit numbers (RFC 5280 4.2.1.3). */
export const KeyUsage = { digitalSignature: 0, keyEncipherment: 2, keyCertSign: 5, cRLSign: 6 } as const;

/** The public-key families of certified keys: ECDSA on any curve, RSA, and (pod certificates only) Ed25519. */
export type KeyFamily = 'ec' | 'rsa' | 'ed25519';

/** The public-key family of a DER SubjectPublicKeyInfo, which decides its keyUsage and how it signs. */
export function keyFamilyOf(subjectPublicKeyInfo: Uint8Array): KeyFamily {
  const spki = readElement(subjectPublicKeyInfo, 0);
  const [algorithm] = children(subjectPublicKeyInfo, spki);
  const [algorithmOid] = algorithm ? children(subjectPublicKeyInfo, algorithm) : [];
  const encoded = algorithmOid ? encodingOf(subjectPublicKeyInfo, algorithmOid) : undefined;
  if (encoded && equalBytes(encoded, EC_PUBLIC_KEY)) return 'ec';
  if (encoded && equalBytes(encoded, RSA_ENCRYPTION)) return 'rsa';
  if (encoded && equalBytes(encoded, ED25519)) return 'ed25519';
  throw new Error('unsupported public key algorithm: only ECDSA, RSA and Ed25519 keys are certified here');
}

/** The SHA-256 signature algorithm a key of this SubjectPublicKeyInfo signs with: OID and DER AlgorithmIdentifier. */
export function signatureAlgorithmFor(subjectPublicKeyInfo: Uint8Array): { readonly oid: string; readonly der: Uint8Array } {
  const family = keyFamilyOf(subjectPublicKeyInfo);
  if (family === 'ed25519') throw new Error('a CA key is ECDSA or RSA: an Ed25519 key does not sign certificates here');
  return family === 'ec' ? { oid: OID_ECDSA_WITH_SHA256, der: ECDSA_SHA256 } : { oid: OID_SHA256_WITH_RSA, der: RSA_SHA256 };
}

/**
 * The key identifier of a public key: the leftmost 160 bits of the SHA-256 of the
 * subjectPublicKey BIT STRING's value (RFC 7093 section 2, method 1). Deterministic, so a CA's
 * SKI and its leaves' AKI always agree, whatever signer produced the key.
 */
export function keyIdentifier(subjectPublicKeyInfo: Uint8Array): Uint8Array {
  const spki = readElement(subjectPublicKeyInfo, 0);
  const key = children(subjectPublicKeyInfo, spki)[1];
  if (key?.tag !== Tag.BIT_STRING) throw new Error('SubjectPublicKeyInfo has no subjectPublicKey BIT STRING');
  // Skip the unused-bits octet: the method hashes the key bits only.
  return sha256(contentsOf(subjectPublicKeyInfo, key).subarray(1)).subarray(0, 20);
}

/** DER of the subject Name inside a certificate's TBSCertificate, byte for byte as signed. */
export function subjectNameOf(certificate: CertificateView): Uint8Array {
  const tbs = certificate.tbsCertificate;
  const fields = children(tbs, readElement(tbs, 0));
  const versioned = fields[0]?.tag === 0xa0 ? 1 : 0;
  const subject = fields[versioned + 4];
  if (!subject) throw new Error(`certificate ${certificate.subject} has no subject field`);
  return encodingOf(tbs, subject);
}

const extension = (id: Uint8Array, critical: boolean, value: Uint8Array): Uint8Array =>
  critical ? sequence(id, boolean(true), octetString(value)) : sequence(id, octetString(value));

/** basicConstraints, critical: cA TRUE with a pathLenConstraint unless it is left out, or cA FALSE (an empty SEQUENCE in DER). */
export const basicConstraintsExtension = (ca: { readonly pathLen: number | undefined } | undefined): Uint8Array =>
  extension(EXT.basicConstraints, true, ca ? sequence(boolean(true), ...(ca.pathLen === undefined ? [] : [smallInteger(ca.pathLen)])) : sequence());

/** keyUsage, critical, from bit numbers of {@link KeyUsage}. */
export const keyUsageExtension = (bits: readonly number[]): Uint8Array => extension(EXT.keyUsage, true, namedBits(bits));

/** extendedKeyUsage, non-critical. */
export const extendedKeyUsageExtension = (purposes: readonly (keyof typeof PURPOSES)[]): Uint8Array =>
  extension(EXT.extKeyUsage, false, sequence(...purposes.map((p) => PURPOSES[p])));

/** subjectAltName of dNSName [2] and uniformResourceIdentifier [6] entries; non-critical as the subject is not empty. */
export const subjectAltNameExtension = (dnsNames: readonly string[], uris: readonly string[]): Uint8Array =>
  extension(EXT.subjectAltName, false, sequence(...dnsNames.map((n) => text(0x82, n)), ...uris.map((u) => text(0x86, u))));

/** subjectKeyIdentifier, non-critical. */
export const subjectKeyIdentifierExtension = (id: Uint8Array): Uint8Array => extension(EXT.subjectKeyIdentifier, false, octetString(id));

/** authorityKeyIdentifier with keyIdentifier [0] only, non-critical (RFC 5280 4.2.1.1). */
export const authorityKeyIdentifierExtension = (id: Uint8Array): Uint8Array => extension(EXT.authorityKeyIdentifier, false, sequence(tlv(0x80, id)));

/** The fields of a TBSCertificate, already DER-encoded where they are structures. */
export interface TbsFields {
  /** Unsigned big-endian magnitude of the serial number. */
  readonly serialNumber: Uint8Array;
  /** DER AlgorithmIdentifier, as from {@link signatureAlgorithmFor}. */
  readonly signatureAlgorithm: Uint8Array;
  readonly issuer: Uint8Array;
  readonly notBefore: Instant;
  readonly notAfter: Instant;
  readonly subject: Uint8Array;
  readonly subjectPublicKeyInfo: Uint8Array;
  /** Encoded Extension elements, from the `*Extension` builders. */
  readonly extensions: readonly Uint8Array[];
}

/** DER TBSCertificate (RFC 5280 4.1), version 3. */
export function encodeTbsCertificate(f: TbsFields): Uint8Array {
  return sequence(
    VERSION_3,
    unsignedInteger(f.serialNumber),
    f.signatureAlgorithm,
    f.issuer,
    sequence(time(f.notBefore), time(f.notAfter)),
    f.subject,
    f.subjectPublicKeyInfo,
    explicit(3, sequence(...f.extensions)),
  );
}

/** DER Certificate from a TBSCertificate, its AlgorithmIdentifier and the signature over it. */
export const encodeCertificate = (tbs: Uint8Array, signatureAlgorithm: Uint8Array, signature: Uint8Array): Uint8Array =>
  sequence(tbs, signatureAlgorithm, bitString(signature));
