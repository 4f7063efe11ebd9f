import { randomBytes } from 'node:crypto';
import { CaKeyUnavailableError, type CaSigner, type CertificateView, type GeneratedKey, type KeyAlgorithm } from '@eso-mtls/core';
import type { Pkcs11Token } from './token.js';
import { type KeyReference, formatKeyReference, isPkcs11Uri, parseKeyReference } from './uri.js';

/** What {@link createPkcs11CaSigner} needs besides the token. */
export interface Pkcs11SignerOptions {
  /** CKA_LABEL prefix of the keys it makes, and the only keys it ever destroys. */
  readonly keyLabelPrefix: string;
  /** Keep a retired CA's key when its CA has left every bundle (default false: destroy it). */
  readonly keepRetiredKeys: boolean;
  /** Told each key destroyed, by reference. */
  readonly onKeyDestroyed?: (reference: string) => void;
}

/** A {@link CaSigner} whose keys live in `token`, named in the CA Secret by `pkcs11:` URIs. */
export function createPkcs11CaSigner(token: Pkcs11Token, options: Pkcs11SignerOptions): CaSigner {
  /** The key a reference names, which must be in this signer's token. */
  const keyOf = (reference: string): KeyReference => {
    const ref = parseKeyReference(reference);
    if (ref.token !== token.label) {
      throw new CaKeyUnavailableError(
        `the CA key ${reference} is in token ${JSON.stringify(ref.token)}, but this controller uses token ${JSON.stringify(token.label)}`,
      );
    }
    return ref;
  };
  const referenceTo = (id: Uint8Array, object: string): string => formatKeyReference({ token: token.label, object, id });
  return {
    holds: isPkcs11Uri,

    async generateKey(algorithm: KeyAlgorithm): Promise<GeneratedKey> {
      const id = new Uint8Array(randomBytes(16));
      const label = `${options.keyLabelPrefix}${Buffer.from(id).toString('hex')}`;
      const subjectPublicKeyInfo = await token.generate(algorithm, { id, label });
      return { algorithm, subjectPublicKeyInfo, privateKeyPem: referenceTo(id, label) };
    },

    async sign(reference: string, data: Uint8Array): Promise<Uint8Array> {
      return token.sign(keyOf(reference).id, data);
    },

    publicKeyOf(reference: string): Uint8Array {
      return token.publicKey(keyOf(reference).id);
    },

    async retainKeys(kept: readonly CertificateView[], pending: readonly string[] = []): Promise<void> {
      if (options.keepRetiredKeys) return;
      const wanted = new Set(kept.map((c) => Buffer.from(c.subjectPublicKeyInfo).toString('base64')));
      // A pending intermediate's key has no certificate yet: kept by its reference.
      for (const reference of pending) if (isPkcs11Uri(reference)) wanted.add(Buffer.from(token.publicKey(keyOf(reference).id)).toString('base64'));
      for (const key of token.keys(options.keyLabelPrefix)) {
        let spki: Uint8Array;
        try {
          spki = token.publicKey(key.id);
        } catch (e) {
          // A private key without its public half is not one of ours to judge: kept.
          if (e instanceof CaKeyUnavailableError && /holds no public key/.test(e.message)) continue;
          throw e;
        }
        if (wanted.has(Buffer.from(spki).toString('base64'))) continue;
        await token.destroy(key.id);
        options.onKeyDestroyed?.(referenceTo(key.id, key.label));
      }
    },
  };
}
