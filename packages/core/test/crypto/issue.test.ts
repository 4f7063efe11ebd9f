import { beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, createPrivateKey } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { AsnParser } from '@peculiar/asn1-schema';
import { SubjectPublicKeyInfo } from '@peculiar/asn1-x509';
import {
  type CryptoBackend,
  type Issued,
  IssueError,
  KEY_ALGORITHMS,
  type Signer,
  days,
  issueCa,
  issueClientLeaf,
  issueServerLeaf,
  minutes,
  parseCertificate,
  resolvePolicy,
} from '@eso-mtls/core';
import { NOW, nodeBackend, seededRandom } from '../support/fixtures.js';

const crypto = nodeBackend();
const policy = resolvePolicy();
const ctx = { crypto, policy, now: NOW };
const NAMES = ['provider', 'provider.team-a', 'provider.team-a.svc', 'provider.team-a.svc.cluster.local'];

/** What a tool we did not write reads from the certificate. */
const peculiar = (issued: Issued): x509.X509Certificate => new x509.X509Certificate(issued.certificate.pem);

/** SKI computed independently: SHA-256 of the subjectPublicKey bits, first 20 bytes (RFC 7093 method 1). */
function expectedKeyId(spki: Uint8Array): string {
  const bits = AsnParser.parse(spki, SubjectPublicKeyInfo).subjectPublicKey;
  return createHash('sha256').update(new Uint8Array(bits)).digest('hex').slice(0, 40);
}

let ca: Issued;
beforeAll(async () => {
  ca = await issueCa(ctx);
});

describe('issueCa', () => {
  it('is a self-signed CA: basicConstraints cA pathLen 0 critical, keyUsage keyCertSign|cRLSign critical', () => {
    const cert = peculiar(ca);
    const bc = cert.getExtension(x509.BasicConstraintsExtension)!;
    expect([bc.ca, bc.pathLength, bc.critical]).toEqual([true, 0, true]);
    const ku = cert.getExtension(x509.KeyUsagesExtension)!;
    expect(ku.usages).toBe(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign);
    expect(ku.critical).toBe(true);
    expect(cert.getExtension(x509.ExtendedKeyUsageExtension)).toBeNull();
    expect(cert.subject).toBe(cert.issuer);
    expect(ca.certificate.isCa).toBe(true);
    expect(ca.certificate.pathLenConstraint).toBe(0);
  });

  it('names itself after the day and its serial, so two CAs never share an issuer name', async () => {
    const other = await issueCa(ctx);
    expect(ca.certificate.subjectCommonName).toBe(`eso-provider-ca-20261115-${ca.certificate.serialNumber.slice(0, 8)}`);
    expect(other.certificate.subject).not.toBe(ca.certificate.subject);
    const named = await issueCa(ctx, { commonName: 'my, "special" CA' });
    expect(named.certificate.subjectCommonName).toBe('my, "special" CA');
    expect(named.certificate.subject).toBe('CN=my\\, \\"special\\" CA');
  });

  it('backdates notBefore and truncates both times to whole seconds', () => {
    expect(ca.certificate.notBefore).toBe(Date.parse('2026-11-15T10:15:30Z'));
    expect(ca.certificate.notAfter).toBe(Date.parse('2027-11-15T10:20:30Z'));
    expect(peculiar(ca).notBefore.getTime()).toBe(ca.certificate.notBefore);
  });

  it('carries SKI = AKI derived from its public key', () => {
    const ski = expectedKeyId(ca.certificate.subjectPublicKeyInfo);
    expect(ca.certificate.subjectKeyIdentifier).toBe(ski);
    expect(ca.certificate.authorityKeyIdentifier).toBe(ski);
    expect(peculiar(ca).getExtension(x509.SubjectKeyIdentifierExtension)!.keyId).toBe(ski);
  });
});

