import * as grpc from '@grpc/grpc-js';
import { ProviderMetrics } from '@eso-mtls/metrics';
import { healthServiceDefinition, providerServiceDefinition } from '../wire/proto.js';
import { PROVIDER_SERVICE_NAME } from '../wire/service.js';
import type { CertificateLayout } from '../tls/layout.js';
import { type MinTlsVersion, reloadingCertificateSource } from '../tls/server-credentials.js';
import type { ServedCertificateSource } from '../tls/served-certificate-source.js';
import { providerHandlers } from './handlers.js';
import { HealthService } from './health.js';
import { startHealthHttpServer } from './health-http.js';
import { resolveProviderServerOptions, type ProviderServerOptions } from './options.js';

/** A running provider server. */
export interface ProviderServer {
  /** The bound gRPC (mTLS) port. */
  readonly port: number;
  /** The bound plain-HTTP probe and metrics port. */
  readonly healthPort: number;
  /** The gRPC health table, e.g. to report NOT_SERVING while a backend is down. */
  readonly health: HealthService;
  /** The metrics, when `metrics` labels were given. */
  readonly metrics: ProviderMetrics | undefined;
  /** Graceful stop: NOT_SERVING, no new calls, running calls get shutdownTimeoutMs, then are cancelled. */
  close(): Promise<void>;
}

/**
 * How the server obtains its certificate from `certDir`, whose files are laid out as `layout`
 * says, and serves it from TLS version `minTlsVersion` up; a seam for the hot-reloading source. @internal
 */
export type CertificateSourceFactory = (
  certDir: string,
  options: { readonly layout: CertificateLayout; readonly minTlsVersion: MinTlsVersion },
) => ServedCertificateSource;

/**
 * Starts a provider: the user's {@link SecretStoreProvider} and `grpc.health.v1.Health` over
 * mTLS (client certificates required, verified against ca.crt, identity checked per call), and
 * plain-HTTP /healthz, /readyz and /metrics on the health port. Resolves once a good certificate
 * is loaded and both ports listen; until then the health port answers not ready, naming the
 * last problem with the files, and `options.signal` can abort the wait.
 */
export async function startProviderServer(
  options: ProviderServerOptions,
  certificateSource: CertificateSourceFactory = reloadingCertificateSource,
): Promise<ProviderServer> {
  const o = resolveProviderServerOptions(options);
  const source = certificateSource(o.certDir, { layout: o.certLayout, minTlsVersion: o.minTlsVersion });
  const metrics =
    o.metrics === undefined
      ? undefined
      : new ProviderMetrics({
          namespace: o.metrics.namespace,
          service: o.metrics.service,
          source: o.certLayout === 'pod-certificate' ? 'pod_certificate' : 'secret',
          now: () => Date.now(),
          servedCertificate: () => source.servedCertificate(),
        });
  let lastFailure: string | undefined;
  const identity = o.metrics === undefined ? {} : { namespace: o.metrics.namespace, service: o.metrics.service };
  // Dates and serial of what is served now; the record never sees PEM or key text.
  const served = (): { notAfter?: string; serialNumber?: string } => {
    const c = source.servedCertificate();
    return c === undefined ? {} : { notAfter: new Date(c.notAfter).toISOString(), ...(c.serialNumber === undefined ? {} : { serialNumber: c.serialNumber }) };
  };
  source.onReload(() => {
    metrics?.recordReload();
    o.log?.({ level: 'info', message: 'certificate reloaded', ...identity, reason: 'reloaded', ...served() });
  });
  source.onReloadFailure((e) => {
    lastFailure = e instanceof Error ? e.message : String(e);
    metrics?.recordReloadFailure();
    const reason = (e as { reason?: unknown } | undefined)?.reason;
    const good = source.servedCertificate() !== undefined;
    o.log?.({
      level: 'warn',
      message: good ? 'certificate reload refused; serving the last good certificate' : 'certificate load refused; waiting for a good certificate',
      ...identity,
      reason: typeof reason === 'string' ? reason : 'unknown',
      detail: lastFailure,
      ...served(),
    });
  });
  const health = new HealthService([PROVIDER_SERVICE_NAME]);
  let state: 'loading' | 'binding' | 'serving' | 'closing' = 'loading';
  const readiness = (): string | undefined => {
    if (state === 'closing') return 'shutting down';
    if (source.servedCertificate() === undefined) {
      return `waiting for a good certificate pair in ${o.certDir}${lastFailure === undefined ? '' : ` (last attempt: ${lastFailure})`}`;
    }
    return state === 'serving' ? undefined : 'gRPC port not bound yet';
  };
  const healthHttp = await startHealthHttpServer({ host: o.host, port: o.healthPort, readiness, registry: metrics?.registry });
  const server = new grpc.Server({
    'grpc.max_connection_age_ms': o.maxConnectionAgeMs,
    'grpc.max_connection_age_grace_ms': o.maxConnectionAgeGraceMs,
  });
  let port: number;
  const aborted = new Promise<never>((_, reject) => {
    const abort = (): void =>
      reject(new Error(`startProviderServer aborted while ${state === 'loading' ? `waiting for certificates in ${o.certDir}` : 'binding'}`));
    if (o.signal?.aborted) abort();
    o.signal?.addEventListener('abort', abort, { once: true });
  });
  aborted.catch(() => undefined);
  try {
    await Promise.race([source.start(), aborted]);
    state = 'binding';
    server.addService(
      providerServiceDefinition(),
      providerHandlers(o.implementation, o.requireClientIdentity, o.onCall, (r) => o.log?.({ ...r, ...identity })),
    );
    server.addService(healthServiceDefinition(), health.handlers());
    const address = `${o.host.includes(':') ? `[${o.host}]` : o.host}:${o.port}`;
    port = await new Promise<number>((resolve, reject) => {
      server.bindAsync(address, source.credentials, (e, bound) =>
        e ? reject(new Error(`provider gRPC port cannot listen on ${address}: ${e.message}`, { cause: e })) : resolve(bound),
      );
    });
  } catch (e) {
    server.forceShutdown();
    source.close();
    await healthHttp.close();
    throw e;
  }
  health.setAll('SERVING');
  state = 'serving';

  let closing: Promise<void> | undefined;
  const close = async (): Promise<void> => {
    state = 'closing';
    health.setAll('NOT_SERVING');
    health.endWatches();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, o.shutdownTimeoutMs);
      server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    source.close();
    await healthHttp.close();
  };
  return {
    port,
    healthPort: healthHttp.port,
    health,
    metrics,
    close: () => (closing ??= close()),
  };
}
