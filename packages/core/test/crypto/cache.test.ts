import { beforeAll, describe, expect, it, jest } from '@jest/globals';
import {
  CertificateCache,
  CertificateParseError,
  type Issued,
  type SignatureVerifier,
  issueCa,
  issueServerLeaf,
  planRotation,
  resolvePolicy,
} from '@eso-mtls/core';
import { T0, convergedCluster } from '../support/planner.js';
import { NOW, nodeBackend } from '../support/fixtures.js';

const crypto = nodeBackend();
const ctx = { crypto, policy: resolvePolicy(), now: NOW };
const NAMES = ['provider', 'provider.ns'];

/** The real verifier, with its calls counted. */
function countingVerifier(): SignatureVerifier & { verifyCalls: number } {
  const counted = {
    verifyCalls: 0,
    verify: (...args: Parameters<SignatureVerifier['verify']>) => {
      counted.verifyCalls++;
      return crypto.verifier.verify(...args);
    },
    publicKeyOf: (pem: string) => crypto.verifier.publicKeyOf(pem),
  };
  return counted;
}

let ca: Issued;
let otherCa: Issued;
let leaf: Issued;
beforeAll(async () => {
  ca = await issueCa(ctx, { commonName: 'shared-name' });
  otherCa = await issueCa(ctx);
  leaf = await issueServerLeaf(ctx, ca, NAMES);
});

describe('CertificateCache.isSignedBy', () => {
  it('verifies a (leaf, CA) pair once, then answers from memory', () => {
    const verifier = countingVerifier();
    const cache = new CertificateCache(verifier);
    expect(cache.isSignedBy(leaf.certificate, ca.certificate)).toBe(true);
    for (let i = 0; i < 5; i++) expect(cache.isSignedBy(leaf.certificate, ca.certificate)).toBe(true);
    expect(cache.stats.verifications).toBe(1);
    expect(verifier.verifyCalls).toBe(1);
    // Same certificates re-read from their PEM (a new resync) still hit the memo.
    expect(cache.isSignedBy(cache.parse(leaf.certificate.pem), cache.parse(ca.certificate.pem))).toBe(true);
    expect(verifier.verifyCalls).toBe(1);
  });

  it('rejects a rogue CA with the same subject name but a different key', async () => {
    const rogue = await issueCa(ctx, { commonName: 'shared-name' });
    expect(rogue.certificate.subject).toBe(ca.certificate.subject);
    const cache = new CertificateCache(crypto.verifier);
    expect(cache.isSignedBy(leaf.certificate, rogue.certificate)).toBe(false);
    // Even with the AKI check out of the way (a rogue CA without SKI), the signature check catches it.
    const noSki = { ...rogue.certificate, subjectKeyIdentifier: undefined, pem: `${rogue.certificate.pem}#variant` };
    expect(cache.isSignedBy(leaf.certificate, noSki)).toBe(false);
    expect(cache.stats.verifications).toBe(1);
    expect(cache.isSignedBy(leaf.certificate, ca.certificate)).toBe(true);
  });

  it('rejects another issuer name, a non-CA "issuer" and a mismatched AKI without verifying', () => {
    const verifier = countingVerifier();
    const cache = new CertificateCache(verifier);
    expect(cache.isSignedBy(leaf.certificate, otherCa.certificate)).toBe(false);
    const notCa = { ...ca.certificate, isCa: false, pem: `${ca.certificate.pem}#not-ca` };
    expect(cache.isSignedBy(leaf.certificate, notCa)).toBe(false);
    const otherSki = { ...ca.certificate, subjectKeyIdentifier: '00'.repeat(20), pem: `${ca.certificate.pem}#ski` };
    expect(cache.isSignedBy(leaf.certificate, otherSki)).toBe(false);
    expect(verifier.verifyCalls).toBe(0);
  });

  it('rejects a leaf whose signed bytes were tampered with', () => {
    const tbs = Uint8Array.from(leaf.certificate.tbsCertificate);
    tbs[tbs.length - 5]! ^= 1;
    const tampered = { ...leaf.certificate, tbsCertificate: tbs, pem: `${leaf.certificate.pem}#tampered` };
    expect(new CertificateCache(crypto.verifier).isSignedBy(tampered, ca.certificate)).toBe(false);
  });

  it('treats a verifier that throws as "not signed"', () => {
    const cache = new CertificateCache({
      verify: () => {
        throw new Error('boom');
      },
      publicKeyOf: () => undefined,
    });
    expect(cache.isSignedBy(leaf.certificate, ca.certificate)).toBe(false);
  });
});

