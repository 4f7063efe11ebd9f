import type { SecureContextOptions } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import type { ServedCertificateSource } from './served-certificate-source.js';
import type { TlsMaterial } from './material.js';
import { CertificateWatcher, type CertificateWatcherOptions } from './watcher.js';

/**
 * The lowest TLS version of every handshake we make or serve by default. Both ends of the channel
 * speak TLS 1.3 (grpc-js, and grpc-go inside ESO), so nothing older is offered; only a provider
 * server can be told to accept TLS 1.2 as well (`minTlsVersion`), for an ESO that speaks no 1.3.
 */
export const MIN_TLS_VERSION = 'TLSv1.3';

/** The floors a provider server can be given: TLS 1.3 (default), or TLS 1.2 for an ESO built without 1.3. */
export const MIN_TLS_VERSIONS = ['TLSv1.3', 'TLSv1.2'] as const;

/** A provider server's lowest TLS version; see {@link MIN_TLS_VERSIONS}. */
export type MinTlsVersion = (typeof MIN_TLS_VERSIONS)[number];

/**
 * The only TLS 1.2 suites a server floored at 1.2 accepts: ECDHE key exchange (forward secrecy)
 * with an AEAD cipher, for ECDSA (and Ed25519) and RSA keys. No CBC suite (LUCKY13-style padding
 * oracles), no RSA key transport, no finite-field DHE, no ARIA or CCM. Node reads names without a
 * `TLS_` prefix as TLS 1.2 suites, so the TLS 1.3 suites stay at Node's defaults.
 */
export const TLS12_CIPHERS = [
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

// The protocol options go into every secure context too: setSecureContext builds a context from
// these alone, and a reload must not fall back to Node's defaults.
const protocolOptionsOf = (minVersion: MinTlsVersion): SecureContextOptions => ({ minVersion, ciphers: TLS12_CIPHERS });

function contextOptionsOf(material: TlsMaterial, minVersion: MinTlsVersion): SecureContextOptions {
  return { ca: material.caBundle, cert: material.certificate, key: material.privateKey, ...protocolOptionsOf(minVersion) };
}

/** Options of {@link ReloadingServerCredentials}. */
export interface ReloadingServerCredentialsOptions {
  /** The lowest TLS version accepted; default `TLSv1.3`. `TLSv1.2` also accepts TLS 1.2 with {@link TLS12_CIPHERS} only. */
  readonly minTlsVersion?: MinTlsVersion;
}

/**
 * grpc-js server credentials that follow a {@link CertificateWatcher}: every good swap becomes a
 * new secure context (`setSecureContext`) for new handshakes; established connections keep
 * theirs. Client certificates are always requested and verified against the watcher's ca.crt;
 * OpenSSL's `sslclient` purpose check refuses leaves whose extendedKeyUsage lacks clientAuth.
 *
 * Why not `experimental.createCertificateProviderServerCredentials`: its constructor options are
 * fixed (no TLS version floor), CA and identity arrive as two updates (two contexts per reload),
 * and it starts with no context, so a server bound right after the first load drops connections
 * until a deferred update lands. This class hands grpc-js the current context at bind time and one
 * context per reload, through the documented `updateSecureContextOptions` hook.
 */
export class ReloadingServerCredentials extends grpc.ServerCredentials {
  private unsubscribe: (() => void) | undefined;
  private options: { material: TlsMaterial; context: SecureContextOptions } | undefined;
  private handedOut: TlsMaterial | undefined;

  private readonly minTlsVersion: MinTlsVersion;

  /**
   * @param watcher - The watcher of the mounted certificate folder whose pairs are served.
   * @param options - The lowest TLS version accepted (default TLS 1.3).
   */
  constructor(
    readonly watcher: CertificateWatcher,
    options: ReloadingServerCredentialsOptions = {},
  ) {
    const minTlsVersion = options.minTlsVersion ?? MIN_TLS_VERSION;
    super({ requestCert: true, rejectUnauthorized: true, ...protocolOptionsOf(minTlsVersion) });
    this.minTlsVersion = minTlsVersion;
    this.refresh(watcher.current);
  }

  /** What grpc-js builds the server's first secure context from; null (refuse) only before the first good load. */
  override _getSecureContextOptions(): SecureContextOptions | null {
    this.refresh(this.watcher.current);
    this.handedOut = this.options?.material;
    return this.options?.context ?? null;
  }

  /** grpc-js's hook for a server that starts using these credentials. @internal */
  override _addWatcher(watcher: Parameters<grpc.ServerCredentials['_addWatcher']>[0]): void {
    super._addWatcher(watcher);
    this.unsubscribe ??= this.watcher.onMaterial((m) => this.refresh(m));
    // A load that landed between grpc-js reading the options and subscribing is handed over now.
    if (this.options && this.options.material !== this.handedOut) watcher(this.options.context);
  }

  /** grpc-js's hook for a server that stops using these credentials. @internal */
  override _removeWatcher(watcher: Parameters<grpc.ServerCredentials['_removeWatcher']>[0]): void {
    super._removeWatcher(watcher);
    if (this.getWatcherCount() === 0) {
      this.unsubscribe?.();
      this.unsubscribe = undefined;
    }
  }

  /** grpc-js's identity check between credentials. @internal */
  override _equals(other: grpc.ServerCredentials): boolean {
    return other === this;
  }

  // Never hands grpc-js null after a good load: a refused reload leaves the current context alone.
  private refresh(material: TlsMaterial | undefined): void {
    if (material === undefined || material === this.options?.material) return;
    this.options = { material, context: contextOptionsOf(material, this.minTlsVersion) };
    this.updateSecureContextOptions(this.options.context);
  }
}

/**
 * The hot-reloading certificate source of `startProviderServer`: watches `certDir` (ca.crt,
 * tls.crt, tls.key, as the kubelet mounts the Secret; or with `layout: 'pod-certificate'`,
 * credentials.pem and ca.crt, as it projects a pod certificate and its trust bundle) and serves
 * its newest good pair over TLS 1.3 (or from `minTlsVersion`). Reloads and refused attempts are
 * reported to the listeners (the provider's metrics).
 */
export function reloadingCertificateSource(
  certDir: string,
  options: Omit<CertificateWatcherOptions, 'directory' | 'purpose'> & ReloadingServerCredentialsOptions = {},
): ServedCertificateSource & { readonly watcher: CertificateWatcher } {
  const { minTlsVersion, ...watcherOptions } = options;
  // startProviderServer logs each refusal itself, with its metrics identity: the watcher's own line would repeat it.
  const watcher = new CertificateWatcher({ log: false, ...watcherOptions, directory: certDir, purpose: 'serverAuth' });
  const credentials = new ReloadingServerCredentials(watcher, { minTlsVersion });
  return {
    watcher,
    credentials,
    start: async () => void (await watcher.start()),
    servedCertificate: () => {
      const current = watcher.current;
      return current && { notBefore: current.notBefore, notAfter: current.notAfter, serialNumber: current.serialNumber };
    },
    onReload: (listener) => void watcher.onMaterial((_m, previous) => previous !== undefined && listener()),
    onReloadFailure: (listener) => void watcher.onFailure((f) => listener(Object.assign(new Error(f.message), { reason: f.reason }))),
    close: () => watcher.close(),
  };
}
