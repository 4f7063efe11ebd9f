/**
 * What the fuzz suites found, one regression test each, built from the shrunk counterexamples.
 * Each fails on the code before its fix.
 */
import { describe, expect, it } from '@jest/globals';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import {
  CertificateCache,
  CertificateParseError,
  ROTATE_ACKNOWLEDGED_ANNOTATION,
  ROTATE_ANNOTATION,
  type SecretState,
  encodePem,
  observeCaSecret,
  observeLeafSecret,
  parseCertificate,
  planRotation,
  resolvePolicy,
} from '@eso-mtls/core';
import { DerError, Tag, children, encodingOf, oid, oidToString, readElement, sequence, tlv } from '../../src/x509/der.js';
import { nodeBackend } from '../support/fixtures.js';
import { mutateDer } from './mutate.js';
import { pki } from './pki.js';

const verifier = nodeBackend().verifier;
const cache = (): CertificateCache => new CertificateCache(verifier);
const keyDer = (pem: string): Buffer => Buffer.from(pem.split('\n').slice(1, -2).join(''), 'base64');
const opensslLoads = (pem: string): boolean => {
  try {
    createPrivateKey(pem);
    return true;
  } catch {
    return false;
  }
};

// Depth-first element indexes in the fixtures (root 0, tbsCertificate 1, version 2 and 3, serial 4,
// signature 5 and 6, issuer 7-11), as mutateDer counts them.
const VALIDITY = 12;
const NOT_BEFORE = 13;
const SUBJECT_CN_VALUE = 19;

