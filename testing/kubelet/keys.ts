// The kubelet's side of a pod certificate's key: a fresh key of the projection's keyType, and the
// stub PKCS#10 request that proves possession of it (subject empty, as the kubelet makes it).
import { type KeyObject, generateKeyPair, webcrypto } from 'node:crypto';
import { promisify } from 'node:util';
import { Pkcs10CertificateRequestGenerator } from '@peculiar/x509';

/** The key types a `podCertificate` projection may ask for (the apiserver refuses any other). */
export const KUBELET_KEY_TYPES = ['RSA3072', 'RSA4096', 'ECDSAP256', 'ECDSAP384', 'ECDSAP521', 'ED25519'] as const;

/** One of {@link KUBELET_KEY_TYPES}. */
export type KubeletKeyType = (typeof KUBELET_KEY_TYPES)[number];

/** A key the kubelet generated for one request. */
export interface KubeletKey {
  readonly keyType: KubeletKeyType;
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  /** The private key as the credential bundle holds it: one PKCS#8 `PRIVATE KEY` PEM block. */
  readonly pkcs8Pem: string;
}

type ImportAlgorithm = Parameters<typeof webcrypto.subtle.importKey>[2];
type SigningAlgorithm = Parameters<typeof Pkcs10CertificateRequestGenerator.create>[0]['signingAlgorithm'];

/** How node:crypto makes each key, how WebCrypto imports it, and what signs the stub request (Go's choice per key). */
const ALGORITHMS: Record<
  KubeletKeyType,
  { generate: () => Promise<{ privateKey: KeyObject; publicKey: KeyObject }>; import: ImportAlgorithm; sign: SigningAlgorithm }
> = {
  RSA3072: rsa(3072),
  RSA4096: rsa(4096),
  ECDSAP256: ecdsa('P-256', 'SHA-256'),
  ECDSAP384: ecdsa('P-384', 'SHA-384'),
  ECDSAP521: ecdsa('P-521', 'SHA-512'),
  ED25519: {
    generate: () => promisify(generateKeyPair)('ed25519'),
    import: { name: 'Ed25519' },
    sign: { name: 'Ed25519' },
  },
};

function rsa(modulusLength: number): (typeof ALGORITHMS)[KubeletKeyType] {
  const algorithm = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  return { generate: () => promisify(generateKeyPair)('rsa', { modulusLength, publicExponent: 65537 }), import: algorithm, sign: algorithm };
}

function ecdsa(namedCurve: string, hash: string): (typeof ALGORITHMS)[KubeletKeyType] {
  return { generate: () => promisify(generateKeyPair)('ec', { namedCurve }), import: { name: 'ECDSA', namedCurve }, sign: { name: 'ECDSA', hash } };
}

/** A fresh key of `keyType` (node:crypto; RSA off the event loop). */
export async function generateKubeletKey(keyType: KubeletKeyType): Promise<KubeletKey> {
  const algorithm = ALGORITHMS[keyType];
  if (algorithm === undefined) throw new Error(`unknown key type ${JSON.stringify(keyType)}; the kubelet's are ${KUBELET_KEY_TYPES.join(', ')}`);
  const { privateKey, publicKey } = await algorithm.generate();
  return { keyType, privateKey, publicKey, pkcs8Pem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
}

/**
 * An RSA key of `keyType`'s size with another public exponent than the 65537 a kubelet uses: a
 * key made to be weak, which the apiserver accepts and the signer must refuse.
 */
export async function weakExponentRsaKey(keyType: 'RSA3072' | 'RSA4096', publicExponent: number): Promise<KubeletKey> {
  const modulusLength = keyType === 'RSA3072' ? 3072 : 4096;
  const { privateKey, publicKey } = await promisify(generateKeyPair)('rsa', { modulusLength, publicExponent });
  return { keyType, privateKey, publicKey, pkcs8Pem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
}

/** The DER of a PKCS#10 request with an empty subject, no attributes, self-signed with `key`. */
export async function stubPkcs10Request(key: KubeletKey): Promise<Uint8Array> {
  const algorithm = ALGORITHMS[key.keyType];
  const keys = {
    privateKey: await webcrypto.subtle.importKey('pkcs8', key.privateKey.export({ type: 'pkcs8', format: 'der' }), algorithm.import, false, ['sign']),
    publicKey: await webcrypto.subtle.importKey('spki', key.publicKey.export({ type: 'spki', format: 'der' }), algorithm.import, true, ['verify']),
  };
  const request = await Pkcs10CertificateRequestGenerator.create(
    { keys, signingAlgorithm: algorithm.sign },
    webcrypto as Parameters<typeof Pkcs10CertificateRequestGenerator.create>[1],
  );
  return new Uint8Array(request.rawData);
}
