import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ProviderMetrics } from '@eso-mtls/metrics';

type Registry = ProviderMetrics['registry'];

/** Why the provider is not ready, or undefined when it is. */
export type ReadinessProbe = () => string | undefined;

/** A running plain-HTTP probe endpoint. */
export interface HealthHttpServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Plain HTTP on its own port, because the kubelet's probes cannot present a client certificate:
 * `/healthz` (alive), `/readyz` (200 once a good certificate is loaded, else 503 with the
 * reason) and, with a registry, `/metrics`.
 */
export async function startHealthHttpServer(options: {
  host: string;
  port: number;
  readiness: ReadinessProbe;
  registry?: Registry;
}): Promise<HealthHttpServer> {
  const { readiness, registry } = options;
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://probe.invalid').pathname;
    if (req.method !== 'GET' && req.method !== 'HEAD') return text(res, 405, `method ${String(req.method)} not allowed: use GET\n`);
    if (path === '/healthz') return text(res, 200, 'ok\n');
    if (path === '/readyz') {
      const reason = readiness();
      return reason === undefined ? text(res, 200, 'ready\n') : text(res, 503, `not ready: ${reason}\n`);
    }
    if (path === '/metrics' && registry !== undefined) {
      registry.metrics().then(
        (body) => {
          res.writeHead(200, { 'Content-Type': registry.contentType });
          res.end(req.method === 'HEAD' ? undefined : body);
        },
        (e: unknown) => text(res, 500, `collecting metrics failed: ${e instanceof Error ? e.message : String(e)}\n`),
      );
      return;
    }
    text(res, 404, `not found: serving /healthz, /readyz${registry ? ', /metrics' : ''}\n`);
  });
  await new Promise<void>((resolve, reject) => {
    const failed = (e: Error): void => reject(new Error(`provider health port cannot listen on ${options.host}:${options.port}: ${e.message}`, { cause: e }));
    server.once('error', failed);
    server.listen(options.port, options.host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function text(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8' });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}
