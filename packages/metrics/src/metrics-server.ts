import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMetricsHandler, type MetricsHandlerOptions, plainText } from './metrics-handler.js';

/** Options of {@link startMetricsServer}: what to serve, and where. */
export interface MetricsServerOptions extends MetricsHandlerOptions {
  /** Address to listen on: '0.0.0.0' or '::' in a pod, '127.0.0.1' in tests. */
  readonly host: string;
  /** TCP port; 0 picks a free one (see {@link MetricsServer.address}). */
  readonly port: number;
}

/** A running `/metrics` endpoint. */
export interface MetricsServer {
  /** Where it actually listens (the real port when 0 was asked for). */
  readonly address: { readonly host: string; readonly port: number };
  /** `http://host:port/metrics`, for tests and logs. */
  readonly url: string;
  /** Stops listening and closes open connections, busy ones included, so shutdown never waits on a scraper. */
  close(): Promise<void>;
}

/** The path served; everything else is 404. */
export const METRICS_PATH = '/metrics';

/**
 * Serves the registries at `GET /metrics` (and HEAD) with the Prometheus content type, 404 for any
 * other path and 405 for any other method. Rejects when the address is taken, the port is not a
 * port, or the registries cannot be served together (see {@link createMetricsHandler}).
 */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535) {
    throw new RangeError(`metrics port ${String(options.port)} is not a TCP port (an integer from 0 to 65535)`);
  }
  let handle;
  try {
    handle = createMetricsHandler(options);
  } catch (e) {
    throw new TypeError(`startMetricsServer: ${(e as Error).message}`, { cause: e });
  }
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://metrics.invalid').pathname;
    if (path !== METRICS_PATH) return plainText(res, 404, `not found: only ${METRICS_PATH} is served\n`);
    void handle(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    const failed = (e: Error): void => reject(new Error(`metrics server cannot listen on ${options.host}:${options.port}: ${e.message}`, { cause: e }));
    server.once('error', failed);
    server.listen(options.port, options.host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  server.on('error', options.onError ?? (() => undefined));
  const bound = server.address() as AddressInfo;
  const host = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
  return {
    address: { host: bound.address, port: bound.port },
    url: `http://${host}:${bound.port}${METRICS_PATH}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((e) => (e ? reject(e) : resolve()));
        server.closeAllConnections();
      }),
  };
}
