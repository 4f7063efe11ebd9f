import type { ProviderLogRecord } from './options.js';

/**
 * The provider server's default logger: one JSON line per reload or refused reload on stderr, so
 * that "the provider's logs name the problem" (docs/operations.md) holds for a provider that
 * configured nothing. The record carries labels, reasons and dates only, never PEM or key text.
 */
export function stderrProviderLogger(record: ProviderLogRecord, write: (line: string) => unknown = (l) => process.stderr.write(l)): void {
  write(`${JSON.stringify({ time: new Date().toISOString(), component: 'eso-mtls-provider', ...record })}\n`);
}