describe('CertificateCache.parse and parseBundle', () => {
  it('parse once per exact text, errors included', () => {
    const cache = new CertificateCache(crypto.verifier);
    const a = cache.parse(leaf.certificate.pem);
    expect(cache.parse(leaf.certificate.pem)).toBe(a);
    expect(cache.stats.parses).toBe(1);
    expect(() => cache.parse('garbage')).toThrow(CertificateParseError);
    expect(() => cache.parse('garbage')).toThrow(CertificateParseError);
    expect(cache.stats.parses).toBe(2);
  });

  it('parse bundles through the same certificate memo', () => {
    const cache = new CertificateCache(crypto.verifier);
    const text = ca.certificate.pem + otherCa.certificate.pem;
    const bundle = cache.parseBundle(text);
    expect(bundle.map((c) => c.subject)).toEqual([ca.certificate.subject, otherCa.certificate.subject]);
    expect(cache.parseBundle(text)).toBe(bundle);
    expect(cache.parse(ca.certificate.pem)).toBe(bundle[0]);
    expect(cache.stats.parses).toBe(2);
    expect(() => cache.parseBundle(`${ca.certificate.pem}-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n`)).toThrow(
      /certificate 2 of the bundle: not a well-formed X.509 certificate/,
    );
  });
});

describe('CertificateCache.keyMatches / checkKey', () => {
  it('tells match, mismatch and unreadable apart, reading each key once', () => {
    const verifier = countingVerifier();
    const publicKeyOf = jest.spyOn(verifier, 'publicKeyOf');
    const cache = new CertificateCache(verifier);
    expect(cache.keyMatches(leaf.certificate, leaf.privateKeyPem)).toBe(true);
    expect(cache.keyMatches(leaf.certificate, leaf.privateKeyPem)).toBe(true);
    expect(cache.checkKey(leaf.certificate, ca.privateKeyPem)).toBe('mismatch');
    expect(cache.checkKey(leaf.certificate, 'not a key')).toBe('unreadable');
    // A certificate is not a private key, even though its public key is right there.
    expect(cache.checkKey(leaf.certificate, leaf.certificate.pem)).toBe('unreadable');
    expect(cache.stats.keyChecks).toBe(4);
    expect(publicKeyOf).toHaveBeenCalledTimes(4);
  });
});

describe('CertificateCache.remember', () => {
  it('makes observing a just-issued certificate free of parsing and key checks', () => {
    const verifier = countingVerifier();
    const publicKeyOf = jest.spyOn(verifier, 'publicKeyOf');
    const cache = new CertificateCache(verifier);
    cache.remember(leaf, ca.certificate);
    expect(cache.parse(leaf.certificate.pem)).toBe(leaf.certificate);
    expect(cache.keyMatches(leaf.certificate, leaf.privateKeyPem)).toBe(true);
    expect(cache.isSignedBy(leaf.certificate, ca.certificate)).toBe(true);
    expect(cache.stats).toMatchObject({ parses: 0, keyChecks: 0, verifications: 1 });
    expect(publicKeyOf).not.toHaveBeenCalled();
  });

  it('still checks the issuer it is told about', () => {
    const cache = new CertificateCache(crypto.verifier);
    cache.remember(leaf, otherCa.certificate);
    expect(cache.isSignedBy(leaf.certificate, otherCa.certificate)).toBe(false);
  });
});

describe('CertificateCache bounds', () => {
  it('evicts the oldest entries beyond maxEntries and stays correct', () => {
    const cache = new CertificateCache(crypto.verifier, { maxEntries: 2 });
    const pems = [leaf, ca, otherCa].map((i) => i.certificate.pem);
    for (const pem of pems) cache.parse(pem);
    expect(cache.stats.evictions).toBe(1);
    cache.parse(pems[2]!);
    expect(cache.stats.parses).toBe(3);
    cache.parse(pems[0]!); // the oldest was dropped: parsed again
    expect(cache.stats.parses).toBe(4);
  });

  it('rejects a nonsensical bound', () => {
    expect(() => new CertificateCache(crypto.verifier, { maxEntries: 0 })).toThrow(/maxEntries must be a positive integer, got 0/);
  });

  it('is owned by its creator: two caches share nothing', () => {
    const a = new CertificateCache(crypto.verifier);
    const b = new CertificateCache(crypto.verifier);
    a.isSignedBy(leaf.certificate, ca.certificate);
    b.isSignedBy(leaf.certificate, ca.certificate);
    expect([a.stats.verifications, b.stats.verifications]).toEqual([1, 1]);
  });
});

describe('CertificateCache room for a plan', () => {
  it('a resync over more namespaces than the bound re-parses and re-verifies nothing (the planner reserves room)', async () => {
    const services = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`ns-${i}`, [{ name: 'p' }]]));
    const { pki, store } = await convergedCluster(services);
    // Below the live set: without the planner's reservation, each entry would be dropped just before its next use.
    const cache = new CertificateCache(pki.crypto.verifier, { maxEntries: 5 });
    const plan = (): void => void planRotation(store.snapshot(), { now: T0 + 1000, policy: pki.policy, cache });
    plan();
    const first = { ...cache.stats };
    plan();
    expect(cache.stats).toEqual(first);
    expect(first.evictions).toBe(0);
  });

  it('reserve never lowers the bound and ignores nonsense', () => {
    const cache = new CertificateCache(crypto.verifier, { maxEntries: 2 });
    cache.reserve(1);
    cache.reserve(Number.NaN);
    for (const pem of [leaf, ca, otherCa].map((i) => i.certificate.pem)) cache.parse(pem);
    expect(cache.stats.evictions).toBe(1);
  });
});
