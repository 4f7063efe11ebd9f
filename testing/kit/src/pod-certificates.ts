// Pod certificates as the kubelet holds them, made with the openssl CLI (a second, independent
// certificate maker): a scratch ECDSA P-256 CA, leaves for every key type the kubelet can
// generate, and the folder a podCertificate plus clusterTrustBundle projection writes.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { credentialBundle } from '../../kubelet/pem-files.js';
import { p256Request, signRequest } from './openssl.js';
import { writeAtomically } from './demo.js';
import { TEST_CLIENT_SPIFFE_ID, TEST_SERVER_NAME, type KeyPair } from './pki.js';

const run = promisify(execFile);

/** The `keyType` values of a `podCertificate` projection: every key the kubelet can generate. */
export const POD_KEY_TYPES = ['RSA3072', 'RSA4096', 'ECDSAP256', 'ECDSAP384', 'ECDSAP521', 'ED25519'] as const;
/** One of {@link POD_KEY_TYPES}. */
export type PodKeyType = (typeof POD_KEY_TYPES)[number];

// `openssl genpkey` writes PKCS#8 (`PRIVATE KEY`), the encoding of the kubelet's credential bundle.
const GENPKEY: Record<PodKeyType, readonly string[]> = {
  RSA3072: ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:3072'],
  RSA4096: ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:4096'],
  ECDSAP256: ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'],
  ECDSAP384: ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-384'],
  ECDSAP521: ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-521'],
  ED25519: ['-algorithm', 'ED25519'],
};

/** Runs `work` in a fresh scratch folder, removed afterwards. */
async function inScratch<T>(work: (file: (name: string) => string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'pod-cert-'));
  try {
    return await work((name) => join(dir, name));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A scratch self-signed ECDSA P-256 CA, valid for `days` (two unless told). */
export function opensslP256Ca(commonName: string, days = 2): Promise<KeyPair> {
  return inScratch(async (file) => {
    const extensions = ['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'];
    await run('openssl', p256Request('self-signed', file('ca.key'), file('ca.crt'), `/CN=${commonName}`, '-days', String(days), ...extensions));
    return { cert: readFileSync(file('ca.crt'), 'utf8'), key: readFileSync(file('ca.key'), 'utf8') };
  });
}

/**
 * A leaf of `keyType` signed by `ca`: for `server`, EKU serverAuth and the DNS name tests dial;
 * for `client`, EKU clientAuth, CN external-secrets-core and the ESO SPIFFE ID, as the client
 * signer issues it. The key is PKCS#8, as the kubelet generates it.
 */
export function opensslPodLeaf(ca: KeyPair, keyType: PodKeyType, purpose: 'server' | 'client'): Promise<KeyPair> {
  return inScratch(async (file) => {
    writeFileSync(file('ca.crt'), ca.cert);
    writeFileSync(file('ca.key'), ca.key, { mode: 0o600 });
    const server = purpose === 'server';
    writeFileSync(
      file('ext.cnf'),
      [
        'basicConstraints = critical,CA:FALSE',
        'keyUsage = critical,digitalSignature',
        `extendedKeyUsage = ${server ? 'serverAuth' : 'clientAuth'}`,
        `subjectAltName = ${server ? `DNS:${TEST_SERVER_NAME}` : `URI:${TEST_CLIENT_SPIFFE_ID}`}`,
        'subjectKeyIdentifier = hash',
        'authorityKeyIdentifier = keyid',
        '',
      ].join('\n'),
    );
    await run('openssl', ['genpkey', ...GENPKEY[keyType], '-out', file('leaf.key')]);
    await run('openssl', [
      'req',
      '-new',
      '-key',
      file('leaf.key'),
      '-subj',
      server ? '/CN=pod-certificate' : '/CN=external-secrets-core',
      '-out',
      file('leaf.csr'),
    ]);
    // A random positive 128-bit serial: every leaf of a test run is told apart by it.
    const serial = `0x${(randomBytes(16)[0]! & 0x7f).toString(16).padStart(2, '0')}${randomBytes(15).toString('hex')}`;
    await run(
      'openssl',
      signRequest(
        file('leaf.csr'),
        file('ca.crt'),
        file('ca.key'),
        file('leaf.crt'),
        '-set_serial',
        serial,
        '-days',
        '1',
        '-sha256',
        '-extfile',
        file('ext.cnf'),
      ),
    );
    return { cert: readFileSync(file('leaf.crt'), 'utf8'), key: readFileSync(file('leaf.key'), 'utf8') };
  });
}

/** credentials.pem of `leaf` as the kubelet writes it (the test kubelet's writer): its PKCS#8 key, then its certificate. */
export const credentialsPem = (leaf: KeyPair): string => credentialBundle(leaf.key, leaf.cert);

/** The two files of a pod-certificate folder: the credential bundle and the projected trust anchors. */
export const podCertificateFiles = (bundle: string, caBundle: string) => ({ 'credentials.pem': bundle, 'ca.crt': caBundle });

/** A fresh folder holding `leaf`'s credential bundle and `caBundle`, written the kubelet's way (a `..data` symlink swap). */
export async function podCertificateDir(leaf: KeyPair, caBundle: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'pod-certificate-'));
  await writeAtomically(dir, podCertificateFiles(credentialsPem(leaf), caBundle));
  return dir;
}
