import type { AddressInfo } from 'node:net';
import { connect, createServer } from 'node:tls';
import type { V1Secret } from '@kubernetes/client-node';
import { text } from '@eso-mtls/test-kit/secrets';

/** Key, certificate and trust bundle of a TLS Secret, as node:tls takes them. */
export interface TlsMaterial {
  readonly key: string;
  readonly cert: string;
  readonly ca: string;
}

export const material = (secret: V1Secret | undefined): TlsMaterial => ({
  key: text(secret, 'tls.key'),
  cert: text(secret, 'tls.crt'),
  ca: text(secret, 'ca.crt'),
});

/**
 * A mutual TLS handshake on loopback: the server presents `server` and requires a client
 * certificate chaining to its ca.crt; the client presents `client` and checks `servername`.
 * Resolves 'ok', or with the TLS error's message.
 */
export async function handshake(server: TlsMaterial, client: TlsMaterial, servername: string): Promise<string> {
  const srv = createServer({ ...server, requestCert: true, rejectUnauthorized: true }, (s) => s.end('ok'));
  srv.on('tlsClientError', () => undefined);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  try {
    const { port } = srv.address() as AddressInfo;
    return await new Promise<string>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port, servername, ...client });
      let body = '';
      socket.on('data', (d) => (body += d));
      socket.on('end', () => resolve(body || 'closed without reply'));
      socket.on('error', (e) => resolve(e.message));
    });
  } finally {
    srv.close();
  }
}
