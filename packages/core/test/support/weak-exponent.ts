import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';
import type { CryptoBackend, KeyAlgorithm } from '@eso-mtls/core';

/**
 * `crypto` whose signer generates RSA keys with public exponent `publicExponent` (OpenSSL, as
 * `openssl genpkey -pkeyopt rsa_keygen_pubexp:3` would): what an adopted CA, a key written by
 * hand or a token key made elsewhere may hold. Signing and verifying are `crypto`'s own.
 */
export function weakExponentCrypto(crypto: CryptoBackend, publicExponent: number): CryptoBackend {
  const generateKey = async (algorithm: KeyAlgorithm) => {
    const modulusLength = algorithm === 'RSA-2048' ? 2048 : 3072;
    const { publicKey, privateKey } = await promisify(generateKeyPair)('rsa', {
      modulusLength,
      publicExponent,
      publicKeyEncoding: { type: 'spki', format: 'der' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    return { algorithm, subjectPublicKeyInfo: new Uint8Array(publicKey), privateKeyPem: privateKey };
  };
  return { ...crypto, signer: { generateKey, sign: (key, data) => crypto.signer.sign(key, data) } };
}
