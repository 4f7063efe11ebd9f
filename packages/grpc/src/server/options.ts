import { minutes, seconds, formatDuration } from '@eso-mtls/core';
import type { ClientIdentityRequirement } from './identity.js';
import type { CallObserver } from './handlers.js';
import type { SecretStoreProvider } from './provider.js';
import { type ProviderLogger, stderrProviderLogger } from '../tls/provider-log.js';
import { CERTIFICATE_LAYOUTS, type CertificateLayout } from '../tls/layout.js';
import { MIN_TLS_VERSION, MIN_TLS_VERSIONS, type MinTlsVersion } from '../tls/server-credentials.js';

/** Options of {@link startProviderServer}. There is deliberately no option that turns TLS or client authentication off. */
export interface ProviderServerOptions {
  /** The provider's methods. */
  readonly implementation: SecretStoreProvider;
  /**
   * Folder holding the server certificate, its key and the CA bundle that client certificates
   * must chain to, laid out as `certLayout` says. Default `/etc/provider/certs`.
   */
  readonly certDir?: string;
  /**
   * What `certDir` holds. `secret` (default): ca.crt, tls.crt and tls.key, the mounted Secret
   * external-secrets-provider-tls. `pod-certificate`: credentials.pem, written by a
   * `podCertificate` projection (`credentialBundlePath: credentials.pem`, key generated on the
   * node), and ca.crt, written by a `clusterTrustBundle` projection of the client signer's
   * bundles. Both are hot-reloaded and checked alike, and a refused reload keeps the last good pair.
   */
  readonly certLayout?: CertificateLayout;
  /**
   * The lowest TLS version the gRPC port accepts. `TLSv1.3` (default): TLS 1.3 only, which both
   * grpc-js and ESO's grpc-go speak. `TLSv1.2`: for an ESO built to speak only TLS 1.2; TLS 1.2 is
   * then accepted with ECDHE and an AEAD cipher only (AES-GCM, ChaCha20-Poly1305), never CBC.
   */
  readonly minTlsVersion?: MinTlsVersion;
  /** gRPC (mTLS) port; default 8080, 0 picks a free one. */
  readonly port?: number;
  /** Address both ports listen on; default `0.0.0.0`. */
  readonly host?: string;
  /** Plain HTTP port of /healthz, /readyz and /metrics; default 8081, 0 picks a free one. */
  readonly healthPort?: number;
  /**
   * Identity the client certificate must carry on every call, besides chaining to ca.crt:
   * by default CN `external-secrets-core`. `false` accepts any client certificate from the CA
   * (for callers other than ESO core); the certificate itself is still required.
   */
  readonly requireClientIdentity?: ClientIdentityRequirement | false;
  /** grpc.max_connection_age_ms: every connection is closed after this long; default 20 min. */
  readonly maxConnectionAgeMs?: number;
  /** grpc.max_connection_age_grace_ms: time calls get to finish after that; default 10 min. */
  readonly maxConnectionAgeGraceMs?: number;
  /** The longest deadline any caller sets; the grace must cover it. Default 60 s. */
  readonly longestCallDeadlineMs?: number;
  /** How long close() waits for calls to finish before cancelling them; default 10 s. */
  readonly shutdownTimeoutMs?: number;
  /** Labels of this provider's metrics; enables /metrics with reload counters and served-certificate expiry. */
  readonly metrics?: { readonly namespace: string; readonly service: string };
  /** Told about every finished call (method, status, duration), e.g. to log it. */
  readonly onCall?: CallObserver;
  /**
   * Told once per certificate reload and once per refused reload, as one structured record each.
   * Default {@link stderrProviderLogger}: one JSON line on stderr. `false` silences them.
   */
  readonly log?: ProviderLogger | false;
  /** Aborts a start still waiting for its first good certificate (e.g. on SIGTERM). */
  readonly signal?: AbortSignal;
}

