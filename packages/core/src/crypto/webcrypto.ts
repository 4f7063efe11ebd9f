import type { GeneratedKey, RandomSource, Signer } from './crypto.js';
import { Tag, children, encodingOf, equalBytes, oid, readElement, sequence, unsignedInteger } from '../x509/der.js';
import { PemError, decodePemBlocks, encodePem } from '../x509/pem.js';
import type { KeyAlgorithm } from '../policy/policy.js';

/**
 * The part of a W3C WebCrypto `Crypto` object the signer uses, typed structurally so that Node's
 * `crypto.webcrypto`, a browser's `crypto` and `@peculiar/webcrypto`'s `Crypto` all fit. Keys are
 * opaque `CryptoKey` handles here.
 */
export interface WebCryptoLike {
  /** The SubtleCrypto methods the signer uses. */
  readonly subtle: {
    generateKey(algorithm: WebCryptoAlgorithm, extractable: boolean, keyUsages: WebCryptoKeyUsage[]): Promise<unknown>;
    exportKey(format: 'pkcs8' | 'spki', key: never): Promise<ArrayBuffer>;
    importKey(
      format: 'pkcs8',
      keyData: Uint8Array<ArrayBuffer>,
      algorithm: WebCryptoAlgorithm,
      extractable: boolean,
      keyUsages: WebCryptoKeyUsage[],
    ): Promise<unknown>;
    sign(algorithm: WebCryptoAlgorithm, key: never, data: Uint8Array<ArrayBuffer>): Promise<ArrayBuffer>;
  };
  /** Fills `array` with cryptographically secure random bytes. */
  getRandomValues<T extends Uint8Array>(array: T): T;
}
/** A WebCrypto algorithm dictionary: a name plus that algorithm's parameters. */
export interface WebCryptoAlgorithm {
  /** The algorithm name, e.g. `ECDSA` or `RSASSA-PKCS1-v1_5`. */
  readonly name: string;
}
/** WebCrypto key usages the signer asks for. */
export type WebCryptoKeyUsage = 'sign' | 'verify';

interface Pair {
  readonly privateKey: never;
  readonly publicKey: never;
}

const PKCS8_LABEL = 'PRIVATE KEY';
const EC_PUBLIC_KEY = oid('1.2.840.10045.2.1');
const RSA_ENCRYPTION = oid('1.2.840.113549.1.1.1');
const P256 = oid('1.2.840.10045.3.1.7');
const EC_P256 = { name: 'ECDSA', namedCurve: 'P-256' };
const RSA_PKCS1_SHA256 = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
const ECDSA_SHA256 = { name: 'ECDSA', hash: 'SHA-256' };
const RSA_KEYGEN = (modulusLength: number): WebCryptoAlgorithm => {
  const params = { ...RSA_PKCS1_SHA256, modulusLength, publicExponent: Uint8Array.of(1, 0, 1) };
  return params;
};

function generateParams(algorithm: KeyAlgorithm): WebCryptoAlgorithm {
  switch (algorithm) {
    case 'ECDSA-P256':
      return EC_P256;
    case 'RSA-2048':
      return RSA_KEYGEN(2048);
    case 'RSA-3072':
      return RSA_KEYGEN(3072);
    default:
      throw new Error(`unsupported key algorithm ${JSON.stringify(algorithm)}; use ECDSA-P256, RSA-2048 or RSA-3072`);
  }
}

/** Which WebCrypto algorithm a PKCS#8 PrivateKeyInfo is for, read from its AlgorithmIdentifier. */
function keyKindOf(pkcs8: Uint8Array): 'ec' | 'rsa' {
  const info = children(pkcs8, readElement(pkcs8, 0));
  const algorithm = info[1]?.tag === Tag.SEQUENCE ? children(pkcs8, info[1]) : [];
  const [id, parameters] = algorithm.map((e) => encodingOf(pkcs8, e));
  if (id && equalBytes(id, RSA_ENCRYPTION)) return 'rsa';
  if (id && equalBytes(id, EC_PUBLIC_KEY)) {
    if (parameters && equalBytes(parameters, P256)) return 'ec';
    throw new Error('only P-256 EC keys are supported');
  }
  throw new Error('the PKCS#8 key is neither an RSA nor an EC key');
}

