import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';

/**
 * Where the provider server's TLS identity comes from: credentials for grpc-js plus what the
 * health port and metrics report about the certificate being served.
 */
export interface ServedCertificateSource {
  readonly credentials: grpc.ServerCredentials;
  /** Resolves once a good certificate is loaded. */
  start(): Promise<void>;
  /** The certificate served now; undefined before the first good load. */
  servedCertificate(): { readonly notAfter: number } | undefined;
  /** Listeners for every swapped-in pair and every rejected attempt (metrics). */
  onReload(listener: () => void): void;
  onReloadFailure(listener: (error: unknown) => void): void;
  close(): void;
}

function readCertFile(dir: string, name: string): Buffer {
  try {
    return readFileSync(join(dir, name));
  } catch (e) {
    throw new Error(`cannot read ${join(dir, name)}: ${(e as Error).message}; mount the Secret external-secrets-provider-tls (ca.crt, tls.crt, tls.key) at ${dir}`, { cause: e });
  }
}

/** Loads ca.crt, tls.crt and tls.key once: no hot reload. */
export function staticCertificateSource(certDir: string): ServedCertificateSource {
  const ca = readCertFile(certDir, 'ca.crt');
  const cert = readCertFile(certDir, 'tls.crt');
  const key = readCertFile(certDir, 'tls.key');
  const notAfter = Date.parse(new X509Certificate(cert).validTo);
  return {
    credentials: grpc.ServerCredentials.createSsl(ca, [{ cert_chain: cert, private_key: key }], true),
    start: async () => undefined,
    servedCertificate: () => ({ notAfter }),
    onReload: () => undefined,
    onReloadFailure: () => undefined,
    close: () => undefined,
  };
}
