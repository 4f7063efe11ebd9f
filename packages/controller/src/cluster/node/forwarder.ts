import { createServer, connect, type Server } from 'node:net';
import { once } from 'node:events';

/**
 * Inside the namespace: a unix socket under the run's folder that pipes each connection to the
 * apiserver's port on the node address. Unix sockets are reached by path, not by network
 * namespace, so the host's side (below) can connect to it without any address of its own inside.
 */
export const INNER_FORWARDER = `
const net = require('node:net');
const [socket, host, port] = process.argv.slice(1);
try { require('node:fs').unlinkSync(socket); } catch {}
net.createServer((c) => {
  const u = net.connect(Number(port), host);
  c.pipe(u).pipe(c);
  c.on('error', () => u.destroy());
  u.on('error', () => c.destroy());
}).listen(socket, () => console.log('listening'));
process.on('SIGTERM', () => process.exit(0));
`;

/** The host's side: 127.0.0.1:<port> piped to the inner forwarder's socket. TLS passes through untouched. */
export async function listenOnLoopback(socketPath: string, port = 0): Promise<{ readonly server: Server; readonly port: number }> {
  const server = createServer((c) => {
    const u = connect(socketPath);
    c.pipe(u).pipe(c);
    c.on('error', () => u.destroy());
    u.on('error', () => c.destroy());
  });
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the apiserver forwarder has no TCP address');
  return { server, port: address.port };
}
