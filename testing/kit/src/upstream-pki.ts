// An organisation's PKI for the upstream CA tests, made by the openssl CLI: an intermediate CA (or a
// certificate that is not one) signed by a root, as a user's Secret or an issuer would hold it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { p256Request, signRequest } from './openssl.js';
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
