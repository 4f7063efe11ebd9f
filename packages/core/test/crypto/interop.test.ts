import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate, createPrivateKey, webcrypto } from 'node:crypto';
import * as pkijs from 'pkijs';
import { type Issued, type KeyAlgorithm, days, issueCa, issueClientLeaf, issueServerLeaf, resolvePolicy } from '@eso-mtls/core';
import { nodeBackend, openssl, tempDir } from '../support/fixtures.js';

// Every check here is made by code we did not write: OpenSSL's verifier, Node's X509Certificate
// and pkijs's chain validation engine. Certificates are issued at the real time so that each
// tool's default "now" falls inside their validity.
const crypto = nodeBackend();
const NAMES = ['provider', 'provider.team-a', 'provider.team-a.svc', 'provider.team-a.svc.cluster.local'];
const SPIFFE = 'spiffe://cluster.local/ns/external-secrets-system/sa/external-secrets';
const tmp = tempDir('interop');
afterAll(() => tmp.remove());

pkijs.setEngine('node-webcrypto', new pkijs.CryptoEngine({ name: 'node-webcrypto', crypto: webcrypto as unknown as pkijs.CryptoEngineParameters['crypto'] }));

/** `openssl verify -x509_strict` of `leaf` against `ca` for a purpose; true when it passes. */
function opensslVerify(ca: Issued, leaf: Issued, purpose: 'sslserver' | 'sslclient', atSeconds?: number): { ok: boolean; output: string } {
  const caFile = tmp.write(`ca-${ca.certificate.serialNumber}.pem`, ca.certificate.pem);
  const leafFile = tmp.write(`leaf-${leaf.certificate.serialNumber}.pem`, leaf.certificate.pem);
  const at = atSeconds === undefined ? [] : ['-attime', String(atSeconds)];
  const r = openssl(['verify', '-x509_strict', ...at, '-CAfile', caFile, '-purpose', purpose, leafFile]);
  return { ok: r.status === 0 && /: OK\s*$/.test(r.output), output: r.output };
}

/** pkijs's CertificateChainValidationEngine (signatures, dates, basic constraints). */
async function pkijsValidates(ca: Issued, leaf: Issued, checkDate = new Date()): Promise<boolean> {
  const parse = (i: Issued): pkijs.Certificate => pkijs.Certificate.fromBER(Uint8Array.from(i.certificate.der));
  const engine = new pkijs.CertificateChainValidationEngine({ trustedCerts: [parse(ca)], certs: [parse(leaf)], checkDate });
  return (await engine.verify()).result;
}

