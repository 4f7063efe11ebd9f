/**
 * A byte pipe from one listening endpoint to another, as a script for `node -e SCRIPT FROM TO`,
 * where each endpoint is `unix:<path>` or `tcp:<host>:<port>`. The host reaches the apiserver
 * inside the node's network namespace through two of them: inside, `unix:<run>/apiserver.sock` to
 * `tcp:127.0.0.1:6443`; on the host, `tcp:127.0.0.1:<port>` to that socket. Unix sockets are
 * reached by path, not by network namespace, so the host needs no address inside, and TLS passes
 * through untouched. Each runs as a process of its own (a ServerProcess), never in the caller's
 * event loop, which a synchronous child process (helm, kubectl) would otherwise block.
 */
export const FORWARDER = `
const net = require('node:net');
const endpoint = (spec) => {
  const [kind, ...rest] = spec.split(':');
  if (kind === 'unix') return { path: rest.join(':') };
  if (kind === 'tcp') return { host: rest.slice(0, -1).join(':'), port: Number(rest.at(-1)) };
  throw new Error('endpoint ' + spec + ' is neither unix:<path> nor tcp:<host>:<port>');
};
const [from, to] = process.argv.slice(1).map(endpoint);
if (from.path) { try { require('node:fs').unlinkSync(from.path); } catch {} }
const server = net.createServer((c) => {
  const u = net.connect(to);
  c.pipe(u).pipe(c);
  c.on('error', () => u.destroy());
  u.on('error', () => c.destroy());
});
server.listen(from.path ? from.path : { host: from.host, port: from.port }, () => console.log('listening'));
process.on('SIGTERM', () => process.exit(0));
`;

/** `node -e FORWARDER` arguments for a pipe from `from` to `to`. */
export function forwarderArgs(from: string, to: string): string[] {
  return ['-e', FORWARDER, from, to];
}
