/**
 * The public half of a stored private key, derived from the private key itself.
 *
 * `createPublicKey(createPrivateKey(pem))` is not enough: for EC keys OpenSSL takes the public
 * point stored next to the private scalar on trust, so a key whose scalar was corrupted still
 * "matches" its certificate; it is also slow (~0.4 ms per key with OpenSSL 3.0). P-256 keys are
 * therefore read here and their public point recomputed from the scalar (~30 us); RSA keys are
 * proven consistent by signing and verifying a probe message. Other keys (never issued by us) take
 * the plain OpenSSL path.
 */
import { createECDH, createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { type DerElement, Tag, bitString, children, contentsOf, encodingOf, equalBytes, oid, readElement, sequence } from '../x509/der.js';
import { decodePemBlocks } from '../x509/pem.js';

const EC_PUBLIC_KEY = oid('1.2.840.10045.2.1');
const P256 = oid('1.2.840.10045.3.1.7');
// SubjectPublicKeyInfo of a P-256 key up to the uncompressed point (RFC 5480).
const P256_SPKI_PREFIX = Buffer.from('3059301306072a8648ce3d020106082a8648ce3d030107034200', 'hex');
const PROBE = Buffer.from('eso-mtls key consistency probe');

/** The SEQUENCE filling `der` exactly: trailing bytes make a key OpenSSL refuses to load. */
function whole(der: Uint8Array): DerElement | undefined {
  const e = readElement(der, 0);
  return e.tag === Tag.SEQUENCE && e.end === der.length ? e : undefined;
}

/** True when `e` is an INTEGER holding exactly `value` (a small version number). */
const isVersion = (der: Uint8Array, e: DerElement | undefined, ...values: number[]): boolean =>
  e?.tag === Tag.INTEGER && e.end - e.contentStart === 1 && values.includes(der[e.contentStart]!);

/** True when the tags of `optional` are some of `allowed`, in that order, each at most once. */
function optionalFields(optional: readonly DerElement[], allowed: readonly number[]): boolean {
  let next = 0;
  for (const f of optional) {
    const at = allowed.indexOf(f.tag, next);
    if (at < 0) return false;
    next = at + 1;
  }
  return true;
}

/** What a P-256 key in PKCS#8 or SEC1 DER holds: its scalar and, if stored, its public point. */
interface P256Key {
  readonly scalar: Uint8Array;
  readonly storedPoint: Uint8Array | undefined;
}

/**
 * The P-256 key in `der` (PEM label `label`), or undefined for any other key and for one whose
 * structure RFC 5208/5958 (PKCS#8) or RFC 5915 (ECPrivateKey) does not allow: OpenSSL would not
 * load it, so it must not pass for a key that works.
 */
function p256Key(label: string, der: Uint8Array): P256Key | undefined {
  let ecPrivateKey: Uint8Array = der;
  if (label === 'PRIVATE KEY') {
    const outer = whole(der);
    if (!outer) return undefined;
    const [version, algorithm, privateKey, ...optional] = children(der, outer);
    if (!isVersion(der, version, 0, 1) || algorithm?.tag !== Tag.SEQUENCE || privateKey?.tag !== Tag.OCTET_STRING) return undefined;
    if (!optionalFields(optional, [0xa0, 0x81])) return undefined;
    const [id, curve, extra] = children(der, algorithm);
    if (!id || !curve || extra || !equalBytes(encodingOf(der, id), EC_PUBLIC_KEY) || !equalBytes(encodingOf(der, curve), P256)) return undefined;
    ecPrivateKey = contentsOf(der, privateKey);
  } else if (label !== 'EC PRIVATE KEY') {
    return undefined;
  }
  const inner = whole(ecPrivateKey);
  if (!inner) return undefined;
  const [version, scalar, ...optional] = children(ecPrivateKey, inner);
  if (!isVersion(ecPrivateKey, version, 1) || scalar?.tag !== Tag.OCTET_STRING || !optionalFields(optional, [0xa0, 0xa1])) return undefined;
  // A SEC1 key names its curve in [0]; a PKCS#8 one in the AlgorithmIdentifier, and may repeat it here.
  const parameters = optional.find((f) => f.tag === 0xa0);
  const named = parameters ? children(ecPrivateKey, parameters) : [];
  if ((label === 'EC PRIVATE KEY' || parameters) && (named.length !== 1 || !equalBytes(encodingOf(ecPrivateKey, named[0]!), P256))) return undefined;
  // [1] publicKey: a BIT STRING without unused bits around the point.
  const publicKey = optional.find((f) => f.tag === 0xa1);
  const [bits, extra] = publicKey ? children(ecPrivateKey, publicKey) : [];
  if (publicKey && (bits?.tag !== Tag.BIT_STRING || extra || ecPrivateKey[bits.contentStart] !== 0)) return undefined;
  return { scalar: contentsOf(ecPrivateKey, scalar), storedPoint: bits && contentsOf(ecPrivateKey, bits).subarray(1) };
}

/** True when OpenSSL reads `point` as a P-256 public key (well encoded, on the curve). */
function isP256Point(point: Uint8Array): boolean {
  try {
    createPublicKey({ key: Buffer.from(sequence(sequence(EC_PUBLIC_KEY, P256), bitString(point))), format: 'der', type: 'spki' });
    return true;
  } catch {
    return false;
  }
}

/** DER SubjectPublicKeyInfo of the public half of `privateKeyPem`, or undefined if it is unreadable or inconsistent. */
export function publicKeyOfPrivateKey(privateKeyPem: string): Uint8Array | undefined {
  try {
    const blocks = decodePemBlocks(privateKeyPem);
    if (blocks.length !== 1) return undefined;
    const { label, der } = blocks[0]!;
    const p256 = p256Key(label, der);
    if (p256) {
      const ecdh = createECDH('prime256v1');
      ecdh.setPrivateKey(Buffer.from(p256.scalar));
      const point = ecdh.getPublicKey();
      // OpenSSL refuses to load a key whose stored point it cannot read. A readable point other
      // than the scalar's is left to the derived point (a corrupted scalar then mismatches).
      if (p256.storedPoint && !equalBytes(p256.storedPoint, point) && !isP256Point(p256.storedPoint)) return undefined;
      return new Uint8Array(Buffer.concat([P256_SPKI_PREFIX, point]));
    }
    if (!label.endsWith('PRIVATE KEY')) return undefined;
    const privateKey = createPrivateKey(privateKeyPem);
    const publicKey = createPublicKey(privateKey);
    if (privateKey.asymmetricKeyType === 'rsa' && !verify('sha256', PROBE, publicKey, sign('sha256', PROBE, privateKey))) return undefined;
    return new Uint8Array(publicKey.export({ type: 'spki', format: 'der' }));
  } catch {
    return undefined;
  }
}
