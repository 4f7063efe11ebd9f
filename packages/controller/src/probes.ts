import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One named condition of a probe; `check` returns undefined when fine, else why not. */
export interface ProbeCheck {
  /** Names the check in the probe's response. */
  readonly name: string;
  /** undefined when healthy, else why not (the probe's response body). */
  check(): string | undefined;
}

/** Options of {@link startProbeServer}. */
export interface ProbeServerOptions {
  /** Undefined listens on every interface. */
  readonly host: string | undefined;
  /** 0 picks a free port. */
  readonly port: number;
  /** Checks of `GET /healthz`: is the process alive and responsive. */
  readonly liveness: readonly ProbeCheck[];
  /** Checks of `GET /readyz`: caches synced, leadership known. */
  readonly readiness: readonly ProbeCheck[];
}

/** A running probe endpoint. */
export interface ProbeServer {
  /** The port it listens on (the one the OS chose for port 0). */
  readonly port: number;
  /** `http://<host>:<port>`, for tests and logs. */
  readonly url: string;
  /** Stops listening; resolves when the server is closed. */
  close(): Promise<void>;
}

/** The paths served, as in controller-runtime; the Deployment's probes use these. */
export const PROBE_PATHS = { liveness: '/healthz', readiness: '/readyz' } as const;

/**
 * Serves `/healthz` and `/readyz` (and `/healthz/<check>`, `/readyz/<check>`) the way the
 * apiserver does: 200 `ok`, or 500 with one `[+]name ok` / `[-]name failed: reason` line per check.
 */
export async function startProbeServer(options: ProbeServerOptions): Promise<ProbeServer> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://probe');
    const [, probe, only] = /^\/(healthz|readyz)(?:\/([^/]+))?\/?$/.exec(url.pathname) ?? [];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
      return;
    }
    if (!probe) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: try /healthz or /readyz\n');
      return;
    }
    const all = probe === 'healthz' ? options.liveness : options.readiness;
    const checks = only === undefined ? all : all.filter((c) => c.name === only);
    if (checks.length === 0 && only !== undefined) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end(`no ${probe} check named ${only}\n`);
      return;
    }
    const lines: string[] = [];
    let healthy = true;
    for (const c of checks) {
      let reason: string | undefined;
      try {
        reason = c.check();
      } catch (e) {
        reason = `check threw: ${(e as Error).message}`;
      }
      if (reason !== undefined) healthy = false;
      lines.push(reason === undefined ? `[+]${c.name} ok` : `[-]${c.name} failed: ${reason}`);
    }
    const verbose = url.searchParams.has('verbose') || !healthy;
    const body = verbose ? `${lines.join('\n')}\n${probe} check ${healthy ? 'passed' : 'failed'}\n` : 'ok';
    res.writeHead(healthy ? 200 : 500, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await listen(server, options.host, options.port);
  const bound = server.address() as AddressInfo;
  const shown = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
  return {
    port: bound.port,
    url: `http://${shown}:${bound.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

function listen(server: Server, host: string | undefined, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (e: Error): void => reject(new Error(`probe server cannot listen on ${host ?? ''}:${port}: ${e.message}`, { cause: e }));
    server.once('error', failed);
    const done = (): void => {
      server.off('error', failed);
      resolve();
    };
    if (host === undefined) server.listen(port, done);
    else server.listen(port, host, done);
  });
}

/**
 * The liveness check: answering at all proves the event loop turns, so the process can make
 * progress. It says nothing of how fast: a restart never helps a controller that is merely busy,
 * and the Deployment's probe (5 s, 6 misses in a row) tolerates a starved node. A stalled loop
 * cannot run a smarter check anyway.
 */
export const pingCheck: ProbeCheck = { name: 'ping', check: () => undefined };
