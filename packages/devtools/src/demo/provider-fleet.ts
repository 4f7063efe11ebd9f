import { type ProviderLogRecord, type ProviderServer, SecretNotFoundError, type SecretStoreProvider, startProviderServer } from '@eso-mtls/grpc';
import { DEMO_SCHEDULE } from './schedule.js';

/** The remote secret every demo provider holds. */
export const DEMO_SECRET_KEY = 'db-password';

/** Options of {@link startDemoProvider}. */
export interface DemoProviderOptions {
  readonly namespace: string;
  readonly service: string;
  /** The folder its Secret is mounted at. */
  readonly directory: string;
  /** The client identity every call must carry: ESO's SPIFFE ID. */
  readonly clientSpiffeId: string;
  /** Told about every certificate reload and refused reload, as the provider logs them. */
  readonly log: (record: ProviderLogRecord) => void;
}

/** A running provider and what it saw. */
export interface DemoProvider {
  readonly namespace: string;
  readonly service: string;
  readonly server: ProviderServer;
  /** Plain-HTTP /metrics of this provider (its reload counters and served-certificate expiry). */
  readonly metricsUrl: string;
  /** mTLS connections that carried calls: each began with a full handshake verified both ways. */
  connections(): number;
  close(): Promise<void>;
}

/**
 * Starts one provider the way a provider author would: `startProviderServer` from @eso-mtls/grpc
 * on loopback, reading its certificate from the mounted folder (hot reload, last good pair kept),
 * requiring ESO's client identity, with its own /metrics. Answers GetSecret for one key.
 */
export async function startDemoProvider(options: DemoProviderOptions): Promise<DemoProvider> {
  const peers = new Set<string>();
  const value = (key: string, peer: string): Buffer => {
    // Each distinct client address is one TCP connection, hence one completed mTLS handshake.
    peers.add(peer);
    if (key !== DEMO_SECRET_KEY) throw new SecretNotFoundError(`no secret ${JSON.stringify(key)} in ${options.namespace}; try ${DEMO_SECRET_KEY}`);
    return Buffer.from(`s3cr3t-from-${options.namespace}`);
  };
  const implementation: SecretStoreProvider = {
    getSecret: (request, context) => ({ value: value(request.remoteRef?.key ?? '', context.peer) }),
    getSecretMap: (request, context) => ({ secrets: { [DEMO_SECRET_KEY]: value(request.remoteRef?.key ?? '', context.peer) } }),
  };
  const server = await startProviderServer({
    implementation,
    certDir: options.directory,
    host: '127.0.0.1',
    port: 0,
    healthPort: 0,
    requireClientIdentity: { spiffeId: options.clientSpiffeId },
    maxConnectionAgeMs: DEMO_SCHEDULE.providerMaxConnectionAgeMs,
    maxConnectionAgeGraceMs: DEMO_SCHEDULE.providerMaxConnectionAgeGraceMs,
    longestCallDeadlineMs: DEMO_SCHEDULE.callDeadlineMs,
    shutdownTimeoutMs: DEMO_SCHEDULE.callDeadlineMs,
    metrics: { namespace: options.namespace, service: options.service },
    log: options.log,
  });
  return {
    namespace: options.namespace,
    service: options.service,
    server,
    metricsUrl: `http://127.0.0.1:${server.healthPort}/metrics`,
    connections: () => peers.size,
    close: () => server.close(),
  };
}
