import { describe, expect, it } from '@jest/globals';
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { createNodeCryptoBackend, createNodeSigner, createNodeVerifier, nodeRandom } from '@eso-mtls/core/node';
import type { KeyAlgorithm } from '@eso-mtls/core';

describe('createNodeSigner', () => {
  it('keeps the event loop turning while an RSA key is generated', async () => {
    // With a blocking keygen no immediate could run before it resolves; the thread pool lets them.
    const signer = createNodeSigner();
    let turns = 0;
    let done = false;
    const spin = (): void => {
      if (done) return;
      turns++;
      setImmediate(spin);
    };
    setImmediate(spin);
    const key = await signer.generateKey('RSA-2048');
    done = true;
    expect(turns).toBeGreaterThan(1);
    expect(key.privateKeyPem.startsWith('-----BEGIN PRIVATE KEY-----')).toBe(true);
  });

  it('keeps the event loop turning while RSA signs', async () => {
    const signer = createNodeSigner();
    const key = await signer.generateKey('RSA-3072');
    let turns = 0;
    let done = false;
    const spin = (): void => {
      if (done) return;
      turns++;
      setImmediate(spin);
    };
    setImmediate(spin);
    const signatures = await Promise.all(Array.from({ length: 20 }, (_, i) => signer.sign(key.privateKeyPem, Uint8Array.of(i))));
    done = true;
    expect(turns).toBeGreaterThan(1);
    expect(signatures.every((s) => s.length === 384)).toBe(true);
  });

  it.each<[KeyAlgorithm, string, object]>([
    ['ECDSA-P256', 'ec', { namedCurve: 'prime256v1' }],
    ['RSA-2048', 'rsa', { modulusLength: 2048, publicExponent: 65537n }],
  ])('generates %s keys as SPKI DER + PKCS#8 PEM whose signatures verify', async (algorithm, type, details) => {
    const backend = createNodeCryptoBackend();
    const key = await backend.signer.generateKey(algorithm);
    const publicKey = createPublicKey({ key: Buffer.from(key.subjectPublicKeyInfo), format: 'der', type: 'spki' });
    expect(publicKey.asymmetricKeyType).toBe(type);
    expect(publicKey.asymmetricKeyDetails).toMatchObject(details);
    const data = Uint8Array.of(1, 2, 3);
    const signature = await backend.signer.sign(key.privateKeyPem, data);
    const oid = type === 'ec' ? '1.2.840.10045.4.3.2' : '1.2.840.113549.1.1.11';
    expect(backend.verifier.verify(key.subjectPublicKeyInfo, oid, data, signature)).toBe(true);
    expect(backend.verifier.verify(key.subjectPublicKeyInfo, oid, Uint8Array.of(1, 2, 4), signature)).toBe(false);
    expect(Buffer.from(backend.verifier.publicKeyOf(key.privateKeyPem)!).equals(Buffer.from(key.subjectPublicKeyInfo))).toBe(true);
  });

  it('rejects an unreadable signing key or unknown algorithm with a clear error', async () => {
    const signer = createNodeSigner();
    await expect(signer.sign('garbage', Uint8Array.of(1))).rejects.toThrow(/cannot read the signing key/);
    await expect(signer.generateKey('ED448' as KeyAlgorithm)).rejects.toThrow(/unsupported key algorithm "ED448"/);
  });
});

describe('createNodeVerifier', () => {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const spki = new Uint8Array(publicKey.export({ type: 'spki', format: 'der' }));
  const data = Uint8Array.of(9, 9, 9);
  const signature = new Uint8Array(sign('sha256', data, privateKey));

  it('returns false, never throws, on unknown algorithms and garbage keys', () => {
    const verifier = createNodeVerifier();
    expect(verifier.verify(spki, '1.2.840.10045.4.3.2', data, signature)).toBe(true);
    expect(verifier.verify(spki, '1.2.840.113549.1.1.10', data, signature)).toBe(false); // RSA-PSS: not accepted
    expect(verifier.verify(Uint8Array.of(1, 2, 3), '1.2.840.10045.4.3.2', data, signature)).toBe(false);
    expect(verifier.verify(spki, '1.2.840.10045.4.3.2', data, Uint8Array.of(0))).toBe(false);
  });

  it('reads the public half of private keys only', () => {
    const verifier = createNodeVerifier();
    const pkcs8 = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    const sec1 = privateKey.export({ type: 'sec1', format: 'pem' }) as string;
    expect(Buffer.from(verifier.publicKeyOf(pkcs8)!).equals(Buffer.from(spki))).toBe(true);
    expect(Buffer.from(verifier.publicKeyOf(sec1)!).equals(Buffer.from(spki))).toBe(true);
    expect(verifier.publicKeyOf(publicKey.export({ type: 'spki', format: 'pem' }) as string)).toBeUndefined();
    expect(verifier.publicKeyOf('')).toBeUndefined();
  });
});

describe('createNodeVerifier.publicKeyOf: derived from the private key, not read from beside it', () => {
  const verifier = createNodeVerifier();

  it('notices an EC private scalar corrupted while the stored public point is intact', () => {
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const spki = publicKey.export({ type: 'spki', format: 'der' });
    const der = privateKey.export({ type: 'pkcs8', format: 'der' });
    const d = Buffer.from(privateKey.export({ format: 'jwk' }).d!, 'base64url');
    const bad = Buffer.from(der);
    bad[der.indexOf(d) + 7]! ^= 0x01;
    const badPem = `-----BEGIN PRIVATE KEY-----\n${bad.toString('base64')}\n-----END PRIVATE KEY-----\n`;
    // OpenSSL itself is fooled: it trusts the stored point.
    expect(createPublicKey(badPem).export({ type: 'spki', format: 'der' }).equals(spki)).toBe(true);
    expect(Buffer.from(verifier.publicKeyOf(badPem)!).equals(spki)).toBe(false);
  });

  it('notices RSA private parts that do not belong to the modulus', () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const jwk = privateKey.export({ format: 'jwk' });
    const other = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'jwk' });
    const mixed = createPrivateKey({ key: { ...other, n: jwk.n, e: jwk.e }, format: 'jwk' }).export({ type: 'pkcs8', format: 'pem' }) as string;
    expect(verifier.publicKeyOf(mixed)).toBeUndefined();
    expect(verifier.publicKeyOf(privateKey.export({ type: 'pkcs8', format: 'pem' }) as string)).toBeDefined();
  });

  it('still reads keys on other curves, and refuses PEM holding more than one block', () => {
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-384' });
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    expect(Buffer.from(verifier.publicKeyOf(pem)!).equals(publicKey.export({ type: 'spki', format: 'der' }))).toBe(true);
    expect(verifier.publicKeyOf(pem + pem)).toBeUndefined();
  });
});

describe('nodeRandom', () => {
  it('returns fresh bytes of the requested length', () => {
    expect(nodeRandom(20)).toHaveLength(20);
    expect(Buffer.from(nodeRandom(16)).equals(Buffer.from(nodeRandom(16)))).toBe(false);
  });
});