describe.each<KeyAlgorithm>(['ECDSA-P256', 'RSA-2048', 'RSA-3072'])('%s', (keyAlgorithm) => {
  const ctx = () => ({ crypto, policy: resolvePolicy({ keyAlgorithm }), now: Date.now() });
  let ca: Issued;
  let server: Issued;
  let client: Issued;
  beforeAll(async () => {
    ca = await issueCa(ctx());
    [server, client] = await Promise.all([issueServerLeaf(ctx(), ca, NAMES), issueClientLeaf(ctx(), ca)]);
  });

  it('openssl verify -x509_strict: the server leaf passes sslserver and fails sslclient', () => {
    expect(opensslVerify(ca, server, 'sslserver')).toEqual({ ok: true, output: expect.stringContaining('OK') });
    const wrong = opensslVerify(ca, server, 'sslclient');
    expect(wrong.ok).toBe(false);
    expect(wrong.output).toMatch(/unsuitable certificate purpose/);
  });

  it('openssl verify -x509_strict: the client leaf passes sslclient and fails sslserver', () => {
    expect(opensslVerify(ca, client, 'sslclient').ok).toBe(true);
    const wrong = opensslVerify(ca, client, 'sslserver');
    expect(wrong.ok).toBe(false);
    expect(wrong.output).toMatch(/unsuitable certificate purpose/);
  });

  it('openssl verify rejects the leaves under another CA with the same kind of key', async () => {
    const other = await issueCa(ctx(), { commonName: ca.certificate.subjectCommonName! });
    expect(opensslVerify(other, server, 'sslserver').ok).toBe(false);
  });

  it('Node X509Certificate agrees: checkIssued, verify, checkHost for each SAN, checkPrivateKey', () => {
    const caX = new X509Certificate(ca.certificate.pem);
    const serverX = new X509Certificate(server.certificate.pem);
    const clientX = new X509Certificate(client.certificate.pem);
    expect(caX.ca).toBe(true);
    expect(caX.verify(caX.publicKey)).toBe(true);
    for (const leaf of [serverX, clientX]) {
      expect(leaf.ca).toBe(false);
      expect(leaf.checkIssued(caX)).toBe(true);
      expect(leaf.verify(caX.publicKey)).toBe(true);
    }
    for (const name of NAMES) expect(serverX.checkHost(name)).toBe(name);
    expect(serverX.checkHost('other.team-a.svc')).toBeUndefined();
    expect(clientX.subjectAltName).toBe(`URI:${SPIFFE}`);
    expect(serverX.checkPrivateKey(createPrivateKey(server.privateKeyPem))).toBe(true);
    expect(clientX.checkPrivateKey(createPrivateKey(client.privateKeyPem))).toBe(true);
    expect(serverX.checkPrivateKey(createPrivateKey(client.privateKeyPem))).toBe(false);
    expect(serverX.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(clientX.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
  });

  it('pkijs CertificateChainValidationEngine validates both leaves, and not under a rogue CA', async () => {
    expect(await pkijsValidates(ca, server)).toBe(true);
    expect(await pkijsValidates(ca, client)).toBe(true);
    const rogue = await issueCa(ctx(), { commonName: ca.certificate.subjectCommonName! });
    expect(await pkijsValidates(rogue, server)).toBe(false);
  });
});

describe('serial numbers, as OpenSSL and Node read them', () => {
  it('are distinct, positive and at most 20 octets over 200 issues, every random bit varying', async () => {
    const ctx = { crypto, policy: resolvePolicy(), now: Date.now() };
    const ca = await issueCa(ctx);
    const serials: string[] = [];
    for (let i = 0; i < 200; i++) {
      const leaf = await issueServerLeaf(ctx, ca, ['provider']);
      serials.push(new X509Certificate(leaf.certificate.pem).serialNumber.toLowerCase());
    }
    expect(new Set(serials).size).toBe(200);
    let ones = 0n;
    let zeros = 0n;
    for (const hex of serials) {
      expect(hex.length / 2).toBeLessThanOrEqual(20);
      expect(parseInt(hex.slice(0, 2), 16)).toBeLessThan(0x80); // positive: the top bit of the first octet is clear
      const value = BigInt(`0x${hex}`);
      ones |= value;
      zeros |= ~value & ((1n << 126n) - 1n);
    }
    // All 126 random bits were seen both set and clear: no bit is stuck.
    expect(ones & ((1n << 126n) - 1n)).toBe((1n << 126n) - 1n);
    expect(zeros).toBe((1n << 126n) - 1n);
    const text = openssl(['x509', '-noout', '-serial', '-in', tmp.write('serial.pem', (await issueServerLeaf(ctx, ca, ['p'])).certificate.pem)]).output;
    expect(text).toMatch(/^serial=[0-9A-F]{32}\s*$/);
  });
});

describe('notAfter clamping, as OpenSSL and Node read it', () => {
  it('ends a leaf issued late in the CA life with the CA, and the chain still verifies', async () => {
    const policy = resolvePolicy();
    const caNow = Date.now();
    const ca = await issueCa({ crypto, policy, now: caNow });
    const lateNow = ca.certificate.notAfter - days(10);
    const leaf = await issueServerLeaf({ crypto, policy, now: lateNow }, ca, NAMES);
    expect(new X509Certificate(leaf.certificate.pem).validTo).toBe(new X509Certificate(ca.certificate.pem).validTo);
    const at = Math.floor(lateNow / 1000);
    expect(opensslVerify(ca, leaf, 'sslserver', at).ok).toBe(true);
    expect(opensslVerify(ca, leaf, 'sslserver', Math.floor(ca.certificate.notAfter / 1000) + 60).ok).toBe(false);
    expect(await pkijsValidates(ca, leaf, new Date(lateNow))).toBe(true);
  });
});
