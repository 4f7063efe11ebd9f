/**
 * `@eso-mtls/core/node`: the default {@link CryptoBackend}, built on node:crypto. This entry point
 * is the one part of the core allowed to touch Node; the pure core only sees the interfaces.
 *
 * @packageDocumentation
 * @module @eso-mtls/core/node
 */
import { type KeyObject, createPrivateKey, createPublicKey, generateKeyPair, randomBytes, sign as signAsync, verify } from 'node:crypto';
import { publicKeyOfPrivateKey } from './key-check.js';
import { checkKeyGenerationConcurrency, cpuQuotaCores, defaultKeyGenerationConcurrency } from './key-generation-limit.js';
import {
  ConcurrencyLimit,
  type CryptoBackend,
  type GeneratedKey,
  type KeyAlgorithm,
  type RandomSource,
  type SignatureVerifier,
  type Signer,
} from '../index.js';

export { cpuQuotaCores, defaultKeyGenerationConcurrency };
// The interfaces this entry point implements, so its declarations name only what it exports.
export type { CaSigner, CertificateView, CryptoBackend, GeneratedKey, Instant, KeyAlgorithm, RandomSource, SignatureVerifier, Signer } from '../index.js';

/** Options of {@link createNodeCryptoBackend}. */
export interface NodeCryptoBackendOptions {
  /** Parsed private and public keys kept for reuse (the CA key signs every leaf). Default 256. */
  readonly keyCacheSize?: number;
  /**
   * Key generations running at once; more wait their turn. Default: the CPUs the process may use
   * (cores, or the cgroup CPU quota if lower), at most one less than libuv's thread pool
   * (UV_THREADPOOL_SIZE, default 4), at least 1.
   */
  readonly keyGenerationConcurrency?: number;
}

// Signature algorithm OID -> digest; RSA-PSS is not accepted (it needs its parameters read).
const DIGESTS: Readonly<Record<string, string | null>> = {
  '1.2.840.10045.4.3.2': 'sha256',
  '1.2.840.10045.4.3.3': 'sha384',
  '1.2.840.10045.4.3.4': 'sha512',
  '1.2.840.113549.1.1.11': 'sha256',
  '1.2.840.113549.1.1.12': 'sha384',
  '1.2.840.113549.1.1.13': 'sha512',
  '1.3.101.112': null, // Ed25519 signs the message itself
};

/** A small bounded map of parsed keys: parsing a PEM key costs more than an ECDSA signature. */
class KeyCache<K> {
  private readonly entries = new Map<string, K>();
  constructor(private readonly max: number) {}
  get(id: string, load: () => K): K {
    let key = this.entries.get(id);
    if (key === undefined) {
      key = load();
      this.entries.set(id, key);
      if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as string);
    }
    return key;
  }
}

/** Key generation parameters per algorithm; PKCS#8 PEM and SPKI DER come straight out of OpenSSL. */
function keyPairOptions(algorithm: KeyAlgorithm): { type: 'ec' | 'rsa'; options: object } {
  const encoding = { publicKeyEncoding: { type: 'spki', format: 'der' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } };
  switch (algorithm) {
    case 'ECDSA-P256':
      return { type: 'ec', options: { namedCurve: 'P-256', ...encoding } };
    case 'RSA-2048':
      return { type: 'rsa', options: { modulusLength: 2048, publicExponent: 0x10001, ...encoding } };
    case 'RSA-3072':
      return { type: 'rsa', options: { modulusLength: 3072, publicExponent: 0x10001, ...encoding } };
    default:
      throw new Error(`unsupported key algorithm ${JSON.stringify(algorithm)}; use ECDSA-P256, RSA-2048 or RSA-3072`);
  }
}

