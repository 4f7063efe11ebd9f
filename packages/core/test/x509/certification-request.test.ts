import { afterAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import {
  CertificationRequestError,
  type KeyAlgorithm,
  encodeCaCertificationRequest,
  isCertificationRequestSigned,
  parseCertificate,
  readCertificationRequest,
  verifyChain,
} from '@eso-mtls/core';
import { keyIdentifier } from '../../src/x509/tbs.js';
import { toHex } from '../../src/x509/der.js';
import { p256Request } from '@eso-mtls/test-kit/openssl';
import { nodeBackend, openssl, tempDir } from '../support/fixtures.js';

// OpenSSL (and Go's crypto/x509, below) read and verify what the core builds: encodings we did not
// write judge ours.
const crypto = nodeBackend();
const tmp = tempDir('csr');
afterAll(() => tmp.remove());
const SUBJECT = { countryName: 'DE', organizationName: 'Acme, Inc.', commonName: 'eso-mtls provider CA intermediate' };

/** `openssl req -verify`, with both streams: OpenSSL 3.0 reports a bad self-signature on stderr and still exits 0. */
function opensslReqVerify(file: string, ...extra: string[]): { readonly verified: boolean; readonly output: string } {
  const r = spawnSync('openssl', ['req', '-in', file, '-verify', '-noout', ...extra], { encoding: 'utf8' });
  const output = `${r.stdout}${r.stderr}`;
  return { verified: r.status === 0 && /self-signature verify OK/.test(output) && !/verify failure/.test(output), output };
}

/** A fresh key of `algorithm` and a CA request for it, signed by the node:crypto signer. */
async function requestFor(algorithm: KeyAlgorithm, options: { pathLenConstraint?: number | null } = {}) {
  const key = await crypto.signer.generateKey(algorithm);
  const request = await encodeCaCertificationRequest({
    subject: SUBJECT,
    subjectPublicKeyInfo: key.subjectPublicKeyInfo,
    sign: (data) => crypto.signer.sign(key.privateKeyPem, data),
    ...options,
  });
  return { key, request };
}

describe.each<KeyAlgorithm>(['ECDSA-P256', 'RSA-2048', 'RSA-3072'])('a CA request with a %s key', (algorithm) => {
  it('openssl req -verify accepts it and shows the subject, CA:TRUE pathlen 0 and the key usages', async () => {
    const { key, request } = await requestFor(algorithm);
    const file = tmp.write(`${algorithm}.csr`, request.pem);
    const r = opensslReqVerify(file, '-text', '-nameopt', 'RFC2253');
    expect(r.verified).toBe(true);
    expect(r.output).toContain('Subject: CN=eso-mtls provider CA intermediate,O=Acme\\, Inc.,C=DE');
    expect(r.output).toMatch(/X509v3 Basic Constraints: critical\s+CA:TRUE, pathlen:0/);
    expect(r.output).toMatch(/X509v3 Key Usage: critical\s+Digital Signature, Certificate Sign, CRL Sign/);
    expect(r.output).toContain(
      `X509v3 Subject Key Identifier: \n                    ${toHex(keyIdentifier(key.subjectPublicKeyInfo))
        .toUpperCase()
        .replace(/(..)(?!$)/g, '$1:')}`,
    );
    expect(r.output).toMatch(algorithm === 'ECDSA-P256' ? /Signature Algorithm: ecdsa-with-SHA256/ : /Signature Algorithm: sha256WithRSAEncryption/);
  });

  it('reads back: subject, key, requested extensions, and the signature checks out', async () => {
    const { key, request } = await requestFor(algorithm);
    const view = readCertificationRequest(request.pem);
    expect(view).toMatchObject({
      subject: 'CN=eso-mtls provider CA intermediate,O=Acme\\, Inc.,C=DE',
      subjectCommonName: 'eso-mtls provider CA intermediate',
      isCa: true,
      pathLenConstraint: 0,
      keyUsage: ['digitalSignature', 'keyCertSign', 'cRLSign'],
      subjectKeyIdentifier: toHex(keyIdentifier(key.subjectPublicKeyInfo)),
    });
    expect(view.extensions.map((e) => [e.extnID, e.critical])).toEqual([
      ['2.5.29.19', true],
      ['2.5.29.15', true],
      ['2.5.29.14', false],
    ]);
    expect(Buffer.from(view.subjectPublicKeyInfo).equals(Buffer.from(key.subjectPublicKeyInfo))).toBe(true);
    expect(isCertificationRequestSigned(view, crypto.verifier)).toBe(true);
    expect(readCertificationRequest(request.der).subject).toBe(view.subject);
  });
});

describe('encodeCaCertificationRequest', () => {
  it('asks for no pathLenConstraint when given null, and another when given one', async () => {
    const none = (await requestFor('ECDSA-P256', { pathLenConstraint: null })).request;
    const one = (await requestFor('ECDSA-P256', { pathLenConstraint: 1 })).request;
    expect(readCertificationRequest(none.der)).toMatchObject({ isCa: true, pathLenConstraint: undefined });
    expect(readCertificationRequest(one.der)).toMatchObject({ isCa: true, pathLenConstraint: 1 });
    const text = openssl(['req', '-in', tmp.write('none.csr', none.pem), '-noout', '-text']).output;
    expect(text).toMatch(/CA:TRUE\n/);
  });

  it('a request signed by another key fails openssl -verify and our check', async () => {
    const other = await crypto.signer.generateKey('ECDSA-P256');
    const key = await crypto.signer.generateKey('ECDSA-P256');
    const forged = await encodeCaCertificationRequest({
      subject: SUBJECT,
      subjectPublicKeyInfo: key.subjectPublicKeyInfo,
      sign: (data) => crypto.signer.sign(other.privateKeyPem, data),
    });
    const r = opensslReqVerify(tmp.write('forged.csr', forged.pem));
    expect(r.verified).toBe(false);
    expect(r.output).toMatch(/self-signature verify failure/);
    expect(isCertificationRequestSigned(readCertificationRequest(forged.der), crypto.verifier)).toBe(false);
  });

  it('refuses a subject it cannot encode, naming the attribute', async () => {
    const key = await crypto.signer.generateKey('ECDSA-P256');
    const build = (subject: Parameters<typeof encodeCaCertificationRequest>[0]['subject']) =>
      encodeCaCertificationRequest({ subject, subjectPublicKeyInfo: key.subjectPublicKeyInfo, sign: (d) => crypto.signer.sign(key.privateKeyPem, d) });
    await expect(build({ countryName: 'Germany', commonName: 'x' })).rejects.toThrow(/countryName "Germany" is not two capital letters/);
    await expect(build({ commonName: 'x'.repeat(65) })).rejects.toThrow(/commonName "x{65}" is not 1 to 64 characters/);
  });

  it('the certificate openssl signs from it (copying its extensions) verifies as an intermediate under that root', async () => {
    const { request } = await requestFor('ECDSA-P256');
    const dir = tmp.dir;
    const run = (args: string[]): void => {
      const r = openssl(args);
      if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.output}`);
    };
    const rootExt = ['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'];
    run(p256Request('self-signed', `${dir}/root.key`, `${dir}/root.pem`, '/O=Acme/CN=Acme Root', '-days', '30', ...rootExt));
    const ext = tmp.write('aki.ext', 'authorityKeyIdentifier = keyid:always\n');
    run([
      'x509',
      '-req',
      '-in',
      tmp.write('copy.csr', request.pem),
      '-CA',
      `${dir}/root.pem`,
      '-CAkey',
      `${dir}/root.key`,
      '-out',
      `${dir}/int.pem`,
      '-days',
      '10',
      '-copy_extensions',
      'copyall',
      '-extfile',
      ext,
    ]);
    const root = parseCertificate(readFileSync(`${dir}/root.pem`, 'utf8'));
    const intermediate = parseCertificate(readFileSync(`${dir}/int.pem`, 'utf8'));
    expect(intermediate).toMatchObject({ isCa: true, pathLenConstraint: 0, subject: 'CN=eso-mtls provider CA intermediate,O=Acme\\, Inc.,C=DE' });
    const result = verifyChain({ chain: [intermediate], anchors: [root], at: intermediate.notBefore + 1000, verifier: crypto.verifier });
    expect(result).toMatchObject({ ok: true, path: [intermediate, root] });
  });
});

describe('readCertificationRequest', () => {
  it('refuses what is not one request, saying so', () => {
    expect(() => readCertificationRequest('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n')).toThrow(CertificationRequestError);
    expect(() => readCertificationRequest(Uint8Array.of(0x30, 0x03, 0x02, 0x01))).toThrow(/not a well-formed PKCS#10 certification request/);
  });
});

// Go's crypto/x509 is the parser of cert-manager and of Kubernetes: a program of the standard
// library alone, run from a temporary folder (no module to download; Go's build cache keeps
// repeats to a link step).
const GO_PROGRAM = `package main

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
)

func main() {
	data, _ := os.ReadFile(os.Args[1])
	block, _ := pem.Decode(data)
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	if err := csr.CheckSignature(); err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	exts := []string{}
	for _, e := range csr.Extensions {
		exts = append(exts, fmt.Sprintf("%s critical=%v", e.Id, e.Critical))
	}
	out, _ := json.Marshal(map[string]any{"subject": csr.Subject.String(), "algorithm": csr.SignatureAlgorithm.String(), "extensions": exts})
	fmt.Println(string(out))
}
`;

const hasGo = ((): boolean => {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe('Go crypto/x509', () => {
  // Go is part of the project's test tools (testing/go-interop); skip rather than fail where it is absent.
  (hasGo ? it : it.skip)('parses each request and checks its signature', async () => {
    const program = tmp.write('csr.go', GO_PROGRAM);
    const binary = `${tmp.dir}/csr-check`;
    execFileSync('go', ['build', '-o', binary, program], { cwd: tmp.dir, stdio: 'pipe', env: { ...process.env, GO111MODULE: 'off' } });
    for (const algorithm of ['ECDSA-P256', 'RSA-2048'] as const) {
      const { request } = await requestFor(algorithm);
      const out = JSON.parse(execFileSync(binary, [tmp.write(`go-${algorithm}.csr`, request.pem)], { encoding: 'utf8' })) as Record<string, unknown>;
      expect(out).toEqual({
        subject: 'CN=eso-mtls provider CA intermediate,O=Acme\\, Inc.,C=DE',
        algorithm: algorithm === 'ECDSA-P256' ? 'ECDSA-SHA256' : 'SHA256-RSA',
        extensions: ['2.5.29.19 critical=true', '2.5.29.15 critical=true', '2.5.29.14 critical=false'],
      });
    }
  });
});