/**
 * WebCrypto returns ECDSA signatures as r || s (IEEE P1363); X.509 wants the DER
 * ECDSA-Sig-Value SEQUENCE { r INTEGER, s INTEGER } (RFC 5480 section 2.2 / RFC 3279 2.2.3).
 */
export function ecdsaSignatureToDer(p1363: Uint8Array): Uint8Array {
  const half = p1363.length / 2;
  return sequence(unsignedInteger(p1363.subarray(0, half)), unsignedInteger(p1363.subarray(half)));
}

/**
 * A {@link Signer} on any WebCrypto implementation, passed in (the core reaches for no global).
 * Keys are stored as PKCS#8 PEM, interchangeable with the node:crypto signer's. WebCrypto is
 * asynchronous by design, so nothing here blocks the event loop beyond the implementation's own work.
 */
export function createWebCryptoSigner(webcrypto: WebCryptoLike, options: { readonly keyCacheSize?: number } = {}): Signer {
  const { subtle } = webcrypto;
  const max = options.keyCacheSize ?? 256;
  // Imported signing keys, bounded: the CA key signs every leaf, and importing costs more than signing.
  const imported = new Map<string, Promise<{ readonly kind: 'ec' | 'rsa'; readonly key: never }>>();

  const importSigningKey = (privateKeyPem: string): Promise<{ readonly kind: 'ec' | 'rsa'; readonly key: never }> => {
    let entry = imported.get(privateKeyPem);
    if (entry === undefined) {
      entry = (async () => {
        const block = decodePemBlocks(privateKeyPem)[0]!;
        if (block.label !== PKCS8_LABEL) throw new PemError(`expected a PKCS#8 "${PKCS8_LABEL}" PEM block, found "${block.label}"`);
        const kind = keyKindOf(block.der);
        const key = await subtle.importKey('pkcs8', block.der, kind === 'ec' ? EC_P256 : RSA_PKCS1_SHA256, false, ['sign']);
        return { kind, key: key as never };
      })();
      entry.catch(() => imported.delete(privateKeyPem));
      imported.set(privateKeyPem, entry);
      if (imported.size > max) imported.delete(imported.keys().next().value as string);
    }
    return entry;
  };

  return {
    async generateKey(algorithm: KeyAlgorithm): Promise<GeneratedKey> {
      const pair = (await subtle.generateKey(generateParams(algorithm), true, ['sign', 'verify'])) as Pair;
      const [pkcs8, spki] = await Promise.all([subtle.exportKey('pkcs8', pair.privateKey), subtle.exportKey('spki', pair.publicKey)]);
      return { algorithm, subjectPublicKeyInfo: new Uint8Array(spki), privateKeyPem: encodePem(PKCS8_LABEL, new Uint8Array(pkcs8)) };
    },
    async sign(privateKeyPem: string, data: Uint8Array): Promise<Uint8Array> {
      const { kind, key } = await importSigningKey(privateKeyPem);
      // WebCrypto refuses views of a SharedArrayBuffer; a copy of a TBSCertificate costs nothing.
      const bytes = new Uint8Array(data);
      if (kind === 'rsa') return new Uint8Array(await subtle.sign(RSA_PKCS1_SHA256, key, bytes));
      return ecdsaSignatureToDer(new Uint8Array(await subtle.sign(ECDSA_SHA256, key, bytes)));
    },
  };
}

/** A {@link RandomSource} on a WebCrypto object's `getRandomValues`. */
export function webCryptoRandom(webcrypto: Pick<WebCryptoLike, 'getRandomValues'>): RandomSource {
  return (length) => webcrypto.getRandomValues(new Uint8Array(length));
}