/** One key pair from OpenSSL, on libuv's thread pool. */
function generateOnThreadPool(algorithm: KeyAlgorithm): Promise<GeneratedKey> {
  return new Promise((resolve, reject) => {
    // Inside the executor, so an unsupported algorithm rejects instead of throwing.
    const { type, options: params } = keyPairOptions(algorithm);
    // The overloads cannot be picked from a union of option shapes; the options are checked above.
    (generateKeyPair as unknown as (t: string, o: object, cb: (e: Error | null, pub: Buffer, priv: string) => void) => void)(
      type,
      params,
      (error, publicKey, privateKey) => {
        if (error) reject(error);
        else resolve({ algorithm, subjectPublicKeyInfo: new Uint8Array(publicKey), privateKeyPem: privateKey });
      },
    );
  });
}

/**
 * A {@link Signer} on node:crypto. Key generation and RSA signing run in libuv's thread pool (the
 * callback APIs), so a controller keeps renewing its lease while RSA keys are made; ECDSA signing
 * takes tens of microseconds and runs inline, where a thread-pool round trip would cost more.
 * Key generations are limited (keyGenerationConcurrency): RSA keygen is CPU-bound, and a mass
 * issuance that fills every pool thread starves the event loop of CPU and queues RSA signatures
 * behind every pending key.
 */
export function createNodeSigner(options: NodeCryptoBackendOptions = {}): Signer {
  const keys = new KeyCache<KeyObject>(options.keyCacheSize ?? 256);
  const keyGenerations = new ConcurrencyLimit(
    options.keyGenerationConcurrency === undefined ? defaultKeyGenerationConcurrency() : checkKeyGenerationConcurrency(options.keyGenerationConcurrency),
  );
  return {
    generateKey(algorithm: KeyAlgorithm): Promise<GeneratedKey> {
      return keyGenerations.run(() => generateOnThreadPool(algorithm));
    },
    sign(privateKeyPem: string, data: Uint8Array): Promise<Uint8Array> {
      let key: KeyObject;
      try {
        key = keys.get(privateKeyPem, () => createPrivateKey(privateKeyPem));
      } catch (e) {
        return Promise.reject(new Error(`cannot read the signing key: ${(e as Error).message}`));
      }
      if (key.asymmetricKeyType === 'ec') {
        try {
          return Promise.resolve(new Uint8Array(signInline('sha256', data, key)));
        } catch (e) {
          return Promise.reject(e);
        }
      }
      return new Promise((resolve, reject) => {
        signAsync('sha256', data, key, (error, signature) => (error ? reject(error) : resolve(new Uint8Array(signature))));
      });
    },
  };
}

const signInline = (digest: string, data: Uint8Array, key: KeyObject): Buffer =>
  (signAsync as (d: string, data: Uint8Array, k: KeyObject) => Buffer)(digest, data, key);

/** A synchronous {@link SignatureVerifier} on node:crypto. */
export function createNodeVerifier(options: NodeCryptoBackendOptions = {}): SignatureVerifier {
  const publicKeys = new KeyCache<KeyObject>(options.keyCacheSize ?? 256);
  return {
    verify(subjectPublicKeyInfo, signatureAlgorithmOid, data, signature): boolean {
      const digest = DIGESTS[signatureAlgorithmOid];
      if (digest === undefined) return false;
      try {
        const id = Buffer.from(subjectPublicKeyInfo).toString('base64');
        const key = publicKeys.get(id, () => createPublicKey({ key: Buffer.from(subjectPublicKeyInfo), format: 'der', type: 'spki' }));
        return verify(digest, data, key, signature);
      } catch {
        return false;
      }
    },
    publicKeyOf: publicKeyOfPrivateKey,
  };
}

/** Cryptographically secure random bytes from node:crypto. */
export const nodeRandom: RandomSource = (length) => new Uint8Array(randomBytes(length));

/** The default {@link CryptoBackend}: node:crypto signer (asynchronous, non-blocking), verifier and randomness. */
export function createNodeCryptoBackend(options: NodeCryptoBackendOptions = {}): CryptoBackend {
  return { signer: createNodeSigner(options), verifier: createNodeVerifier(options), random: nodeRandom };
}
