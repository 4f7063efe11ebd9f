// The CertificateRequest we create, as design 35 fixes it: the name from the key, our labels, the
// installation, isCA, the CA usages, the issuer and the duration as Go reads it.
import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { CertificationRequestError, days, encodeCaCertificationRequest, hours, minutes, seconds } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { caRequestName } from '@eso-mtls/core';
import { caRequestManifest, caRequestPath, goDuration } from '../../src/upstream/certificate-requests.js';

const crypto = createNodeCryptoBackend();

describe('the CA CertificateRequest', () => {
  it('is named from the SHA-256 of the key, and asks for a CA of that key with the CA usages', async () => {
    const key = await crypto.signer.generateKey('ECDSA-P256');
    const csr = await encodeCaCertificationRequest({
      subject: { commonName: 'intermediate' },
      subjectPublicKeyInfo: key.subjectPublicKeyInfo,
      sign: (d) => crypto.signer.sign(key.privateKeyPem, d),
    });
    const name = `eso-mtls-ca-${createHash('sha256').update(key.subjectPublicKeyInfo).digest('hex').slice(0, 10)}`;
    expect(caRequestName(key.subjectPublicKeyInfo)).toBe(name);
    expect(
      caRequestManifest({
        namespace: 'eso',
        installation: 'eso/eso-provider-ca-internal',
        csrPem: csr.pem,
        issuer: { kind: 'ClusterIssuer', name: 'org', group: 'cert-manager.io' },
        duration: days(365),
      }),
    ).toEqual({
      apiVersion: 'cert-manager.io/v1',
      kind: 'CertificateRequest',
      metadata: {
        name,
        namespace: 'eso',
        labels: { 'app.kubernetes.io/managed-by': 'eso-mtls', 'eso-mtls.io/ca-request': 'true' },
        annotations: { 'eso-mtls.io/installation': 'eso/eso-provider-ca-internal' },
      },
      spec: {
        request: Buffer.from(csr.pem).toString('base64'),
        isCA: true,
        usages: ['cert sign', 'crl sign', 'digital signature'],
        issuerRef: { name: 'org', kind: 'ClusterIssuer', group: 'cert-manager.io' },
        duration: '8760h0m0s',
      },
    });
    // No duration asked: the issuer's default.
    expect(
      caRequestManifest({ namespace: 'eso', installation: 'i', csrPem: csr.pem, issuer: { kind: 'Issuer', name: 'x', group: 'example.com' } }).spec,
    ).not.toHaveProperty('duration');
  });

  it('refuses a CSR the core cannot read, by its error', () => {
    expect(() =>
      caRequestManifest({ namespace: 'eso', installation: 'i', csrPem: 'not a CSR', issuer: { kind: 'Issuer', name: 'x', group: 'cert-manager.io' } }),
    ).toThrow(CertificationRequestError);
  });

  it('writes durations as Go parses them, in whole seconds', () => {
    expect(goDuration(days(30))).toBe('720h0m0s');
    expect(goDuration(hours(1) + minutes(2) + seconds(3) + 999)).toBe('1h2m3s');
    expect(() => goDuration(999)).toThrow(RangeError);
    expect(() => goDuration(Number.NaN)).toThrow('at least one second');
  });

  it('lives under cert-manager.io/v1 in its namespace', () => {
    expect(caRequestPath('eso')).toBe('/apis/cert-manager.io/v1/namespaces/eso/certificaterequests');
    expect(caRequestPath('eso', 'eso-mtls-ca-0123456789')).toBe('/apis/cert-manager.io/v1/namespaces/eso/certificaterequests/eso-mtls-ca-0123456789');
  });
});
