/**
 * Conversions between what a PKCS#11 token returns and what X.509 carries: public keys to DER
 * SubjectPublicKeyInfo (through node:crypto's JWK import), and raw ECDSA signatures (r || s) to
 * DER ECDSA-Sig-Value.
 */
import { createPublicKey } from 'node:crypto';

const base64url = (b: Uint8Array): string => Buffer.from(b).toString('base64url');

/** SPKI of a P-256 key from CKA_EC_POINT: a DER OCTET STRING around the uncompressed point. */
export function p256Spki(ecPoint: Uint8Array): Uint8Array {
  // 04 41 04 x y: OCTET STRING of 65 bytes, uncompressed point.
  const point = ecPoint.length === 67 && ecPoint[0] === 0x04 && ecPoint[1] === 0x41 ? ecPoint.subarray(2) : ecPoint;
  if (point.length !== 65 || point[0] !== 0x04) throw new Error(`CKA_EC_POINT is not an uncompressed P-256 point (${ecPoint.length} bytes)`);
  const jwk = { kty: 'EC', crv: 'P-256', x: base64url(point.subarray(1, 33)), y: base64url(point.subarray(33)) };
  return new Uint8Array(createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'der' }));
}

/** SPKI of an RSA key from CKA_MODULUS and CKA_PUBLIC_EXPONENT (big-endian). */
export function rsaSpki(modulus: Uint8Array, exponent: Uint8Array): Uint8Array {
  const jwk = { kty: 'RSA', n: base64url(stripZeros(modulus)), e: base64url(stripZeros(exponent)) };
  return new Uint8Array(createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'der' }));
}

function stripZeros(b: Uint8Array): Uint8Array {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0) i++;
  return b.subarray(i);
}

/** DER ECDSA-Sig-Value (RFC 3279) of a CKM_ECDSA signature, r || s of equal length. */
export function ecdsaDerSignature(raw: Uint8Array): Uint8Array {
  if (raw.length === 0 || raw.length % 2 !== 0) throw new Error(`an ECDSA signature of ${raw.length} bytes is not r || s`);
  const half = raw.length / 2;
  const integer = (b: Uint8Array): Uint8Array => {
    const v = stripZeros(b);
    const body = v[0]! & 0x80 ? Uint8Array.of(0, ...v) : v;
    return Uint8Array.of(0x02, body.length, ...body);
  };
  const r = integer(raw.subarray(0, half));
  const s = integer(raw.subarray(half));
  // P-256 (and P-384) sequences stay under 128 bytes: a one-byte length.
  return Uint8Array.of(0x30, r.length + s.length, ...r, ...s);
}
