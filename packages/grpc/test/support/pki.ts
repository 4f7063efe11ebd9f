// TEMPORARY: certificates from the openssl CLI until @eso-mtls/core's issuing lands; then this
// file is rewritten on top of issueCa/issueServerLeaf/issueClientLeaf.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A certificate and its private key, PEM. */
export interface KeyPair {
  readonly cert: string;
  readonly key: string;
}

/** The DNS name tests dial (with ssl_target_name_override) and the client identity the core issues. */
export const TEST_SERVER_NAME = 'file-provider.provider-system.svc';
export const TEST_CLIENT_SPIFFE_ID = 'spiffe://cluster.local/ns/external-secrets-system/sa/external-secrets';

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

function withTemp<T>(f: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'pki-'));
  try {
    return f(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A self-signed P-256 CA. */
export async function issueTestCa(): Promise<KeyPair> {
  return withTemp((dir) => {
    openssl(dir, ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt',
      '-days', '30', '-subj', `/CN=test-ca-${process.hrtime.bigint()}`,
      '-addext', 'basicConstraints=critical,CA:TRUE,pathlen:0', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
    return { cert: readFileSync(join(dir, 'ca.crt'), 'utf8'), key: readFileSync(join(dir, 'ca.key'), 'utf8') };
  });
}

function issueLeaf(ca: KeyPair, subject: string, extensions: string): KeyPair {
  return withTemp((dir) => {
    writeFileSync(join(dir, 'ca.crt'), ca.cert);
    writeFileSync(join(dir, 'ca.key'), ca.key);
    writeFileSync(join(dir, 'ext.cnf'), extensions);
    openssl(dir, ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', subject]);
    openssl(dir, ['x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-set_serial', `0x${process.hrtime.bigint().toString(16)}`,
      '-days', '10', '-extfile', 'ext.cnf', '-out', 'leaf.crt']);
    return { cert: readFileSync(join(dir, 'leaf.crt'), 'utf8'), key: readFileSync(join(dir, 'leaf.key'), 'utf8') };
  });
}

/** A server leaf: serverAuth only, DNS SANs. */
export async function issueTestServer(ca: KeyPair, dnsNames: readonly string[] = [TEST_SERVER_NAME]): Promise<KeyPair> {
  return issueLeaf(ca, `/CN=${dnsNames[0]}`, [
    'basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature', 'extendedKeyUsage=serverAuth',
    `subjectAltName=${dnsNames.map((n) => `DNS:${n}`).join(',')}`, '',
  ].join('\n'));
}

/** A client leaf: clientAuth only, CN external-secrets-core and the core's SPIFFE URI SAN. */
export async function issueTestClient(ca: KeyPair, identity: { commonName?: string; uri?: string } = {}): Promise<KeyPair> {
  return issueLeaf(ca, `/CN=${identity.commonName ?? 'external-secrets-core'}`, [
    'basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature', 'extendedKeyUsage=clientAuth',
    `subjectAltName=URI:${identity.uri ?? TEST_CLIENT_SPIFFE_ID}`, '',
  ].join('\n'));
}

/** Writes ca.crt, tls.crt and tls.key, as the mounted Secret has them, into a fresh folder. */
export function writeCertDir(material: { ca: string; cert: string; key: string }): string {
  const dir = mkdtempSync(join(tmpdir(), 'provider-certs-'));
  writeFileSync(join(dir, 'ca.crt'), material.ca);
  writeFileSync(join(dir, 'tls.crt'), material.cert);
  writeFileSync(join(dir, 'tls.key'), material.key, { mode: 0o600 });
  return dir;
}
