import type { KeyAlgorithm } from './policy.js';

/**
 * Source of randomness, injected so that plans and tests are reproducible.
 * Returns `length` fresh random bytes.
 */
export type RandomSource = (length: number) => Uint8Array;

/** A freshly generated key pair. */
export interface GeneratedKey {
  /** The algorithm it was generated for. */
  readonly algorithm: KeyAlgorithm;
  /** DER SubjectPublicKeyInfo of the public key, as it goes into a certificate. */
  readonly subjectPublicKeyInfo: Uint8Array;
  /**
   * What is stored in the Secret's key field: a PKCS#8 PEM private key for the default signer.
   * A KMS-backed signer may store a key reference here instead; only its own `sign` reads it.
   */
  readonly privateKeyPem: string;
}

/**
 * Key generation and signing. Asynchronous so that RSA key generation and remote (KMS) signing
 * never block the event loop of a controller that must keep renewing its lease.
 */
export interface Signer {
  /** Generates a fresh key pair of `algorithm`. */
  generateKey(algorithm: KeyAlgorithm): Promise<GeneratedKey>;
  /**
   * Signs `data` with the key stored as `privateKeyPem`, returning the signature exactly as it is
   * placed in an X.509 signatureValue (DER ECDSA-Sig-Value for ECDSA, PKCS#1 v1.5 for RSA),
   * always over SHA-256 (ecdsa-with-SHA256 or sha256WithRSAEncryption).
   */
  sign(privateKeyPem: string, data: Uint8Array): Promise<Uint8Array>;
}

/**
 * Synchronous signature checks, used while observing and planning. Injected because the core
 * performs no cryptography of its own; the Node implementation lives in `@eso-mtls/core/node`.
 */
export interface SignatureVerifier {
  /**
   * True when `signature` over `data` verifies under the public key `subjectPublicKeyInfo` (DER)
   * with the signature algorithm whose OID is `signatureAlgorithmOid`; false on any failure.
   */
  verify(subjectPublicKeyInfo: Uint8Array, signatureAlgorithmOid: string, data: Uint8Array, signature: Uint8Array): boolean;
  /** DER SubjectPublicKeyInfo of the public half of a stored private key, or undefined if unreadable. */
  publicKeyOf(privateKeyPem: string): Uint8Array | undefined;
}

/** Everything cryptographic the core needs, bundled for injection. */
export interface CryptoBackend {
  /** Generates keys and signs certificates. */
  readonly signer: Signer;
  /** Checks signatures and key pairs of observed certificates. */
  readonly verifier: SignatureVerifier;
  /** Serial numbers and jitter. */
  readonly random: RandomSource;
}
