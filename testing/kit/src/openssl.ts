// Arguments for the openssl CLI, our second, independent certificate maker: each suite keeps its own
// way of running it (sync or async, cwd, stdio), so these build argument lists and run nothing.

/** `openssl req` making a new P-256 key at `keyOut` and, at `out`, a self-signed certificate or a CSR, then `extra`. */
export function p256Request(kind: 'self-signed' | 'csr', keyOut: string, out: string, subject: string, ...extra: string[]): string[] {
  return [
    'req',
    kind === 'self-signed' ? '-x509' : '-new',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    keyOut,
    '-out',
    out,
    '-subj',
    subject,
    ...extra,
  ];
}

/** `openssl x509 -req` signing the CSR `csr` with `caCert` and `caKey` into `out`, then `extra`. */
export function signRequest(csr: string, caCert: string, caKey: string, out: string, ...extra: string[]): string[] {
  return ['x509', '-req', '-in', csr, '-CA', caCert, '-CAkey', caKey, '-out', out, ...extra];
}

/**
 * `openssl verify -x509_strict` of `target` with only `anchors` trusted and `untrusted` the
 * certificates between (a chain's intermediates), for `purpose` when given (sslserver, sslclient).
 */
export function verifyChain(anchors: string, untrusted: string, target: string, purpose?: string): string[] {
  return ['verify', '-x509_strict', ...(purpose ? ['-purpose', purpose] : []), '-CAfile', anchors, '-untrusted', untrusted, target];
}
