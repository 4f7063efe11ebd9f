import { Tag, children, contentsOf, oidToString, readElement } from '../x509/der.js';
import { rsaExponentRefusal, rsaPublicKeyOf } from '../x509/rsa-public-key.js';

/**
 * The key types a kubelet generates for a pod certificate (`keyType` of the `podCertificate`
 * projected volume source), named as Kubernetes names them. The signer issues for all six.
 */
export type PodKeyType = 'RSA3072' | 'RSA4096' | 'ECDSAP256' | 'ECDSAP384' | 'ECDSAP521' | 'ED25519';

/** Every {@link PodKeyType}: the types the pod-certificate signer issues for; any other key is Denied. */
export const POD_KEY_TYPES: readonly PodKeyType[] = ['RSA3072', 'RSA4096', 'ECDSAP256', 'ECDSAP384', 'ECDSAP521', 'ED25519'];

const RSA_ENCRYPTION = '1.2.840.113549.1.1.1';
const EC_PUBLIC_KEY = '1.2.840.10045.2.1';
const ED25519 = '1.3.101.112';
const CURVES: Readonly<Record<string, PodKeyType>> = {
  '1.2.840.10045.3.1.7': 'ECDSAP256',
  '1.3.132.0.34': 'ECDSAP384',
  '1.3.132.0.35': 'ECDSAP521',
};
const CURVE_NAMES: Readonly<Record<string, string>> = { '1.3.132.0.33': 'P-224', '1.3.132.0.10': 'secp256k1' };
// Other key algorithms a Denied message names rather than showing their OID alone.
const ALGORITHM_NAMES: Readonly<Record<string, string>> = {
  '1.3.101.110': 'X25519',
  '1.3.101.111': 'X448',
  '1.3.101.113': 'Ed448',
  '1.2.840.113549.1.1.10': 'RSASSA-PSS',
  '1.2.840.10040.4.1': 'DSA',
};

/** A public key's type, or why it is not one the signer issues for (in words, for a Denied message). */
export type PodKeyTypeResult = { readonly ok: true; readonly type: PodKeyType } | { readonly ok: false; readonly detail: string };

/**
 * The {@link PodKeyType} of a DER SubjectPublicKeyInfo: RSA by modulus size (3072 or 4096 bits
 * exactly), ECDSA by named curve, or Ed25519. Anything else, including RSA-2048 (which the
 * Secret-mode policy allows but a kubelet never asks for), is refused with a description.
 */
export function podKeyTypeOf(subjectPublicKeyInfo: Uint8Array): PodKeyTypeResult {
  try {
    const spki = readElement(subjectPublicKeyInfo, 0);
    if (spki.tag !== Tag.SEQUENCE || spki.end !== subjectPublicKeyInfo.length) return refused('not one DER SubjectPublicKeyInfo');
    const [algorithm, key] = children(subjectPublicKeyInfo, spki);
    if (algorithm?.tag !== Tag.SEQUENCE || key?.tag !== Tag.BIT_STRING) return refused('not a SubjectPublicKeyInfo');
    const [algorithmOid, parameters] = children(subjectPublicKeyInfo, algorithm);
    if (algorithmOid?.tag !== Tag.OID) return refused('not a SubjectPublicKeyInfo');
    const oid = oidToString(contentsOf(subjectPublicKeyInfo, algorithmOid));
    if (oid === ED25519) return { ok: true, type: 'ED25519' };
    if (oid === EC_PUBLIC_KEY) {
      const curve = parameters?.tag === Tag.OID ? oidToString(contentsOf(subjectPublicKeyInfo, parameters)) : undefined;
      const type = curve === undefined ? undefined : CURVES[curve];
      if (type !== undefined) return { ok: true, type };
      return refused(`an ECDSA key on curve ${curve === undefined ? '(not a named curve)' : (CURVE_NAMES[curve] ?? curve)}`);
    }
    if (oid === RSA_ENCRYPTION) {
      const bits = rsaPublicKeyOf(subjectPublicKeyInfo)!.modulusBits;
      if (bits !== 3072 && bits !== 4096) return refused(`an RSA key of ${bits} bits`);
      // A kubelet generates 65537 (Go's crypto/rsa); any other exponent is a key made to be weak.
      const weak = rsaExponentRefusal(subjectPublicKeyInfo);
      if (weak !== undefined) return refused(weak);
      return { ok: true, type: bits === 3072 ? 'RSA3072' : 'RSA4096' };
    }
    const name = ALGORITHM_NAMES[oid];
    return refused(name === undefined ? `a key of algorithm ${oid}` : `a key of type ${name} (algorithm ${oid})`);
  } catch {
    return refused('an unreadable public key');
  }
}

function refused(what: string): PodKeyTypeResult {
  return { ok: false, detail: `${what}; this signer issues for ${POD_KEY_TYPES.join(', ')}` };
}
