import { checkTlsMaterial, type TlsMaterial, type TlsMaterialPems } from './material.js';

/** Data of ESO's client Secret (or any `kubernetes.io/tls` Secret with a ca.crt), as read from the API. */
export type TlsSecretData = Readonly<Record<string, string | Uint8Array | undefined>>;

/** Options of {@link clientTlsMaterial}. */
export interface ClientMaterialOptions {
  /** The current time; default Date.now. */
  readonly now?: number;
  /**
   * Require tls.crt to chain to ca.crt; default true (the core signs both sides with one CA). Set
   * false for user-supplied material of a provider we do not manage, whose CA may differ.
   */
  readonly chainToBundle?: boolean;
}

const text = (v: string | Uint8Array | undefined): string =>
  v === undefined ? '' : typeof v === 'string' ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8');

/**
 * Checked client material from PEM texts or a Secret's data (tls.crt, tls.key, ca.crt): the leaf
 * must carry extendedKeyUsage clientAuth and match its key. Throws TlsMaterialError naming the
 * problem.
 */
export function clientTlsMaterial(source: TlsMaterialPems | TlsSecretData, options: ClientMaterialOptions = {}): TlsMaterial {
  const pems: TlsMaterialPems =
    'certificate' in source && 'privateKey' in source
      ? { certificate: text(source.certificate as string), privateKey: text(source.privateKey as string), caBundle: text(source.caBundle as string) }
      : {
          certificate: text((source as TlsSecretData)['tls.crt']),
          privateKey: text((source as TlsSecretData)['tls.key']),
          caBundle: text((source as TlsSecretData)['ca.crt']),
        };
  return checkTlsMaterial(pems, { purpose: 'clientAuth', now: options.now ?? Date.now(), chainToBundle: options.chainToBundle });
}
