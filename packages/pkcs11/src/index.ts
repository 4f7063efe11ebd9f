/**
 * `@eso-mtls/pkcs11`: the CA key in a PKCS#11 token (an HSM, or SoftHSM2). CA keys are generated
 * in the token, sign there and never leave it; the CA Secret holds `pkcs11:` URIs (RFC 7512)
 * under `ca.key-ref` and `next.key-ref`. Leaf keys stay in software: they go into provider Secrets.
 * Built on pkcs11js, an optional native dependency: the controller loads this package only when
 * configured for it.
 *
 * @packageDocumentation
 * @module @eso-mtls/pkcs11
 */
import type { CaSigner, CryptoBackend } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { loadBinding } from './binding.js';
import type { ReopenBackoffOptions } from './reopen.js';
import { createPkcs11CaSigner } from './signer.js';
import { Pkcs11Token } from './token.js';

/** Options of {@link createPkcs11CryptoBackend}. */
export interface Pkcs11Options {
  /** Path of the PKCS#11 module, e.g. /usr/lib/softhsm/libsofthsm2.so. */
  readonly modulePath: string;
  /** CKA_LABEL of the token holding the CA keys. */
  readonly tokenLabel: string;
  /** Returns the user PIN; called at each login, so a PIN file can be corrected without a restart. */
  readonly pin: () => string;
  /**
   * CKA_LABEL prefix of the CA keys (default `eso-mtls-ca-`). Only keys with this prefix are ever
   * destroyed: give each controller sharing a token its own.
   */
  readonly keyLabelPrefix?: string;
  /** Keep a retired CA's key in the token once its CA has left every bundle (default false: destroyed). */
  readonly keepRetiredKeys?: boolean;
  /** Leaf keys, signatures with software keys, verification and randomness (default: node:crypto's). */
  readonly base?: CryptoBackend;
  /** Told each retired key destroyed, by its `pkcs11:` URI (for a log line). */
  readonly onKeyDestroyed?: (reference: string) => void;
  /**
   * Timing of the reopen after a failure: the first at the next use, then at most one per delay,
   * 1 s doubling to 5 s while the token stays away (the defaults).
   */
  readonly reopenBackoff?: ReopenBackoffOptions;
  /** Told once when the token works again after a failure (for a log line). */
  readonly onRecovered?: () => void;
}

export type { ReopenBackoffOptions } from './reopen.js';

/** A {@link CryptoBackend} whose CA keys live in a PKCS#11 token. */
export interface Pkcs11CryptoBackend extends CryptoBackend {
  /** The token's signer. */
  readonly caSigner: CaSigner;
  /** Closes the token's sessions and finalises the module. */
  close(): void;
}

/** Default CKA_LABEL prefix of the CA keys. */
export const DEFAULT_KEY_LABEL_PREFIX = 'eso-mtls-ca-';

/**
 * The software backend with a PKCS#11 {@link CaSigner}: the token is opened on first use; after
 * any failure its sessions are closed and the module finalised and initialised again before the
 * next use, with backoff (see {@link Pkcs11Options.reopenBackoff}), so a token that comes back is
 * used again without a restart. Every failure is a CaKeyUnavailableError naming the token. Its
 * verifier answers key checks of `pkcs11:` references from the token. Throws at once when the
 * pkcs11js binding cannot be loaded.
 */
export function createPkcs11CryptoBackend(options: Pkcs11Options): Pkcs11CryptoBackend {
  const base = options.base ?? createNodeCryptoBackend();
  // The binding is loaded now, so that a missing native build stops a controller at start-up.
  const token = new Pkcs11Token({
    modulePath: options.modulePath,
    tokenLabel: options.tokenLabel,
    pin: options.pin,
    binding: loadBinding(),
    ...(options.reopenBackoff ? { reopenBackoff: options.reopenBackoff } : {}),
    ...(options.onRecovered ? { onRecovered: options.onRecovered } : {}),
  });
  const caSigner = createPkcs11CaSigner(token, {
    keyLabelPrefix: options.keyLabelPrefix ?? DEFAULT_KEY_LABEL_PREFIX,
    keepRetiredKeys: options.keepRetiredKeys ?? false,
    onKeyDestroyed: options.onKeyDestroyed,
  });
  return {
    signer: base.signer,
    caSigner,
    verifier: {
      verify: (spki, oid, data, signature) => base.verifier.verify(spki, oid, data, signature),
      publicKeyOf: (stored) => (caSigner.holds(stored) ? caSigner.publicKeyOf(stored) : base.verifier.publicKeyOf(stored)),
    },
    random: base.random,
    close: () => token.close(),
  };
}