describe('issueServerLeaf', () => {
  let leaf: Issued;
  beforeAll(async () => {
    leaf = await issueServerLeaf(ctx, ca, NAMES);
  });

  it('is a serverAuth-only leaf with the DNS names as subjectAltName', () => {
    const cert = peculiar(leaf);
    expect(cert.getExtension(x509.ExtendedKeyUsageExtension)!.usages).toEqual([x509.ExtendedKeyUsage.serverAuth]);
    const bc = cert.getExtension(x509.BasicConstraintsExtension)!;
    expect([bc.ca, bc.critical]).toEqual([false, true]);
    const ku = cert.getExtension(x509.KeyUsagesExtension)!;
    expect([ku.usages, ku.critical]).toEqual([x509.KeyUsageFlags.digitalSignature, true]);
    const san = cert.getExtension(x509.SubjectAlternativeNameExtension)!;
    expect(san.names.items.map((n) => [n.type, n.value])).toEqual(NAMES.map((n) => ['dns', n]));
    expect(leaf.certificate.subjectCommonName).toBe('provider');
    expect(leaf.certificate.extendedKeyUsage).toEqual(['serverAuth']);
    expect(cert.signatureAlgorithm).toMatchObject({ name: 'ECDSA', hash: { name: 'SHA-256' } });
  });

  it('links to its CA: issuer DN, AKI = CA SKI, own SKI from its key', () => {
    expect(peculiar(leaf).issuer).toBe(peculiar(ca).subject);
    expect(leaf.certificate.authorityKeyIdentifier).toBe(ca.certificate.subjectKeyIdentifier);
    expect(peculiar(leaf).getExtension(x509.AuthorityKeyIdentifierExtension)!.keyId).toBe(ca.certificate.subjectKeyIdentifier);
    expect(leaf.certificate.subjectKeyIdentifier).toBe(expectedKeyId(leaf.certificate.subjectPublicKeyInfo));
  });

  it('uses a fresh PKCS#8 key every time', async () => {
    const again = await issueServerLeaf(ctx, ca, NAMES);
    expect(again.privateKeyPem).not.toBe(leaf.privateKeyPem);
    expect(again.certificate.subjectKeyIdentifier).not.toBe(leaf.certificate.subjectKeyIdentifier);
    expect(leaf.privateKeyPem.startsWith('-----BEGIN PRIVATE KEY-----\n')).toBe(true);
    expect(createPrivateKey(leaf.privateKeyPem).asymmetricKeyDetails).toMatchObject({ namedCurve: 'prime256v1' });
  });

  it('uses as commonName the first name that fits in 64 characters', async () => {
    const long = `${'a'.repeat(63)}.${'b'.repeat(10)}`;
    const issued = await issueServerLeaf(ctx, ca, [long, 'short']);
    expect(issued.certificate.subjectCommonName).toBe('short');
    expect(issued.certificate.dnsNames).toEqual([long, 'short']);
  });

  it.each([
    [[], /at least one DNS name/],
    [['Provider_1'], /"Provider_1" is not a DNS name/],
    [['ok', 'bad..name'], /"bad\.\.name" is not a DNS name/],
  ])('rejects DNS names %j, naming the offending value', async (names, message) => {
    await expect(issueServerLeaf(ctx, ca, names)).rejects.toThrow(message);
  });

  it('refuses an issuer that is not a CA', async () => {
    const leafAsIssuer = await issueServerLeaf(ctx, ca, NAMES);
    await expect(issueServerLeaf(ctx, leafAsIssuer, NAMES)).rejects.toThrow(IssueError);
    await expect(issueServerLeaf(ctx, leafAsIssuer, NAMES)).rejects.toThrow(/is not a CA certificate/);
  });
});

describe('issueClientLeaf', () => {
  it('is clientAuth only, CN external-secrets-core, URI SAN from the policy', async () => {
    const p = resolvePolicy({ clusterDomain: 'corp.example', esoNamespace: 'eso', serviceAccount: 'eso-core' });
    const leaf = await issueClientLeaf({ crypto, policy: p, now: NOW }, ca);
    const cert = peculiar(leaf);
    expect(cert.getExtension(x509.ExtendedKeyUsageExtension)!.usages).toEqual([x509.ExtendedKeyUsage.clientAuth]);
    expect(cert.subject).toBe('CN=external-secrets-core');
    const san = cert.getExtension(x509.SubjectAlternativeNameExtension)!;
    expect(san.names.items.map((n) => [n.type, n.value])).toEqual([['url', 'spiffe://corp.example/ns/eso/sa/eso-core']]);
    expect(leaf.certificate.uris).toEqual(['spiffe://corp.example/ns/eso/sa/eso-core']);
    expect(leaf.certificate.dnsNames).toEqual([]);
  });

  // RFC 5280 4.2.1.12: keyEncipherment is not consistent with clientAuth (zlint's
  // e_key_usage_and_extended_key_usage_inconsistent), for RSA client leaves as for the others.
  it.each(KEY_ALGORITHMS)('has keyUsage digitalSignature only, critical, for a %s key', async (keyAlgorithm) => {
    const leaf = await issueClientLeaf({ crypto, policy: resolvePolicy({ keyAlgorithm }), now: NOW }, ca);
    const ku = peculiar(leaf).getExtension(x509.KeyUsagesExtension)!;
    expect([leaf.keyAlgorithm, ku.usages, ku.critical]).toEqual([keyAlgorithm, x509.KeyUsageFlags.digitalSignature, true]);
  });
});

