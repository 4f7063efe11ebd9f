import type { SecureContextOptions } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import type { ServedCertificateSource } from '../server/certificate-source.js';
import type { TlsMaterial } from './material.js';
import { CertificateWatcher, type CertificateWatcherOptions } from './watcher.js';

/** TLS 1.2 is the floor (1.3 is negotiated whenever the peer offers it). Not configurable. */
export const MIN_TLS_VERSION = 'TLSv1.2';

function contextOptionsOf(material: TlsMaterial): SecureContextOptions {
  return { ca: material.caBundle, cert: material.certificate, key: material.privateKey, minVersion: MIN_TLS_VERSION };
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

  /** @param watcher - The watcher of the mounted certificate folder whose pairs are served. */
  constructor(readonly watcher: CertificateWatcher) {
    super({ requestCert: true, rejectUnauthorized: true, minVersion: MIN_TLS_VERSION });
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
    this.options = { material, context: contextOptionsOf(material) };
    this.updateSecureContextOptions(this.options.context);
  }
}

/**
 * The hot-reloading certificate source of `startProviderServer`: watches `certDir` (ca.crt,
 * tls.crt, tls.key, as the kubelet mounts the Secret; or with `layout: 'pod-certificate'`,
 * credentials.pem and ca.crt, as it projects a pod certificate and its trust bundle) and serves
 * its newest good pair. Reloads and refused attempts are reported to the listeners (the
 * provider's metrics).
 */
export function reloadingCertificateSource(
  certDir: string,
  options: Omit<CertificateWatcherOptions, 'directory' | 'purpose'> = {},
): ServedCertificateSource & { readonly watcher: CertificateWatcher } {
  // startProviderServer logs each refusal itself, with its metrics identity: the watcher's own line would repeat it.
  const watcher = new CertificateWatcher({ log: false, ...options, directory: certDir, purpose: 'serverAuth' });
  const credentials = new ReloadingServerCredentials(watcher);
  return {
    watcher,
    credentials,
    start: async () => void (await watcher.start()),
    servedCertificate: () => (watcher.current ? { notAfter: watcher.current.notAfter, serialNumber: watcher.current.serialNumber } : undefined),
    onReload: (listener) => void watcher.onMaterial((_m, previous) => previous !== undefined && listener()),
    onReloadFailure: (listener) => void watcher.onFailure((f) => listener(Object.assign(new Error(f.message), { reason: f.reason }))),
    close: () => watcher.close(),
  };
}
