// A raw TLS client for what grpc-js hides: which certificate a server presents, and how exactly a
// refused handshake ends (alert, verification error, or a silent close).
import { connect, type ConnectionOptions } from 'node:tls';

/** How a probe ended. */
export interface ProbeOutcome {
  /** The client finished its side of the handshake (TLS 1.3 clients do before the server checks their certificate). */
  readonly handshakeCompleted: boolean;
  /** The server answered the HTTP/2 preface with a SETTINGS frame: it accepted the connection. */
  readonly accepted: boolean;
  /** Serial (lower-case hex) of the certificate the server presented, when the handshake got that far. */
  readonly serverSerial?: string;
  readonly protocol?: string;
  readonly alpn?: string | false;
  /** The client-side error: an OpenSSL alert (`ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED`), a verification code, or ECONNRESET. */
  readonly errorCode?: string;
  readonly errorMessage?: string;
}

// Client connection preface plus an empty SETTINGS frame (RFC 9113 §3.4).
const PREFACE = Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]);
const SETTINGS_FRAME_TYPE = 4;

/**
 * Connects to 127.0.0.1:`port` with ALPN h2, sends the HTTP/2 preface, and reports how the
 * connection ended. Reads until the server sends a SETTINGS frame, an error, or a close: with
 * TLS 1.3 a server's verdict on the client certificate arrives only after the client's handshake
 * has completed.
 */
export function probe(port: number, options: ConnectionOptions): Promise<ProbeOutcome> {
  return new Promise((resolve) => {
    let outcome: { -readonly [K in keyof ProbeOutcome]: ProbeOutcome[K] } = { handshakeCompleted: false, accepted: false };
    let received = Buffer.alloc(0);
    const socket = connect({ host: '127.0.0.1', port, ALPNProtocols: ['h2'], ...options });
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => {
      outcome.errorCode ??= 'PROBE_TIMEOUT';
      finish();
    }, 5000);
    socket.on('secureConnect', () => {
      const peer = socket.getPeerX509Certificate();
      outcome = {
        ...outcome,
        handshakeCompleted: true,
        serverSerial: peer?.serialNumber.toLowerCase(),
        protocol: socket.getProtocol() ?? undefined,
        alpn: socket.alpnProtocol ?? undefined,
      };
      socket.write(PREFACE);
    });
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length >= 9 && received[3] === SETTINGS_FRAME_TYPE) {
        outcome.accepted = true;
        finish();
      }
    });
    socket.on('error', (e: NodeJS.ErrnoException) => {
      outcome.errorCode ??= e.code;
      outcome.errorMessage ??= e.message;
      finish();
    });
    socket.on('close', finish);
  });
}