describe('validity', () => {
  it('clamps a leaf notAfter to its CA notAfter', async () => {
    const late = { ...ctx, now: ca.certificate.notAfter - days(30) + 123 };
    const leaf = await issueServerLeaf(late, ca, NAMES);
    expect(leaf.certificate.notAfter).toBe(ca.certificate.notAfter);
    const early = await issueServerLeaf(ctx, ca, NAMES);
    expect(early.certificate.notAfter).toBe(Date.parse('2027-02-13T10:20:30Z'));
    expect(early.certificate.notBefore).toBe(NOW - (NOW % 1000) - minutes(5));
  });

  it('refuses to issue from a CA that has expired', async () => {
    await expect(issueServerLeaf({ ...ctx, now: ca.certificate.notAfter + 1000 }, ca, NAMES)).rejects.toThrow(/expired at 2027-11-15T10:20:30.000Z/);
  });
});

describe('serial numbers', () => {
  it('come from the injected RandomSource: 16 octets, top bit clear, never a leading zero octet', async () => {
    const seeded: CryptoBackend = { ...crypto, random: seededRandom(7) };
    const expected = Uint8Array.from(seededRandom(7)(16));
    expected[0] = (expected[0]! & 0x7f) | 0x40;
    const leaf = await issueServerLeaf({ ...ctx, crypto: seeded }, ca, NAMES);
    expect(leaf.certificate.serialNumber).toBe(Buffer.from(expected).toString('hex'));
    expect(peculiar(leaf).serialNumber.toLowerCase()).toBe(leaf.certificate.serialNumber);
  });

  it('reject a RandomSource that returns the wrong number of bytes', async () => {
    const short: CryptoBackend = { ...crypto, random: () => new Uint8Array(4) };
    await expect(issueCa({ ...ctx, crypto: short })).rejects.toThrow(/returned 4 bytes where 16 were asked for/);
  });
});

describe('key algorithms', () => {
  it('issues RSA server leaves with keyEncipherment and sha256WithRSAEncryption from an RSA CA', async () => {
    const rsa = { crypto, policy: resolvePolicy({ keyAlgorithm: 'RSA-2048' }), now: NOW };
    const rsaCa = await issueCa(rsa);
    const leaf = await issueServerLeaf(rsa, rsaCa, NAMES);
    const cert = peculiar(leaf);
    expect(cert.getExtension(x509.KeyUsagesExtension)!.usages).toBe(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment);
    expect(cert.signatureAlgorithm).toMatchObject({ name: 'RSASSA-PKCS1-v1_5', hash: { name: 'SHA-256' } });
    expect(leaf.keyAlgorithm).toBe('RSA-2048');
    // An ECDSA leaf under the RSA CA: signed with the CA's algorithm, no keyEncipherment for its EC key.
    const ecLeaf = await issueServerLeaf({ ...rsa, policy }, rsaCa, NAMES);
    expect(peculiar(ecLeaf).signatureAlgorithm).toMatchObject({ name: 'RSASSA-PKCS1-v1_5' });
    expect(peculiar(ecLeaf).getExtension(x509.KeyUsagesExtension)!.usages).toBe(x509.KeyUsageFlags.digitalSignature);
    expect(await peculiar(ecLeaf).verify({ publicKey: peculiar(rsaCa).publicKey, signatureOnly: true })).toBe(true);
  });
});

describe('the returned view', () => {
  it('equals what parseCertificate reads back from the PEM', async () => {
    const client = await issueClientLeaf(ctx, ca);
    const server = await issueServerLeaf(ctx, ca, NAMES);
    for (const issued of [ca, client, server]) {
      expect(parseCertificate(issued.certificate.pem)).toEqual(issued.certificate);
    }
  });
});

describe('a signer that keeps keys elsewhere (KMS-style)', () => {
  it('issues with key references the core never reads', async () => {
    const vault = new Map<string, string>();
    const kms: Signer = {
      async generateKey(algorithm) {
        const key = await crypto.signer.generateKey(algorithm);
        const ref = `kms://keys/${vault.size + 1}`;
        vault.set(ref, key.privateKeyPem);
        return { ...key, privateKeyPem: ref };
      },
      sign: (ref, data) => crypto.signer.sign(vault.get(ref)!, data),
    };
    const kctx = { ...ctx, crypto: { ...crypto, signer: kms } };
    const kmsCa = await issueCa(kctx);
    const leaf = await issueServerLeaf(kctx, kmsCa, NAMES);
    expect(kmsCa.privateKeyPem).toBe('kms://keys/1');
    expect(await peculiar(leaf).verify({ publicKey: peculiar(kmsCa).publicKey, signatureOnly: true })).toBe(true);
  });
});
