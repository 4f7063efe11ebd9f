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
import { Tag, children, contentsOf, encodingOf, equalBytes, oid, readElement } from '../der.js';
import { decodePemBlocks } from '../pem.js';

const EC_PUBLIC_KEY = oid('1.2.840.10045.2.1');
const P256 = oid('1.2.840.10045.3.1.7');
// SubjectPublicKeyInfo of a P-256 key up to the uncompressed point (RFC 5480).
const P256_SPKI_PREFIX = Buffer.from('3059301306072a8648ce3d020106082a8648ce3d030107034200', 'hex');
const PROBE = Buffer.from('eso-mtls key consistency probe');

/** The private scalar of a P-256 key in PKCS#8 or SEC1 DER, or undefined for any other key. */
function p256Scalar(label: string, der: Uint8Array): Uint8Array | undefined {
  let ecPrivateKey: Uint8Array = der;
  if (label === 'PRIVATE KEY') {
    const [, algorithm, privateKey] = children(der, readElement(der, 0));
    if (algorithm?.tag !== Tag.SEQUENCE || privateKey?.tag !== Tag.OCTET_STRING) return undefined;
    const [id, curve] = children(der, algorithm);
    if (!id || !curve || !equalBytes(encodingOf(der, id), EC_PUBLIC_KEY) || !equalBytes(encodingOf(der, curve), P256)) return undefined;
    ecPrivateKey = contentsOf(der, privateKey);
  } else if (label !== 'EC PRIVATE KEY') {
    return undefined;
  }
  const fields = children(ecPrivateKey, readElement(ecPrivateKey, 0));
  const scalar = fields[1];
  if (scalar?.tag !== Tag.OCTET_STRING) return undefined;
  // A SEC1 key names its curve in [0]; a PKCS#8 one names it in the AlgorithmIdentifier instead.
  const parameters = fields.find((f) => f.tag === 0xa0);
  if (label === 'EC PRIVATE KEY') {
    const named = parameters ? children(ecPrivateKey, parameters)[0] : undefined;
    if (!named || !equalBytes(encodingOf(ecPrivateKey, named), P256)) return undefined;
  }
  return contentsOf(ecPrivateKey, scalar);
}

/** DER SubjectPublicKeyInfo of the public half of `privateKeyPem`, or undefined if it is unreadable or inconsistent. */
export function publicKeyOfPrivateKey(privateKeyPem: string): Uint8Array | undefined {
  try {
    const blocks = decodePemBlocks(privateKeyPem);
    if (blocks.length !== 1) return undefined;
    const { label, der } = blocks[0]!;
    const scalar = p256Scalar(label, der);
    if (scalar) {
      const ecdh = createECDH('prime256v1');
      ecdh.setPrivateKey(Buffer.from(scalar));
      return new Uint8Array(Buffer.concat([P256_SPKI_PREFIX, ecdh.getPublicKey()]));
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
