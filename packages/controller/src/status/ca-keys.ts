import { CaKeyUnavailableError, type SignatureVerifier } from '@eso-mtls/core';

/**
 * How a key reference to a PKCS#11 token begins (an RFC 7512 URI, as @eso-mtls/pkcs11 writes it
 * under `ca.key-ref`). Status does not depend on that optional package, so it names the scheme here.
 */
const PKCS11_SCHEME = 'pkcs11:';

/** True when a CA Secret's key value is a reference to a key in a PKCS#11 token. */
export const isTokenReference = (stored: string): boolean => stored.startsWith(PKCS11_SCHEME);

/** What status learnt of the CA keys held in a token. */
export interface TokenKeys {
  /** The label of the token status was told of (`--hsm-token-label`); undefined: references are not checked. */
  readonly token: string | undefined;
  /** Why the token could not tell about `reference`, when it could not. */
  unavailable(reference: string): string | undefined;
}

/** What status is told of a token: its label and the verifier of the controller's PKCS#11 backend. */
export interface TokenAccess {
  readonly label: string;
  readonly verifier: SignatureVerifier;
}

/**
 * The verifier status checks keys with. With `token`, a reference is checked in the token, as the
 * controller checks it. Without, a reference is a key that cannot be checked now, which is how the
 * controller treats a token it cannot reach: the reference stays the CA's key, and the CA is not
 * judged unreadable. Every other key is checked by `base`.
 */
export function tokenAwareVerifier(base: SignatureVerifier, token?: TokenAccess): { verifier: SignatureVerifier; keys: TokenKeys } {
  const why = new Map<string, string>();
  const publicKeyOf = (stored: string): Uint8Array | undefined => {
    if (!isTokenReference(stored)) return base.publicKeyOf(stored);
    if (token === undefined) throw new CaKeyUnavailableError('status was given no --hsm-module');
    try {
      const spki = token.verifier.publicKeyOf(stored);
      why.delete(stored);
      return spki;
    } catch (e) {
      if (e instanceof CaKeyUnavailableError) why.set(stored, e.message);
      throw e;
    }
  };
  return {
    verifier: { verify: (spki, oid, data, signature) => base.verify(spki, oid, data, signature), publicKeyOf },
    keys: { token: token?.label, unavailable: (reference) => why.get(reference) },
  };
}
