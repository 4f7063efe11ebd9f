/**
 * One structured log record of the provider server, or of a `CertificateWatcher` of its own
 * (ESO's client folder): a certificate reload or a refused one.
 * Carries labels, reasons and dates only, never PEM or key text.
 */
export interface ProviderLogRecord {
  readonly level: 'info' | 'warn';
  /** Who wrote it: default `eso-mtls-provider` (the provider server); `eso-mtls-certificate-watcher` for a watcher's own lines. */
  readonly component?: string;
  readonly message: string;
  /** The `metrics` identity, when given. */
  readonly namespace?: string;
  readonly service?: string;
  /** `reloaded`, the refusal's reason label (e.g. `key_mismatch`), or `invalid_response` for a provider's response refused. */
  readonly reason?: string;
  /** What was wrong with the files, naming them, or with the response, naming its fields (refusals only). */
  readonly detail?: string;
  /** notAfter (ISO 8601) and lower-case hex serial of the certificate served after the event. */
  readonly notAfter?: string;
  readonly serialNumber?: string;
}

/** Receives every {@link ProviderLogRecord}, e.g. to write it as one JSON line. */
export type ProviderLogger = (record: ProviderLogRecord) => void;

/**
 * The provider server's default logger: one JSON line per reload or refused reload on stderr, so
 * that "the provider's logs name the problem" (docs/operations.md) holds for a provider that
 * configured nothing. The record carries labels, reasons and dates only, never PEM or key text.
 */
export function stderrProviderLogger(record: ProviderLogRecord, write: (line: string) => unknown = (l) => process.stderr.write(l)): void {
  write(`${JSON.stringify({ time: new Date().toISOString(), component: 'eso-mtls-provider', ...record })}\n`);
}
