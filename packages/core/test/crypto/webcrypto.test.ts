import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { X509Certificate, createPrivateKey, webcrypto } from 'node:crypto';
import { Crypto as PeculiarCrypto } from '@peculiar/webcrypto';
import {
  type CryptoBackend,
  type KeyAlgorithm,
  type WebCryptoLike,
  CertificateCache,
  createWebCryptoSigner,
  issueCa,
  issueServerLeaf,
  observeLeafSecret,
  resolvePolicy,
  webCryptoRandom,
} from '@eso-mtls/core';
import { ecdsaSignatureToDer } from '../../src/crypto/webcrypto.js';
import { NOW, nodeBackend, openssl, tempDir } from '../support/fixtures.js';

const node = nodeBackend();
const implementations: [string, WebCryptoLike][] = [
  ['Node crypto.webcrypto', webcrypto],
  ['@peculiar/webcrypto Crypto', new PeculiarCrypto()],
];

describe.each(implementations)('createWebCryptoSigner over %s', (_name, impl) => {
  const backend: CryptoBackend = { signer: createWebCryptoSigner(impl), verifier: node.verifier, random: webCryptoRandom(impl) };

  it.each<KeyAlgorithm>(['ECDSA-P256', 'RSA-2048'])('issues a %s chain that OpenSSL and Node verify', async (keyAlgorithm) => {
    const ctx = { crypto: backend, policy: resolvePolicy({ keyAlgorithm }), now: Date.now() };
    const ca = await issueCa(ctx);
    const leaf = await issueServerLeaf(ctx, ca, ['provider', 'provider.ns']);
    const leafX = new X509Certificate(leaf.certificate.pem);
    expect(leafX.verify(new X509Certificate(ca.certificate.pem).publicKey)).toBe(true);
    expect(leafX.checkPrivateKey(createPrivateKey(leaf.privateKeyPem))).toBe(true);
    const tmp = tempDir('webcrypto');
    try {
      const r = openssl([
        'verify',
        '-x509_strict',
        '-CAfile',
        tmp.write('ca.pem', ca.certificate.pem),
        '-purpose',
        'sslserver',
        tmp.write('leaf.pem', leaf.certificate.pem),
      ]);
      expect(r.output).toMatch(/: OK/);
    } finally {
      tmp.remove();
    }
    // The key it stores is an ordinary PKCS#8 PEM: the Secret it would land in observes as valid.
    const observed = observeLeafSecret(
      { 'tls.crt': leaf.certificate.pem, 'tls.key': leaf.privateKeyPem, 'ca.crt': ca.certificate.pem },
      new CertificateCache(node.verifier),
    );
    expect(observed.leaf.ok && observed.bundle.ok).toBe(true);
  });

  it('signs with keys the node:crypto signer made, and the reverse', async () => {
    const policy = resolvePolicy();
    const nodeCa = await issueCa({ crypto: node, policy, now: NOW });
    const leaf = await issueServerLeaf({ crypto: backend, policy, now: NOW }, nodeCa, ['provider']);
    expect(new CertificateCache(node.verifier).isSignedBy(leaf.certificate, nodeCa.certificate)).toBe(true);
    const webCa = await issueCa({ crypto: backend, policy, now: NOW });
    const leaf2 = await issueServerLeaf({ crypto: node, policy, now: NOW }, webCa, ['provider']);
    expect(new CertificateCache(node.verifier).isSignedBy(leaf2.certificate, webCa.certificate)).toBe(true);
  });

  it('refuses keys it cannot use, saying why', async () => {
    const signer = createWebCryptoSigner(impl);
    await expect(signer.sign('not pem', Uint8Array.of(1))).rejects.toThrow(/outside any PEM block/);
    const certificate = (await issueCa({ crypto: node, policy: resolvePolicy(), now: NOW })).certificate.pem;
    await expect(signer.sign(certificate, Uint8Array.of(1))).rejects.toThrow(/expected a PKCS#8 "PRIVATE KEY" PEM block, found "CERTIFICATE"/);
    await expect(signer.generateKey('DSA' as KeyAlgorithm)).rejects.toThrow(/unsupported key algorithm "DSA"/);
  });
});

describe('ecdsaSignatureToDer', () => {
  it('encodes r || s as two minimal, positive DER INTEGERs that decode back to r and s', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.uint8Array({ minLength: 32, maxLength: 32 }), (r, s) => {
        const der = ecdsaSignatureToDer(Uint8Array.from([...r, ...s]));
        const back = new Uint8Array(64);
        let at = 2;
        for (const half of [0, 32]) {
          const len = der[at + 1]!;
          const body = der.subarray(at + 2, at + 2 + len);
          expect(body.length === 1 || body[0] !== 0 || (body[1]! & 0x80) !== 0).toBe(true); // minimal
          expect(body[0]! & 0x80).toBe(0); // positive
          const magnitude = body[0] === 0 && body.length > 1 ? body.subarray(1) : body;
          back.set(magnitude, half + 32 - magnitude.length);
          at += 2 + len;
        }
        expect(at).toBe(der.length);
        expect(Buffer.from(back).equals(Buffer.from([...r, ...s]))).toBe(true);
      }),
    );
  });
});

describe('webCryptoRandom', () => {
  it('returns the requested number of fresh bytes', () => {
    const random = webCryptoRandom(webcrypto);
    expect(random(16)).toHaveLength(16);
    expect(Buffer.from(random(16)).equals(Buffer.from(random(16)))).toBe(false);
  });
});
