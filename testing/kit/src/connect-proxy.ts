import { createServer } from 'node:http';
import { type Socket, connect, isIP } from 'node:net';

/** One CONNECT the proxy received, and what it relayed through the tunnel. */
export interface TunnelRecord {
  /** The request target, `host:port`. */
  readonly target: string;
  readonly proxyAuthorization: string | undefined;
  /** The status the proxy answered. */
  readonly status: number;
  /** Bytes relayed client→server and server→client (a TLS handshake alone is some kilobytes). */
  bytesUp: number;
  bytesDown: number;
}

/** A CONNECT proxy on loopback for tests. */
export interface ConnectProxy {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  readonly tunnels: TunnelRecord[];
  close(): Promise<void>;
}

/** The address the proxy connects upstream from, so the apiserver's audit log (sourceIPs) tells proxied requests from direct ones. */
export const PROXY_SOURCE_ADDRESS = '127.0.0.2';

/**
 * Starts an HTTP CONNECT proxy on 127.0.0.1 that records every tunnel. With `requireAuthorization`,
 * a CONNECT without exactly that Proxy-Authorization header is answered 407. Tunnels only to
 * loopback addresses (tests must not reach out), IPv4 ones from {@link PROXY_SOURCE_ADDRESS};
 * anything else is answered 403.
 */
export async function startConnectProxy(options: { requireAuthorization?: string } = {}): Promise<ConnectProxy> {
  const tunnels: TunnelRecord[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((_req, res) => {
    res.writeHead(405, { Allow: 'CONNECT' }).end('this test proxy only tunnels (CONNECT)\n');
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('connect', (req, client: Socket, head: Buffer) => {
    const target = req.url ?? '';
    const proxyAuthorization = req.headers['proxy-authorization'];
    const answer = (status: number, text: string, extra = ''): void => {
      tunnels.push({ target, proxyAuthorization, status, bytesUp: 0, bytesDown: 0 });
      client.end(`HTTP/1.1 ${status} ${text}\r\n${extra}Content-Length: 0\r\nConnection: close\r\n\r\n`);
    };
    if (options.requireAuthorization !== undefined && proxyAuthorization !== options.requireAuthorization) {
      answer(407, 'Proxy Authentication Required', 'Proxy-Authenticate: Basic realm="test"\r\n');
      return;
    }
    const match = /^\[?([^\]]+?)\]?:(\d+)$/.exec(target);
    const host = match?.[1] ?? '';
    if (!match || isIP(host) === 0 || !(host.startsWith('127.') || host === '::1')) {
      answer(403, 'Forbidden');
      return;
    }
    const record: TunnelRecord = { target, proxyAuthorization, status: 200, bytesUp: head.length, bytesDown: 0 };
    tunnels.push(record);
    const upstream = connect({ port: Number(match[2]), host, ...(isIP(host) === 4 ? { localAddress: PROXY_SOURCE_ADDRESS } : {}) });
    sockets.add(upstream);
    upstream.once('close', () => sockets.delete(upstream));
    upstream.once('connect', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      client.on('data', (chunk: Buffer) => {
        record.bytesUp += chunk.length;
      });
      upstream.on('data', (chunk: Buffer) => {
        record.bytesDown += chunk.length;
      });
      client.pipe(upstream);
      upstream.pipe(client);
    });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    tunnels,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