/** Options with every default applied. */
export type ResolvedProviderServerOptions = Required<Omit<ProviderServerOptions, 'metrics' | 'onCall' | 'log' | 'signal'>> &
  Pick<ProviderServerOptions, 'metrics' | 'onCall' | 'signal'> & { readonly log: ProviderLogger | undefined };

/** An unusable option; the message names it, its value and the rule. */
export class ProviderServerOptionError extends Error {
  override readonly name = 'ProviderServerOptionError';
}

/** Applies defaults and validates, throwing {@link ProviderServerOptionError} for the first bad value. */
export function resolveProviderServerOptions(options: ProviderServerOptions): ResolvedProviderServerOptions {
  const r: ResolvedProviderServerOptions = {
    implementation: options.implementation,
    certDir: options.certDir ?? '/etc/provider/certs',
    certLayout: options.certLayout ?? 'secret',
    minTlsVersion: options.minTlsVersion ?? MIN_TLS_VERSION,
    port: options.port ?? 8080,
    host: options.host ?? '0.0.0.0',
    healthPort: options.healthPort ?? 8081,
    requireClientIdentity: options.requireClientIdentity ?? {},
    maxConnectionAgeMs: options.maxConnectionAgeMs ?? minutes(20),
    maxConnectionAgeGraceMs: options.maxConnectionAgeGraceMs ?? minutes(10),
    longestCallDeadlineMs: options.longestCallDeadlineMs ?? seconds(60),
    shutdownTimeoutMs: options.shutdownTimeoutMs ?? seconds(10),
    metrics: options.metrics,
    onCall: options.onCall,
    log: options.log === false ? undefined : (options.log ?? stderrProviderLogger),
    signal: options.signal,
  };
  const bad = (field: string, value: unknown, rule: string): never => {
    throw new ProviderServerOptionError(`startProviderServer: ${field}=${JSON.stringify(value)} ${rule}`);
  };
  const impl = r.implementation as Partial<SecretStoreProvider> | undefined;
  // getSecret is the one method every provider has; any other left out answers UNIMPLEMENTED.
  if (typeof impl?.getSecret !== 'function') bad('implementation', typeof impl, 'must be an object with at least a getSecret method');
  for (const field of ['port', 'healthPort'] as const) {
    if (!Number.isInteger(r[field]) || r[field] < 0 || r[field] > 65535) bad(field, r[field], 'is not a TCP port (0-65535)');
  }
  if (r.port !== 0 && r.port === r.healthPort) bad('healthPort', r.healthPort, 'must differ from the gRPC port');
  for (const field of ['maxConnectionAgeMs', 'maxConnectionAgeGraceMs', 'longestCallDeadlineMs', 'shutdownTimeoutMs'] as const) {
    if (!Number.isInteger(r[field]) || r[field] <= 0) bad(field, r[field], 'must be a positive whole number of milliseconds');
  }
  if (r.maxConnectionAgeGraceMs < r.longestCallDeadlineMs) {
    bad(
      'maxConnectionAgeGraceMs',
      r.maxConnectionAgeGraceMs,
      `must be at least longestCallDeadlineMs (${formatDuration(r.longestCallDeadlineMs)}), or a connection reaching its maximum age cuts calls still within their deadline`,
    );
  }
  if (!MIN_TLS_VERSIONS.includes(r.minTlsVersion)) bad('minTlsVersion', r.minTlsVersion, `is not one of ${MIN_TLS_VERSIONS.join(', ')}`);
  if (!CERTIFICATE_LAYOUTS.includes(r.certLayout)) bad('certLayout', r.certLayout, `is not one of ${CERTIFICATE_LAYOUTS.join(', ')}`);
  if (typeof r.certDir !== 'string' || r.certDir === '') {
    bad('certDir', r.certDir, `must name the folder holding ${r.certLayout === 'secret' ? 'ca.crt, tls.crt and tls.key' : 'credentials.pem and ca.crt'}`);
  }
  return r;
}
