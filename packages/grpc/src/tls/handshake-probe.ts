import type { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { checkServerIdentity, connect } from 'node:tls';
import type { TlsMaterial } from './material.js';
import { MIN_TLS_VERSION } from './server-credentials.js';

/** Why a TLS handshake with a provider cannot succeed on the material it was made with. */
export type HandshakeProblem =
  /** The server certificate does not carry the name we dialled (ERR_TLS_CERT_ALTNAME_INVALID). */
  | 'server_name'
  /** The server certificate does not chain to our CA bundle (unknown issuer, self-signed in chain). */
  | 'untrusted_authority'
  /** The server certificate is past its notAfter or before its notBefore. */
  | 'validity'
  /** The provider closed the connection after the handshake instead of speaking HTTP/2: it refused our client certificate. */
  | 'client_refused';

/** What one diagnostic handshake found. */
export interface HandshakeDiagnosis {
  /** What was wrong. */
  readonly problem: HandshakeProblem;
  /** Node's or OpenSSL's code, e.g. CERT_HAS_EXPIRED, or `closed_without_settings` for a silent refusal. */
  readonly tlsCode: string;
  /** The name the server certificate was checked against. */
  readonly expectedName: string;
  /** The subjectAltName entries of the certificate the server presented (`DNS:…`, `IP Address:…`). */
  readonly servedNames: readonly string[];
  /** The presented certificate's subject, issuer and validity, in a phrase. */
  readonly served: string;
}

// Client connection preface plus an empty SETTINGS frame (RFC 9113 §3.4).
const PREFACE = Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]);
const SETTINGS_FRAME_TYPE = 4;
const VALIDITY_CODES = new Set(['CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID']);

const namesOf = (cert: X509Certificate | undefined): string[] => (cert?.subjectAltName ?? '').split(/,\s*/).filter((n) => n !== '');
const describe = (c: X509Certificate | undefined): string =>
  c === undefined
    ? 'no certificate'
    : `subject ${c.subject.replaceAll('\n', ', ')}, issuer ${c.issuer.replaceAll('\n', ', ')}, valid ${new Date(c.validFrom).toISOString()} to ${new Date(c.validTo).toISOString()}, serial ${c.serialNumber.toLowerCase()}`;

/**
 * One real TLS handshake to `host:port` with `material`, as the channel makes it, to learn why a
 * connection failed: grpc-js reports every failed handshake as UNAVAILABLE. Resolves undefined
 * when nothing is wrong with the certificates (refused or reset connection, timeout, or the
 * provider answered the HTTP/2 preface): those failures are transient and retried as such.
 *
 * Node's TLS server sends no alert for a client certificate it does not trust; it closes the
 * socket after the handshake. A close before the server's SETTINGS frame is read as that refusal.
 */
export function probeHandshake(
  target: { readonly host: string; readonly port: number },
  serverName: string,
  material: TlsMaterial,
  timeoutMs: number,
): Promise<HandshakeDiagnosis | undefined> {
  return new Promise((resolve) => {
    let peer: X509Certificate | undefined;
    let settled = false;
    let received = Buffer.alloc(0);
    const socket = connect({
      host: target.host,
      port: target.port,
      ...(isIP(serverName) === 0 ? { servername: serverName } : {}),
      ca: material.caBundle,
      cert: material.certificate,
      key: material.privateKey,
      minVersion: MIN_TLS_VERSION,
      ALPNProtocols: ['h2'],
      // Read the verdict instead of failing on it, so the certificate that caused it can be named.
      rejectUnauthorized: false,
      checkServerIdentity: (_host, cert) => checkServerIdentity(serverName, cert),
    });
    const finish = (diagnosis: HandshakeDiagnosis | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(diagnosis);
    };
    const found = (problem: HandshakeProblem, tlsCode: string): HandshakeDiagnosis => ({
      problem,
      tlsCode,
      expectedName: serverName,
      servedNames: namesOf(peer),
      served: describe(peer),
    });
    const timer = setTimeout(() => finish(undefined), Math.max(0, timeoutMs));
    timer.unref();
    socket.on('secureConnect', () => {
      peer = socket.getPeerX509Certificate();
      const code = socket.authorizationError === null || socket.authorizationError === undefined ? undefined : String(socket.authorizationError);
      if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return finish(found('server_name', code));
      if (code !== undefined) return finish(found(VALIDITY_CODES.has(code) ? 'validity' : 'untrusted_authority', code));
      socket.write(PREFACE);
    });
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length >= 9 && received[3] === SETTINGS_FRAME_TYPE) finish(undefined);
    });
    // After our handshake completed, an alert or a close before SETTINGS is the provider's refusal.
    socket.on('error', (e: NodeJS.ErrnoException) => finish(peer === undefined ? undefined : found('client_refused', e.code ?? e.message)));
    socket.on('close', () => finish(peer === undefined ? undefined : found('client_refused', 'closed_without_settings')));
  });
}
