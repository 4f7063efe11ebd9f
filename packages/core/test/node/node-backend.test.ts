import { describe, expect, it } from '@jest/globals';
import { createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { cpuQuotaCores, createNodeCryptoBackend, createNodeSigner, createNodeVerifier, defaultKeyGenerationConcurrency, nodeRandom } from '@eso-mtls/core/node';
import type { KeyAlgorithm } from '@eso-mtls/core';

/** Counts turns of the event loop until the returned function stops the count and returns it. */
function countLoopTurns(): () => number {
  let turns = 0;
  let done = false;
  const spin = (): void => {
    if (done) return;
    turns++;
    setImmediate(spin);
  };
  setImmediate(spin);
  return () => {
    done = true;
    return turns;
  };
}

describe('createNodeSigner', () => {
  it('keeps the event loop turning while an RSA key is generated', async () => {
    // With a blocking keygen no immediate could run before it resolves; the thread pool lets them.
    const signer = createNodeSigner();
    const stopCounting = countLoopTurns();
    const key = await signer.generateKey('RSA-2048');
    const turns = stopCounting();
    expect(turns).toBeGreaterThan(1);
    expect(key.privateKeyPem.startsWith('-----BEGIN PRIVATE KEY-----')).toBe(true);
  });

  it('keeps the event loop turning while RSA signs', async () => {
    const signer = createNodeSigner();
    const key = await signer.generateKey('RSA-3072');
    const stopCounting = countLoopTurns();
    // Enough signatures to outlast a turn of the loop on a loaded machine (CI once saw 20 finish within one).
    const signatures = await Promise.all(Array.from({ length: 200 }, (_, i) => signer.sign(key.privateKeyPem, Uint8Array.of(i % 256))));
    const turns = stopCounting();
    expect(turns).toBeGreaterThan(1);
    expect(signatures.every((s) => s.length === 384)).toBe(true);
  });

  it('limits concurrent key generations, so an RSA signature is not queued behind every pending key', async () => {
    // libuv's pool has 4 threads. Unlimited, 6 queued keygens take all 4 and the signature waits
    // behind the other 2, for at least 2 keys; one keygen at a time leaves it a free thread at once.
    const signer = createNodeSigner({ keyGenerationConcurrency: 1 });
    const caKey = await signer.generateKey('RSA-2048');
    let keysDone = 0;
    const keys = Array.from({ length: 6 }, () =>
      signer.generateKey('RSA-2048').then((k) => {
        keysDone++;
        return k;
      }),
    );
    await signer.sign(caKey.privateKeyPem, Uint8Array.of(1));
    const keysDoneAtSignature = keysDone;
    await Promise.all(keys);
    expect(keysDoneAtSignature).toBeLessThanOrEqual(1);
    expect(keysDone).toBe(6);
  }, 60_000);

  it('runs no more keygens than CPUs and leaves a pool thread to others by default, and refuses a limit below 1', () => {
    expect(
      [
        [1, 4],
        [2, 4],
        [4, 4],
        [8, 4],
        [16, 64],
        [2, 1],
      ].map(([cores, pool]) => defaultKeyGenerationConcurrency(cores, pool)),
    ).toEqual([1, 2, 3, 3, 16, 1]);
    expect(() => createNodeSigner({ keyGenerationConcurrency: 0 })).toThrow(
      'keyGenerationConcurrency must be a positive integer, got 0; leave it unset for the number of CPUs, at most one less than UV_THREADPOOL_SIZE',
    );
    expect(() => createNodeSigner({ keyGenerationConcurrency: 1.5 })).toThrow(RangeError);
  });

  it("counts a cgroup CPU quota (a pod's limits.cpu) as the CPUs it may use, rounded up", () => {
    const files =
      (entries: Record<string, string>) =>
      (path: string): string => {
        if (!(path in entries)) throw new Error(`ENOENT: ${path}`);
        return entries[path]!;
      };
    expect(cpuQuotaCores(files({ '/sys/fs/cgroup/cpu.max': '100000 100000\n' }))).toBe(1);
    expect(cpuQuotaCores(files({ '/sys/fs/cgroup/cpu.max': '150000 100000\n' }))).toBe(2);
    expect(cpuQuotaCores(files({ '/sys/fs/cgroup/cpu.max': 'max 100000\n' }))).toBeUndefined();
    expect(cpuQuotaCores(files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '50000\n', '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n' }))).toBe(1);
    expect(cpuQuotaCores(files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '-1\n', '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n' }))).toBeUndefined();
    expect(cpuQuotaCores(files({}))).toBeUndefined();
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
    const n = Buffer.from(privateKey.export({ format: 'jwk' }).n!, 'base64url');
    // Another key's private parts under this key's modulus, spliced in the DER (both moduli are
    // 1024 bits, so the lengths hold): Node 26 refuses to import such a key from JWK.
    const other = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey;
    const otherDer = other.export({ type: 'pkcs8', format: 'der' });
    const mixedDer = Buffer.from(otherDer);
    n.copy(mixedDer, otherDer.indexOf(Buffer.from(other.export({ format: 'jwk' }).n!, 'base64url')));
    const mixed = `-----BEGIN PRIVATE KEY-----\n${mixedDer.toString('base64')}\n-----END PRIVATE KEY-----\n`;
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
