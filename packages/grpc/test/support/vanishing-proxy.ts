// A TCP proxy on loopback in front of a provider that can make the connections it holds fall
// silent, as a provider pod on a powered-off node does: nothing is answered, nothing is closed.
// New connections still reach the provider, as a Service's next connection reaches a live endpoint.
import { type AddressInfo, type Server, type Socket, connect, createServer } from 'node:net';

/** One connection through the proxy: when each side's bytes arrived, and when the client closed it. */
export interface ProxiedConnection {
  /** Times (ms since the epoch) of each chunk the client sent. */
  readonly fromClient: number[];
  /** Times of each chunk the provider sent. */
  readonly fromServer: number[];
  /** When the client ended or reset its side; undefined while it is open. */
  clientClosedAt: number | undefined;
  /** True once {@link VanishingProxy.vanish} made it silent. */
  silent: boolean;
}

/** The proxy: its port, every connection it accepted, and the switch that silences them. */
export interface VanishingProxy {
  readonly port: number;
  readonly connections: readonly ProxiedConnection[];
  /** From now on, every connection open now forwards nothing either way and stays open. */
  vanish(): void;
  close(): Promise<void>;
}

/** Starts a proxy on 127.0.0.1 forwarding to 127.0.0.1:`upstreamPort`. */
export async function startVanishingProxy(upstreamPort: number): Promise<VanishingProxy> {
  const connections: ProxiedConnection[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const record: ProxiedConnection = { fromClient: [], fromServer: [], clientClosedAt: undefined, silent: false };
    connections.push(record);
    const upstream = connect(upstreamPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    // Read on while silent (so the client's kernel sees its bytes taken), forward nothing.
    client.on('data', (d: Buffer) => {
      record.fromClient.push(Date.now());
      if (!record.silent) upstream.write(d);
    });
    upstream.on('data', (d: Buffer) => {
      record.fromServer.push(Date.now());
      if (!record.silent) client.write(d);
    });
    const clientGone = (): void => {
      record.clientClosedAt ??= Date.now();
      upstream.destroy();
    };
    client.on('end', clientGone);
    client.on('close', clientGone);
    upstream.on('close', () => {
      if (!record.silent) client.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections,
    vanish: () => connections.forEach((c) => (c.silent = true)),
    close: async () => {
      sockets.forEach((s) => s.destroy());
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
