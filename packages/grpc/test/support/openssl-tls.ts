// The openssl CLI as a second, independent TLS stack: a server leaf the core would refuse to
// issue, and `openssl s_client` dialling the provider with a client certificate.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { p256Request, signRequest } from '@eso-mtls/test-kit/openssl';
import type { KeyPair } from '@eso-mtls/test-kit/pki';

const run = promisify(execFile);

/**
 * A P-256 server leaf (EKU serverAuth) for `dnsNames`, signed by `ca` with `openssl x509 -req`:
 * openssl sets no bound on the number of subjectAltNames, so this makes certificates the core
 * refuses to issue.
 */
export async function opensslServerLeaf(ca: KeyPair, dnsNames: readonly string[]): Promise<KeyPair> {
  const dir = mkdtempSync(join(tmpdir(), 'openssl-leaf-'));
  const file = (name: string) => join(dir, name);
  try {
    writeFileSync(file('ca.crt'), ca.cert);
    writeFileSync(file('ca.key'), ca.key, { mode: 0o600 });
    // A section of DNS.n lines: one subjectAltName line of 100 KB would be hard to read in a failure.
    writeFileSync(
      file('ext.cnf'),
      [
        '[leaf]',
        'basicConstraints = critical,CA:FALSE',
        'keyUsage = critical,digitalSignature',
        'extendedKeyUsage = serverAuth',
        'subjectKeyIdentifier = hash',
        'authorityKeyIdentifier = keyid',
        'subjectAltName = @names',
        '[names]',
        ...dnsNames.map((n, i) => `DNS.${i + 1} = ${n}`),
        '',
      ].join('\n'),
    );
    await run('openssl', p256Request('csr', file('tls.key'), file('tls.csr'), '/CN=size-control'));
    await run(
      'openssl',
      signRequest(
        file('tls.csr'),
        file('ca.crt'),
        file('ca.key'),
        file('tls.crt'),
        '-set_serial',
        '0x4242',
        '-days',
        '2',
        '-sha256',
        '-extfile',
        file('ext.cnf'),
        '-extensions',
        'leaf',
      ),
    );
    return { cert: readFileSync(file('tls.crt'), 'utf8'), key: readFileSync(file('tls.key'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** How an `openssl s_client` connection ended. */
export interface SClientOutcome {
  /** s_client's exit code, or null when it was stopped after the server answered. */
  readonly code: number | null;
  /** The handshake summary and whatever the server sent, latin1. */
  readonly stdout: string;
  readonly stderr: string;
  /** The server answered the HTTP/2 preface with a SETTINGS frame: it accepted the client certificate. */
  readonly accepted: boolean;
}

// Client connection preface plus an empty SETTINGS frame (RFC 9113 §3.4), as in tls-probe.ts.
const PREFACE = Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]);
// A SETTINGS frame on stream 0 without flags: length (3 octets, the first two zero here), then
// type 4, flags 0 and stream id 0. s_client's own output is text and holds no zero octet.
const SETTINGS_TAIL = Buffer.from([4, 0, 0, 0, 0, 0]);
function holdsServerSettings(received: Buffer): boolean {
  for (let at = received.indexOf(SETTINGS_TAIL, 3); at !== -1; at = received.indexOf(SETTINGS_TAIL, at + 1)) {
    if (received[at - 3] === 0 && received[at - 2] === 0) return true;
  }
  return false;
}

const TIMEOUT_MS = 15_000;

/**
 * Dials 127.0.0.1:`port` with `openssl s_client` (ALPN h2, `certFile` and `keyFile` as the client
 * certificate, `caFile` as the only trust, `serverName` checked against the certificate, verification errors
 * fatal), sends the HTTP/2 preface once the handshake is done, and stops at the server's SETTINGS
 * frame, at s_client's exit, or after 15 s. `extraArgs` go last, e.g. `-tls1_2 -cipher …`.
 */
export function sClient(
  port: number,
  files: { caFile: string; certFile: string; keyFile: string },
  serverName: string,
  extraArgs: readonly string[] = [],
): Promise<SClientOutcome> {
  return new Promise((resolve) => {
    const child = spawn(
      'openssl',
      [
        's_client',
        '-connect',
        `127.0.0.1:${port}`,
        '-servername',
        serverName,
        '-verify_hostname',
        serverName,
        '-verify_return_error',
        '-CAfile',
        files.caFile,
        '-cert',
        files.certFile,
        '-key',
        files.keyFile,
        '-alpn',
        'h2',
        ...extraArgs,
      ],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let stdout = Buffer.alloc(0);
    let stderr = '';
    let accepted = false;
    const timer = setTimeout(() => child.kill(), TIMEOUT_MS);
    child.stdout.on('data', (d: Buffer) => {
      stdout = Buffer.concat([stdout, d]);
      if (!accepted && holdsServerSettings(stdout)) {
        accepted = true;
        child.kill();
      }
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // s_client reads stdin only after its handshake; keep it open so it does not hang up first.
    child.stdin.on('error', () => undefined);
    child.stdin.write(PREFACE);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: stdout.toString('latin1'), stderr, accepted });
    });
  });
}
