// An organisation's PKI for the upstream CA tests, made by the openssl CLI: an intermediate CA (or a
// certificate that is not one) signed by a root, as a user's Secret or an issuer would hold it.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { p256Request, signRequest, verifyChain } from './openssl.js';
import type { KeyPair } from './pki.js';

/** What the certificate is: an intermediate that may sign leaves (pathLen 0), or a certificate without CA:TRUE. */
export type IntermediateProfile = 'intermediate' | 'not-ca';

const EXTENSIONS: Record<IntermediateProfile, string[]> = {
  intermediate: ['basicConstraints = critical,CA:TRUE,pathlen:0', 'keyUsage = critical,keyCertSign,cRLSign,digitalSignature'],
  'not-ca': ['basicConstraints = critical,CA:FALSE', 'keyUsage = critical,digitalSignature'],
};

/** A fresh P-256 key and a certificate for it signed by `issuer`, valid for `days` (whole days) from now. */
export function opensslIntermediate(issuer: KeyPair, commonName: string, days = 2, profile: IntermediateProfile = 'intermediate'): KeyPair {
  const dir = mkdtempSync(join(tmpdir(), 'upstream-pki-'));
  const file = (name: string): string => join(dir, name);
  try {
    writeFileSync(file('issuer.crt'), issuer.cert);
    writeFileSync(file('issuer.key'), issuer.key, { mode: 0o600 });
    writeFileSync(file('ext.cnf'), [...EXTENSIONS[profile], 'subjectKeyIdentifier = hash', 'authorityKeyIdentifier = keyid', ''].join('\n'));
    execFileSync('openssl', p256Request('csr', file('key.pem'), file('csr.pem'), `/O=Acme/CN=${commonName}`), { stdio: 'pipe' });
    const serial = `0x${Date.now().toString(16)}${Math.floor(Math.random() * 0xffff).toString(16)}`;
    execFileSync(
      'openssl',
      signRequest(
        file('csr.pem'),
        file('issuer.crt'),
        file('issuer.key'),
        file('cert.pem'),
        '-days',
        String(days),
        '-extfile',
        file('ext.cnf'),
        '-set_serial',
        serial,
      ),
      { stdio: 'pipe' },
    );
    return { cert: readFileSync(file('cert.pem'), 'utf8'), key: readFileSync(file('key.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What `openssl verify` said of a chain: `ok` when it verified, and its words. */
export interface ChainVerdict {
  readonly ok: boolean;
  readonly output: string;
}

/**
 * `openssl verify -x509_strict` of the first certificate of `chainPem` (a Secret's tls.crt, a pod
 * certificate's chain) with the rest untrusted and only `anchorsPem` trusted, for `purpose` when
 * given: what a peer holding the anchors alone concludes.
 */
export function opensslVerifyChain(anchorsPem: string, chainPem: string, purpose?: 'sslserver' | 'sslclient'): ChainVerdict {
  const [target, ...above] = chainPem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g) ?? [];
  if (target === undefined) return { ok: false, output: 'no certificate in the chain' };
  const dir = mkdtempSync(join(tmpdir(), 'verify-chain-'));
  try {
    const file = (name: string, content: string): string => (writeFileSync(join(dir, name), content), join(dir, name));
    // openssl reads an empty -untrusted file as an error: a lone leaf passes itself, which adds nothing.
    const args = verifyChain(file('anchors.pem', anchorsPem), file('untrusted.pem', above.join('') || target), file('target.pem', target), purpose);
    const r = spawnSync('openssl', args, { encoding: 'utf8' });
    const output = `${r.stdout}${r.stderr}`;
    return { ok: r.status === 0 && /: OK\s*$/.test(r.stdout), output };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
