import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';

/** Options of {@link startMetricsServer}: give `registry` or `registries`, not both. */
export interface MetricsServerOptions {
  readonly registry?: Registry;
  /** Several registries served as one exposition (merged per scrape; their default labels are not applied). */
  readonly registries?: readonly Registry[];
  /** Address to listen on: '0.0.0.0' or '::' in a pod, '127.0.0.1' in tests. */
  readonly host: string;
  /** TCP port; 0 picks a free one (see {@link MetricsServer.address}). */
  readonly port: number;
  /** Told about a scrape that failed (the scraper gets a 500). */
  readonly onError?: (error: unknown) => void;
}

/** A running `/metrics` endpoint. */
export interface MetricsServer {
  /** Where it actually listens (the real port when 0 was asked for). */
  readonly address: { readonly host: string; readonly port: number };
  /** `http://host:port/metrics`, for tests and logs. */
  readonly url: string;
  /** Stops listening and closes open connections, keep-alive ones included. */
  close(): Promise<void>;
}

/** The path served; everything else is 404. */
export const METRICS_PATH = '/metrics';

/**
 * Serves the registries' metrics at `GET /metrics` (and HEAD) with the Prometheus content type,
 * 404 for any other path and 405 for any other method. Rejects when the address is taken, or when
 * the registries mix content types or share a metric name (the exposition would be invalid).
 */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const registries = chooseRegistries(options);
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535) {
    throw new RangeError(`metrics port ${String(options.port)} is not a TCP port (an integer from 0 to 65535)`);
  }
  const exposition = (): Registry => (registries.length === 1 ? registries[0]! : Registry.merge([...registries]));
  let contentType: string;
  try {
    contentType = exposition().contentType; // merging now reports a clash before we listen
  } catch (e) {
    throw new TypeError(`startMetricsServer: these registries cannot be served as one exposition: ${(e as Error).message}`, { cause: e });
  }
  const onError = options.onError ?? (() => undefined);

  const server = createServer((req, res) => {
    void respond(req, res, exposition, contentType, onError);
  });
  await new Promise<void>((resolve, reject) => {
    const failed = (e: Error): void => reject(new Error(`metrics server cannot listen on ${options.host}:${options.port}: ${e.message}`, { cause: e }));
    server.once('error', failed);
    server.listen(options.port, options.host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  server.on('error', onError);
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

function chooseRegistries(options: MetricsServerOptions): readonly Registry[] {
  if (options.registry !== undefined && options.registries !== undefined) {
    throw new TypeError('startMetricsServer: give either registry or registries, not both');
  }
  const registries = options.registry !== undefined ? [options.registry] : (options.registries ?? []);
  if (registries.length === 0) throw new TypeError('startMetricsServer: give a registry (or a non-empty registries list) to serve');
  return registries;
}

async function respond(
  req: IncomingMessage,
  res: ServerResponse,
  exposition: () => Registry,
  contentType: string,
  onError: (error: unknown) => void,
): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://metrics.invalid').pathname;
  if (path !== METRICS_PATH) return plain(res, 404, `not found: only ${METRICS_PATH} is served\n`);
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('Allow', 'GET, HEAD');
    return plain(res, 405, `method ${String(req.method)} not allowed: use GET or HEAD\n`);
  }
  let body: string;
  try {
    body = await exposition().metrics();
  } catch (e) {
    onError(e);
    return plain(res, 500, `collecting metrics failed: ${e instanceof Error ? e.message : String(e)}\n`);
  }
  res.writeHead(200, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) });
  res.end(req.method === 'HEAD' ? undefined : body);
}

function plain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(res.req.method === 'HEAD' ? undefined : text);
}
