import type * as grpc from '@grpc/grpc-js';

/**
 * Where the provider server's TLS identity comes from: credentials for grpc-js plus what the
 * health port and metrics report about the certificate being served.
 */
export interface ServedCertificateSource {
  readonly credentials: grpc.ServerCredentials;
  /** Resolves once a good certificate is loaded. */
  start(): Promise<void>;
  /** The certificate served now (notBefore and notAfter in epoch ms); undefined before the first good load. */
  servedCertificate(): { readonly notAfter: number; readonly notBefore?: number; readonly serialNumber?: string } | undefined;
  /** Listeners for every swapped-in pair and every rejected attempt (metrics). */
  onReload(listener: () => void): void;
  /** Listeners for every rejected reload (metrics, logs). */
  onReloadFailure(listener: (error: unknown) => void): void;
  /** Stops watching the certificate files. */
  close(): void;
}
