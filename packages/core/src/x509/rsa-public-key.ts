import { Tag, children, contentsOf, oidToString, readElement } from './der.js';

const RSA_ENCRYPTION = '1.2.840.113549.1.1.1';

/**
 * The only RSA public exponent accepted anywhere a key is checked: the one every key we generate
 * has (F4), and the one CA/Browser Forum and NIST SP 800-56B implementations expect. A small
 * exponent such as 3 makes signature forgery against lax PKCS#1 v1.5 verifiers practical.
 */
export const RSA_PUBLIC_EXPONENT = 65537n;

/** An RSA public key's size and exponent. */
export interface RsaPublicKey {
  readonly modulusBits: number;
  readonly publicExponent: bigint;
}

/** Magnitude of a DER INTEGER's contents, leading zero octets dropped. */
function magnitude(bytes: Uint8Array): Uint8Array {
  let i = 0;
  while (i < bytes.length && bytes[i] === 0) i++;
  return bytes.subarray(i);
}

/**
 * The modulus size and public exponent of a DER SubjectPublicKeyInfo holding an RSA key
 * (rsaEncryption, RFC 8017 RSAPublicKey); undefined for any other key. Throws on malformed DER.
 */
export function rsaPublicKeyOf(subjectPublicKeyInfo: Uint8Array): RsaPublicKey | undefined {
  const spki = readElement(subjectPublicKeyInfo, 0);
  const [algorithm, key] = children(subjectPublicKeyInfo, spki);
  if (algorithm?.tag !== Tag.SEQUENCE || key?.tag !== Tag.BIT_STRING) throw new Error('not a SubjectPublicKeyInfo');
  const [algorithmOid] = children(subjectPublicKeyInfo, algorithm);
  if (algorithmOid?.tag !== Tag.OID || oidToString(contentsOf(subjectPublicKeyInfo, algorithmOid)) !== RSA_ENCRYPTION) return undefined;
  // The BIT STRING's first octet counts unused bits; the RSAPublicKey follows.
  const der = contentsOf(subjectPublicKeyInfo, key).subarray(1);
  const [modulus, exponent] = children(der, readElement(der, 0));
  if (modulus?.tag !== Tag.INTEGER || exponent?.tag !== Tag.INTEGER) throw new Error('RSAPublicKey without a modulus and an exponent');
  const n = magnitude(contentsOf(der, modulus));
  const e = magnitude(contentsOf(der, exponent));
  const modulusBits = n.length === 0 ? 0 : (n.length - 1) * 8 + (32 - Math.clz32(n[0]!));
  const publicExponent = e.reduce((v, b) => (v << 8n) | BigInt(b), 0n);
  return { modulusBits, publicExponent };
}

/**
 * Why the key of this SubjectPublicKeyInfo is refused for its exponent (`an RSA key with public
 * exponent 3`), or undefined when it is not RSA or its exponent is {@link RSA_PUBLIC_EXPONENT}.
 */
export function rsaExponentRefusal(subjectPublicKeyInfo: Uint8Array): string | undefined {
  const rsa = rsaPublicKeyOf(subjectPublicKeyInfo);
  if (rsa === undefined || rsa.publicExponent === RSA_PUBLIC_EXPONENT) return undefined;
  const shown = rsa.publicExponent < 1n << 64n ? rsa.publicExponent.toString() : `of ${rsa.publicExponent.toString(2).length} bits`;
  return `an RSA key of ${rsa.modulusBits} bits with public exponent ${shown}; only ${RSA_PUBLIC_EXPONENT} is accepted`;
}
