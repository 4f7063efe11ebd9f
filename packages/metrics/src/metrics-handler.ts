import type { IncomingMessage, ServerResponse } from 'node:http';
import { Registry } from 'prom-client';

/** What to serve: give `registry` or `registries`, not both. */
export interface MetricsHandlerOptions {
  /** One registry to serve. */
  readonly registry?: Registry;
  /** Several registries served as one exposition (merged per scrape; their default labels are not applied). */
  readonly registries?: readonly Registry[];
  /** Told about a scrape that failed (the scraper gets a 500). */
  readonly onError?: (error: unknown) => void;
}

/** Answers one request routed to the metrics path. */
export type MetricsHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/**
 * A request handler for a server that already has other routes (a provider's /healthz port):
 * GET and HEAD get the exposition with the registry's content type, other methods 405. Throws
 * when the registries mix content types or share a metric name (the exposition would be invalid).
 */
export function createMetricsHandler(options: MetricsHandlerOptions): MetricsHandler {
  const registries = chooseRegistries(options);
  const exposition = (): Registry => (registries.length === 1 ? registries[0]! : Registry.merge([...registries]));
  let contentType: string;
  try {
    contentType = exposition().contentType; // merging now reports a clash before anyone scrapes
  } catch (e) {
    throw new TypeError(`these registries cannot be served as one exposition: ${(e as Error).message}`, { cause: e });
  }
  const onError = options.onError ?? (() => undefined);

  return async (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      return plainText(res, 405, `method ${String(req.method)} not allowed: use GET or HEAD\n`);
    }
    let body: string;
    try {
      body = await exposition().metrics();
    } catch (e) {
      onError(e);
      return plainText(res, 500, `collecting metrics failed: ${e instanceof Error ? e.message : String(e)}\n`);
    }
    res.writeHead(200, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) });
    res.end(req.method === 'HEAD' ? undefined : body);
  };
}

function chooseRegistries(options: MetricsHandlerOptions): readonly Registry[] {
  if (options.registry !== undefined && options.registries !== undefined) {
    throw new TypeError('give either registry or registries, not both');
  }
  const registries = options.registry !== undefined ? [options.registry] : (options.registries ?? []);
  if (registries.length === 0) throw new TypeError('give a registry (or a non-empty registries list) to serve');
  return registries;
}

/** A short text answer; no body for HEAD. */
export function plainText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(res.req.method === 'HEAD' ? undefined : text);
}
