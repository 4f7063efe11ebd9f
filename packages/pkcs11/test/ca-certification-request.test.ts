import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type KeyAlgorithm, encodeCaCertificationRequest, isCertificationRequestSigned, readCertificationRequest } from '@eso-mtls/core';
import { type TestToken, createTestToken } from './support/softhsm.js';

describe('a CA certification request for a key held in a PKCS#11 token (SoftHSM2)', () => {
  let token: TestToken;
  beforeEach(() => {
    token = createTestToken();
  });
  afterEach(() => token.remove());

  test.each<KeyAlgorithm>(['ECDSA-P256', 'RSA-2048'])('%s: signed in the token, openssl req -verify accepts it', async (algorithm) => {
    const backend = token.backend();
    const key = await backend.caSigner.generateKey(algorithm);
    // Only a reference leaves the token; the request is signed where the key lives.
    expect(key.privateKeyPem).toMatch(/^pkcs11:/);
    const request = await encodeCaCertificationRequest({
      subject: { organizationName: 'Acme', commonName: 'eso-mtls provider CA intermediate' },
      subjectPublicKeyInfo: key.subjectPublicKeyInfo,
      sign: (data) => backend.caSigner.sign(key.privateKeyPem, data),
    });
    const file = join(token.dir, 'intermediate.csr');
    writeFileSync(file, request.pem);
    // OpenSSL 3.0 reports a bad self-signature on stderr and still exits 0: read both streams.
    const r = spawnSync('openssl', ['req', '-in', file, '-verify', '-noout', '-text'], { encoding: 'utf8' });
    const output = `${r.stdout}${r.stderr}`;
    expect(r.status).toBe(0);
    expect(output).toMatch(/self-signature verify OK/);
    expect(output).toMatch(/CA:TRUE, pathlen:0/);
    expect(output).toMatch(/Digital Signature, Certificate Sign, CRL Sign/);
    const view = readCertificationRequest(request.der);
    expect(Buffer.from(view.subjectPublicKeyInfo).equals(Buffer.from(backend.caSigner.publicKeyOf(key.privateKeyPem)))).toBe(true);
    expect(isCertificationRequestSigned(view, backend.verifier)).toBe(true);
  });
});
