// A provider server as a developer starts it, on loopback, with the hot-reloading certificate
// source over a folder written the kubelet's way.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  reloadingCertificateSource,
  startProviderServer,
  type CertificateLayout,
  type CertificateWatcher,
  type ProviderServer,
  type ProviderServerOptions,
} from '@eso-mtls/grpc';
import { writeAtomically } from './demo.js';
import { credentialsPem, podCertificateFiles } from './pod-certificates.js';
import type { KeyPair } from './pki.js';

/** A running provider, the folder it watches, and the watcher behind its credentials. */
export interface ReloadingProvider {
  readonly server: ProviderServer;
  readonly certDir: string;
  readonly port: number;
  readonly watcher: CertificateWatcher;
  /** Writes a new version of the mounted folder (kubelet-style) in its layout and resolves once the watcher judged it. */
  publish(ca: string, leaf: KeyPair): Promise<void>;
  /** Writes `files` as the folder's new version (kubelet-style) and resolves once the watcher judged it. */
  publishFiles(files: Readonly<Record<string, string>>): Promise<void>;
  stop(): Promise<void>;
}

/** The three keys of a provider's mounted Secret. */
export const secretFiles = (ca: string, leaf: KeyPair) => ({ 'ca.crt': ca, 'tls.crt': leaf.cert, 'tls.key': leaf.key });

/** The files of `leaf` and the client-certificate bundle `ca` in `layout`. */
const filesOf = (layout: CertificateLayout | undefined, ca: string, leaf: KeyPair) =>
  layout === 'pod-certificate' ? podCertificateFiles(credentialsPem(leaf), ca) : secretFiles(ca, leaf);

/** Starts `options.implementation` on 127.0.0.1 serving `leaf` with `ca` as the client-certificate bundle, in `options.certLayout`. */
export async function startReloadingProvider(
  ca: string,
  leaf: KeyPair,
  options: Omit<ProviderServerOptions, 'certDir'>,
  sourceOptions: Parameters<typeof reloadingCertificateSource>[1] = {},
): Promise<ReloadingProvider> {
  const certDir = mkdtempSync(join(tmpdir(), 'provider-certs-'));
  await writeAtomically(certDir, filesOf(options.certLayout, ca, leaf));
  const provider = await startProviderOn(certDir, options, sourceOptions);
  return {
    ...provider,
    stop: async () => {
      await provider.stop();
      rmSync(certDir, { recursive: true, force: true });
    },
  };
}

/** Starts `options.implementation` on 127.0.0.1 over the folder `certDir`, already written in `options.certLayout`. */
export async function startProviderOn(
  certDir: string,
  options: Omit<ProviderServerOptions, 'certDir'>,
  sourceOptions: Parameters<typeof reloadingCertificateSource>[1] = {},
): Promise<ReloadingProvider> {
  let watcher: CertificateWatcher | undefined;
  const server = await startProviderServer({ host: '127.0.0.1', port: 0, healthPort: 0, ...options, certDir }, (dir, served) => {
    const source = reloadingCertificateSource(dir, { ...sourceOptions, ...served });
    watcher = source.watcher;
    return source;
  });
  const w = watcher!;
  const publishFiles = async (files: Readonly<Record<string, string>>): Promise<void> => {
    const judged = new Promise<void>((resolve) => {
      const offs = [w.onMaterial(() => (offs.forEach((f) => f()), resolve())), w.onFailure(() => (offs.forEach((f) => f()), resolve()))];
    });
    await writeAtomically(certDir, files);
    await judged;
  };
  return {
    server,
    certDir,
    port: server.port,
    watcher: w,
    publish: (bundle, next) => publishFiles(filesOf(options.certLayout, bundle, next)),
    publishFiles,
    stop: () => server.close(),
  };
}
