// Certificate chains made by the openssl CLI, our second, independent certificate maker, the way an
// organisation's PKI hands them out: a root, intermediates under it (x509 v3: basicConstraints
// cA and pathLenConstraint, keyUsage keyCertSign), and leaves under the last one. `openssl ca` is
// used throughout because it alone sets any validity window (-startdate, -enddate), which the
// refusal tests need for an intermediate that is expired or not yet valid.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KeyPair } from '@eso-mtls/test-kit/pki';

const run = promisify(execFile);

/** A CA made by openssl: its certificate and PKCS#8 key, PEM. */
export interface OpensslCa extends KeyPair {
  /** The subject, as given to openssl (`/CN=...`). */
  readonly subject: string;
}

/** How a CA certificate is made; defaults: a CA, keyCertSign and cRLSign, valid from an hour ago for ten years. */
export interface CaSpec {
  /** basicConstraints cA; false makes a certificate that only claims to be a CA by its place in the chain. */
  readonly ca?: boolean;
  /** basicConstraints pathLenConstraint. */
  readonly pathLength?: number;
  /** keyUsage, openssl's words; default `keyCertSign, cRLSign`. */
  readonly keyUsage?: string;
  /** nameConstraints, openssl's words, e.g. `critical,permitted;DNS:.example.org`. */
  readonly nameConstraints?: string;
  readonly notBefore?: Date;
  readonly notAfter?: Date;
}

/** How a leaf is made; default: valid from an hour ago for a day. */
export interface LeafSpec {
  /** extendedKeyUsage. */
  readonly purpose: 'serverAuth' | 'clientAuth';
  /** subjectAltName dNSNames (a server's name), or a URI (a client's SPIFFE ID). */
  readonly dnsNames?: readonly string[];
  readonly uris?: readonly string[];
  readonly commonName: string;
  readonly notBefore?: Date;
  readonly notAfter?: Date;
}

const HOUR = 3_600_000;
/** openssl's GeneralizedTime argument, `YYYYMMDDHHMMSSZ`. */
const opensslTime = (d: Date) => `${d.toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`;

const CONFIG = (dir: string) => `
[ca]
default_ca = here
[here]
database = ${dir}/index.txt
new_certs_dir = ${dir}
serial = ${dir}/serial
default_md = sha256
policy = anything
unique_subject = no
copy_extensions = none
email_in_dn = no
[anything]
commonName = supplied
`;

/** Runs `use` with a fresh folder holding openssl ca's config and database, then removes it. */
async function inFolder<T>(use: (file: (name: string) => string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'openssl-chain-'));
  const file = (name: string) => join(dir, name);
  try {
    writeFileSync(file('ca.cnf'), CONFIG(dir));
    writeFileSync(file('index.txt'), '');
    // openssl 3.0 looks the serial file up even when -rand_serial makes the serial.
    writeFileSync(file('serial'), '01\n');
    return await use(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A P-256 key and a certificate for it, made by `openssl ca` with `extensions` (lines of an
 * openssl extension section), signed by `issuer` or, without one, by the new key itself.
 */
async function sign(subject: string, extensions: readonly string[], issuer: KeyPair | undefined, notBefore: Date, notAfter: Date): Promise<KeyPair> {
  return inFolder(async (file) => {
    writeFileSync(file('ext.cnf'), ['[ext]', ...extensions, ''].join('\n'));
    await run('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', file('key.pem')]);
    await run('openssl', ['req', '-new', '-key', file('key.pem'), '-subj', subject, '-out', file('req.csr')]);
    const signer = issuer === undefined ? ['-selfsign', '-keyfile', file('key.pem')] : ['-cert', file('issuer.crt'), '-keyfile', file('issuer.key')];
    if (issuer !== undefined) {
      writeFileSync(file('issuer.crt'), issuer.cert);
      writeFileSync(file('issuer.key'), issuer.key, { mode: 0o600 });
    }
    await run('openssl', [
      'ca',
      '-batch',
      '-notext',
      '-rand_serial',
      '-config',
      file('ca.cnf'),
      ...signer,
      '-in',
      file('req.csr'),
      '-out',
      file('cert.pem'),
      '-startdate',
      opensslTime(notBefore),
      '-enddate',
      opensslTime(notAfter),
      '-extfile',
      file('ext.cnf'),
      '-extensions',
      'ext',
    ]);
    return { cert: readFileSync(file('cert.pem'), 'utf8'), key: readFileSync(file('key.pem'), 'utf8') };
  });
}

function caExtensions(spec: CaSpec): string[] {
  const ca = spec.ca ?? true;
  const pathLength = ca && spec.pathLength !== undefined ? `,pathlen:${spec.pathLength}` : '';
  return [
    `basicConstraints = critical,CA:${ca ? 'TRUE' : 'FALSE'}${pathLength}`,
    `keyUsage = critical,${spec.keyUsage ?? 'keyCertSign, cRLSign'}`,
    'subjectKeyIdentifier = hash',
    'authorityKeyIdentifier = keyid',
    ...(spec.nameConstraints === undefined ? [] : [`nameConstraints = ${spec.nameConstraints}`]),
  ];
}

/** A self-signed root named `commonName`. */
export async function opensslRoot(commonName: string, spec: CaSpec = {}): Promise<OpensslCa> {
  const subject = `/CN=${commonName}`;
  const now = Date.now();
  const pair = await sign(subject, caExtensions(spec), undefined, spec.notBefore ?? new Date(now - HOUR), spec.notAfter ?? new Date(now + 3650 * 24 * HOUR));
  return { ...pair, subject };
}

/** An intermediate CA named `commonName`, signed by `issuer`. */
export async function opensslIntermediate(issuer: OpensslCa, commonName: string, spec: CaSpec = {}): Promise<OpensslCa> {
  const subject = `/CN=${commonName}`;
  const now = Date.now();
  const pair = await sign(subject, caExtensions(spec), issuer, spec.notBefore ?? new Date(now - HOUR), spec.notAfter ?? new Date(now + 365 * 24 * HOUR));
  return { ...pair, subject };
}

/** An end-entity certificate signed by `issuer`: digitalSignature, the purpose's extendedKeyUsage, its names. */
export async function opensslLeaf(issuer: OpensslCa, spec: LeafSpec): Promise<KeyPair> {
  const names = [...(spec.dnsNames ?? []).map((n) => `DNS:${n}`), ...(spec.uris ?? []).map((u) => `URI:${u}`)];
  const now = Date.now();
  return sign(
    `/CN=${spec.commonName}`,
    [
      'basicConstraints = critical,CA:FALSE',
      'keyUsage = critical,digitalSignature',
      `extendedKeyUsage = ${spec.purpose}`,
      'subjectKeyIdentifier = hash',
      'authorityKeyIdentifier = keyid',
      ...(names.length > 0 ? [`subjectAltName = ${names.join(',')}`] : []),
    ],
    issuer,
    spec.notBefore ?? new Date(now - HOUR),
    spec.notAfter ?? new Date(now + 24 * HOUR),
  );
}

/** tls.crt of `leaf` under `intermediates` (bottom up): the leaf, then each intermediate. */
export const chainPem = (leaf: KeyPair, intermediates: readonly KeyPair[]): string => [leaf.cert, ...intermediates.map((i) => i.cert)].join('');