describe('fuzz findings', () => {
  it('oidToString rejects non-minimal subidentifiers and reads huge arcs exactly', () => {
    // 2.5.29.19 (basicConstraints) with a 0x80 padding octet: not DER, and must not read as basicConstraints.
    expect(() => oidToString(Uint8Array.of(0x55, 0x1d, 0x80, 0x13))).toThrow(DerError);
    expect(() => oidToString(Uint8Array.of(0x55, 0x9d))).toThrow(DerError);
    expect(oidToString(Uint8Array.of(0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00))).toBe(`2.${2n ** 70n - 80n}`);
  });

  it('a detail quotes a huge malformed notBefore only in part', () => {
    const der = mutateDer(pki.ca.certificate.der, [{ kind: 'contents', at: NOT_BEFORE, bytes: new Uint8Array(2000).fill(0x20) }]);
    const o = observeCaSecret({ 'ca.crt': encodePem('CERTIFICATE', der), 'ca.key': pki.ca.privateKeyPem }, cache());
    expect(o.active).toMatchObject({ ok: false, problem: 'garbage_pem', detail: expect.stringMatching(/notBefore .* is not an RFC 5280 time/) });
    expect(!o.active?.ok && o.active!.detail.length).toBeLessThanOrEqual(1024);
  });

  it('reading a 300 KB notBefore or PrintableString name names the field, not the call stack', () => {
    const time = mutateDer(pki.ca.certificate.der, [{ kind: 'contents', at: NOT_BEFORE, bytes: new Uint8Array(300_000).fill(0x31) }]);
    expect(() => parseCertificate(time)).toThrow(/notBefore "1{37}\.\.\." is not an RFC 5280 time/);
    const name = mutateDer(pki.server.certificate.der, [
      { kind: 'contents', at: SUBJECT_CN_VALUE, bytes: new Uint8Array(300_000).fill(0x61) },
      { kind: 'tag', at: SUBJECT_CN_VALUE, tag: Tag.PRINTABLE_STRING },
    ]);
    expect(parseCertificate(name).subjectCommonName).toBe('a'.repeat(300_000));
  });

  it.each([
    // A zero octet inserted after [1] publicKey's length: OpenSSL refuses the key, the scalar still reads.
    ['a malformed stored public key', [{ kind: 'raw-insert' as const, at: 70, bytes: Uint8Array.of(0) }]],
    // A NULL after the privateKey field of PKCS#8.
    ['a field PKCS#8 does not have', [{ kind: 'append' as const, at: 0, element: new Uint8Array(0) }]],
    // One bit of the stored public point flipped: off the curve.
    ['a stored public point off the curve', [{ kind: 'raw-flip' as const, at: 100, mask: 1 }]],
  ])('a P-256 key with %s, which OpenSSL does not load, is not a usable key', (_name, edits) => {
    const keyPem = encodePem('PRIVATE KEY', mutateDer(keyDer(pki.server.privateKeyPem), edits));
    expect(opensslLoads(keyPem)).toBe(false);
    const o = observeLeafSecret({ 'tls.crt': pki.server.certificate.pem, 'tls.key': keyPem, 'ca.crt': pki.ca.certificate.pem }, cache());
    expect(o.leaf).toMatchObject({ ok: false, problem: 'garbage_pem' });
  });

  it('a leaf whose outer signatureAlgorithm differs from the signed one is not signed by its CA', () => {
    const der = pki.server.certificate.der;
    const [tbs, , signature] = children(der, readElement(der, 0));
    // ecdsa-with-SHA256 with a NULL parameter: the signature still verifies over the same TBS bytes.
    const altered = sequence(encodingOf(der, tbs!), sequence(oid('1.2.840.10045.4.3.2'), tlv(Tag.NULL)), encodingOf(der, signature!));
    const ca = new X509Certificate(pki.ca.certificate.der);
    expect(new X509Certificate(altered).verify(ca.publicKey)).toBe(false);
    expect(() => parseCertificate(altered)).toThrow(CertificateParseError);
    const o = observeLeafSecret({ 'tls.crt': encodePem('CERTIFICATE', altered), 'tls.key': pki.server.privateKeyPem }, cache());
    expect(o.leaf).toMatchObject({ ok: false, problem: 'garbage_pem' });
  });

  it('a CA certificate altered after signing, which OpenSSL cannot read, is not the active CA', () => {
    // A NULL appended to the validity SEQUENCE: OpenSSL refuses the certificate, our reader did not.
    const der = mutateDer(pki.ca.certificate.der, [{ kind: 'append', at: VALIDITY, element: new Uint8Array(0) }]);
    expect(() => new X509Certificate(der)).toThrow();
    const o = observeCaSecret(
      { 'ca.crt': encodePem('CERTIFICATE', der), 'ca.key': pki.ca.privateKeyPem, 'retired.crt': encodePem('CERTIFICATE', der) },
      cache(),
    );
    expect(o.active).toMatchObject({ ok: false, problem: 'garbage_pem', detail: expect.stringMatching(/self-signature does not verify/) });
    expect(o.retired).toMatchObject({ ok: false, problem: 'garbage_pem' });
  });

  it('a leaf with a 20 KB subject, signed by none of our CAs, is named in part in the rotation message', () => {
    // Blowing up the subject breaks the signature but keeps the key: a managed Secret a tenant rewrote.
    const der = mutateDer(pki.server.certificate.der, [{ kind: 'contents', at: SUBJECT_CN_VALUE, bytes: new Uint8Array(20_000).fill(0x61) }]);
    const caSecret: SecretState = { data: { 'ca.crt': pki.ca.certificate.pem, 'ca.key': pki.ca.privateKeyPem }, ownership: 'managed', annotations: {} };
    const data = { 'tls.crt': encodePem('CERTIFICATE', der), 'tls.key': pki.server.privateKeyPem, 'ca.crt': pki.ca.certificate.pem };
    const plan = planRotation(
      {
        caSecret,
        namespaces: [
          { namespace: 'team-a', services: [{ name: 'provider' }], secret: { data, ownership: 'managed', annotations: {} }, previouslyIssued: true },
        ],
      },
      { now: pki.ca.certificate.notBefore + 86_400_000, policy: resolvePolicy(), cache: cache() },
    );
    const leaf = plan.leaves.find((l) => typeof l.target !== 'string')!;
    expect(leaf.reason).toBe('ca_mismatch');
    expect(leaf.message.length).toBeLessThan(1024);
  });

  it('a 200 KiB rotation request on the client Secret is acknowledged by its digest, and shown in part', () => {
    const request = 'r'.repeat(200 * 1024);
    const caSecret: SecretState = { data: { 'ca.crt': pki.ca.certificate.pem, 'ca.key': pki.ca.privateKeyPem }, ownership: 'managed', annotations: {} };
    const clientData = { 'tls.crt': pki.client.certificate.pem, 'tls.key': pki.client.privateKeyPem, 'ca.crt': pki.ca.certificate.pem };
    const now = pki.ca.certificate.notBefore + 86_400_000;
    const plan = (annotations: Record<string, string>) =>
      planRotation(
        { caSecret, clientSecret: { data: clientData, ownership: 'managed', annotations }, clientPreviouslyIssued: true, namespaces: [] },
        { now, policy: resolvePolicy(), cache: cache() },
      );
    const first = plan({ [ROTATE_ANNOTATION]: request });
    const leaf = first.leaves.find((l) => l.target === 'client')!;
    expect(leaf.reason).toBe('forced');
    expect(leaf.message.length).toBeLessThan(1024);
    // Writing the token back whole would take the Secret's annotations past the apiserver's 256 KiB.
    const acknowledgement = leaf.annotations[ROTATE_ACKNOWLEDGED_ANNOTATION]!;
    expect(acknowledgement).toMatch(/^sha256:[0-9a-f]{32}$/);
    const second = plan({ [ROTATE_ANNOTATION]: request, [ROTATE_ACKNOWLEDGED_ANNOTATION]: acknowledgement });
    expect(second.leaves.filter((l) => l.target === 'client')).toEqual([]);
    // An acknowledgement holding the token itself, as earlier versions wrote it, still counts.
    const upgraded = plan({ [ROTATE_ANNOTATION]: request, [ROTATE_ACKNOWLEDGED_ANNOTATION]: request });
    expect(upgraded.leaves.filter((l) => l.target === 'client')).toEqual([]);
  });
});
