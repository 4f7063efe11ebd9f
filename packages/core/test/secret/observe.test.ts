import { beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { createPrivateKey } from 'node:crypto';
import {
  CertificateCache,
  type DataProblem,
  type Issued,
  type Observed,
  type SecretData,
  issueCa,
  issueClientLeaf,
  issueServerLeaf,
  observeLeafSecret,
  resolvePolicy,
} from '@eso-mtls/core';
import { observeCaSecret } from '../../src/secret/observe.js';
import { NOW, nodeBackend } from '../support/fixtures.js';
import { weakExponentCrypto } from '../support/weak-exponent.js';

const crypto = nodeBackend();
const ctx = { crypto, policy: resolvePolicy(), now: NOW };

let ca: Issued;
let nextCa: Issued;
let leaf: Issued;
let otherLeaf: Issued;
let rsaLeaf: Issued;
let weakCa: Issued;
let weakLeaf: Issued;
let good: SecretData;
beforeAll(async () => {
  ca = await issueCa(ctx);
  nextCa = await issueCa(ctx);
  leaf = await issueServerLeaf(ctx, ca, ['provider', 'provider.ns']);
  otherLeaf = await issueClientLeaf(ctx, ca);
  rsaLeaf = await issueServerLeaf({ ...ctx, policy: resolvePolicy({ keyAlgorithm: 'RSA-2048' }) }, ca, ['provider']);
  const weak = { crypto: weakExponentCrypto(crypto, 3), policy: resolvePolicy({ keyAlgorithm: 'RSA-3072' }), now: NOW };
  weakCa = await issueCa(weak);
  weakLeaf = await issueServerLeaf(weak, ca, ['provider']);
  good = { 'tls.crt': leaf.certificate.pem, 'tls.key': leaf.privateKeyPem, 'ca.crt': ca.certificate.pem };
});

/** The same PKCS#8 key with one bit of its private scalar flipped; the stored public point is left as it was. */
function corruptScalar(pem: string): string {
  const key = createPrivateKey(pem);
  const der = key.export({ type: 'pkcs8', format: 'der' });
  const d = Buffer.from(key.export({ format: 'jwk' }).d!, 'base64url');
  der[der.indexOf(d) + 3]! ^= 0x10;
  return `-----BEGIN PRIVATE KEY-----\n${der.toString('base64')}\n-----END PRIVATE KEY-----\n`;
}

const cache = (): CertificateCache => new CertificateCache(crypto.verifier);
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

function expectProblem<T>(o: Observed<T> | undefined, problem: DataProblem, detail?: RegExp): void {
  expect(o).toMatchObject({ ok: false, problem });
  if (detail && o && !o.ok) expect(o.detail).toMatch(detail);
}

describe('observeLeafSecret', () => {
  it('accepts a well-formed Secret, as text or as bytes', () => {
    for (const data of [good, Object.fromEntries(Object.entries(good).map(([k, v]) => [k, bytes(v as string)]))]) {
      const o = observeLeafSecret(data, cache());
      expect(o.leaf.ok && o.leaf.value.certificate.serialNumber).toBe(leaf.certificate.serialNumber);
      expect(o.bundle.ok && o.bundle.value.map((c) => c.subject)).toEqual([ca.certificate.subject]);
      expect(o.bundleText).toBe(ca.certificate.pem);
    }
  });

  it('accepts CRLF line ends and trailing whitespace, and reports ca.crt exactly as stored', () => {
    const crlf = (s: unknown): string => `${(s as string).replaceAll('\n', '\r\n')}  \n\t`;
    const o = observeLeafSecret({ 'tls.crt': crlf(good['tls.crt']), 'tls.key': crlf(good['tls.key']), 'ca.crt': bytes(crlf(good['ca.crt'])) }, cache());
    expect(o.leaf.ok).toBe(true);
    expect(o.bundle.ok).toBe(true);
    expect(o.bundleText).toBe(crlf(good['ca.crt']));
  });

  it.each([
    ['no data at all', {}],
    ['only empty values', { 'tls.crt': '', 'tls.key': new Uint8Array(0), 'ca.crt': '  \n' }],
  ])('classifies %s as empty', (_name, data) => {
    const o = observeLeafSecret(data, cache());
    expectProblem(o.leaf, 'empty');
    expectProblem(o.bundle, 'empty');
    expect(o.bundleText).toBe((data as SecretData)['ca.crt'] ?? '');
  });

  const cases: [string, (g: SecretData) => SecretData, DataProblem, RegExp][] = [
    ['garbage in tls.crt', (g) => ({ ...g, 'tls.crt': 'hello' }), 'garbage_pem', /tls\.crt: not PEM/],
    ['garbage bytes in tls.crt', (g) => ({ ...g, 'tls.crt': Uint8Array.of(0xff, 0xfe, 0, 1) }), 'garbage_pem', /tls\.crt/],
    ['a private key in tls.crt', (g) => ({ ...g, 'tls.crt': g['tls.key'] }), 'garbage_pem', /PRIVATE KEY, where only CERTIFICATE/],
    [
      'truncated base64 in tls.crt',
      (g) => ({ ...g, 'tls.crt': (g['tls.crt'] as string).replace(/.{5}\n-----END/, '\n-----END') }),
      'garbage_pem',
      /not a multiple of 4/,
    ],
    ['a certificate cut short', (g) => ({ ...g, 'tls.crt': (g['tls.crt'] as string).split('\n').slice(0, 4).join('\n') }), 'garbage_pem', /no END line/],
    [
      'two certificates in tls.crt',
      (g) => ({ ...g, 'tls.crt': (g['tls.crt'] as string) + otherLeaf.certificate.pem }),
      'multiple_certificates',
      /holds 2 certificates/,
    ],
    ['a certificate without its key', (g) => ({ ...g, 'tls.key': undefined }), 'missing_key', /tls\.key is absent or empty/],
    ['an empty key', (g) => ({ ...g, 'tls.key': '' }), 'missing_key', /tls\.key/],
    ['a key without its certificate', (g) => ({ ...g, 'tls.crt': '' }), 'missing_certificate', /tls\.crt is absent or empty/],
    ['garbage in tls.key', (g) => ({ ...g, 'tls.key': 'nope' }), 'garbage_pem', /tls\.key is not a readable private key/],
    ['a certificate in tls.key', (g) => ({ ...g, 'tls.key': g['tls.crt'] }), 'garbage_pem', /tls\.key is not a readable private key/],
    [
      "another certificate's key",
      (g) => ({ ...g, 'tls.key': otherLeaf.privateKeyPem }),
      'key_mismatch',
      /not the private key of the certificate in tls\.crt \(CN=provider/,
    ],
    ['a key whose private scalar was corrupted', (g) => ({ ...g, 'tls.key': corruptScalar(g['tls.key'] as string) }), 'key_mismatch', /not the private key/],
    ['an EC key with an RSA certificate', (g) => ({ ...g, 'tls.crt': rsaLeaf.certificate.pem }), 'key_mismatch', /not the private key/],
    ['a value that is neither text nor bytes', (g) => ({ ...g, 'tls.crt': 42 as unknown as string }), 'garbage_pem', /is a number, not bytes or text/],
  ];
  it.each(cases)('classifies %s', (_name, corrupt, problem, detail) => {
    const o = observeLeafSecret(corrupt(good), cache());
    expectProblem(o.leaf, problem, detail);
    expect(o.bundle.ok).toBe(true);
  });

  it('accepts an RSA key with its RSA certificate', () => {
    expect(observeLeafSecret({ ...good, 'tls.crt': rsaLeaf.certificate.pem, 'tls.key': rsaLeaf.privateKeyPem }, cache()).leaf.ok).toBe(true);
  });

  it('refuses an RSA key with public exponent 3, whatever signed its certificate, naming the exponent', () => {
    const o = observeLeafSecret({ ...good, 'tls.crt': weakLeaf.certificate.pem, 'tls.key': weakLeaf.privateKeyPem }, cache());
    expectProblem(
      o.leaf,
      'weak_key',
      /^tls\.crt holds CN=provider \(serial [0-9a-f]+\), an RSA key of 3072 bits with public exponent 3; only 65537 is accepted$/,
    );
  });

  it.each([
    ['an empty ca.crt', { 'ca.crt': '' }, 'empty', /ca\.crt is absent or empty/],
    ['a missing ca.crt', { 'ca.crt': undefined }, 'empty', /ca\.crt/],
    ['garbage in ca.crt', { 'ca.crt': '-----BEGIN CERTIFICATE-----\nzz\n' }, 'garbage_pem', /ca\.crt/],
    ['a leaf in ca.crt', { 'ca.crt': 'LEAF' }, 'not_a_ca', /certificate 2 of ca\.crt \(CN=provider\) is not a CA/],
  ] as const)('classifies %s in the bundle, leaving the leaf alone', (_name, patch, problem, detail) => {
    const data = { ...good, ...patch } as Record<string, unknown>;
    if (data['ca.crt'] === 'LEAF') data['ca.crt'] = ca.certificate.pem + leaf.certificate.pem;
    const o = observeLeafSecret(data as SecretData, cache());
    expectProblem(o.bundle, problem, detail);
    expect(o.leaf.ok).toBe(true);
  });

  it('accepts a bundle of several CAs, in order', () => {
    const o = observeLeafSecret({ ...good, 'ca.crt': nextCa.certificate.pem + ca.certificate.pem }, cache());
    expect(o.bundle.ok && o.bundle.value.map((c) => c.serialNumber)).toEqual([nextCa.certificate.serialNumber, ca.certificate.serialNumber]);
  });

  it('never throws, whatever the data', () => {
    const value = fc.oneof(
      fc.constant(undefined),
      fc.string(),
      fc.uint8Array({ maxLength: 40 }),
      fc
        .constantFrom(
          () => good['tls.crt'],
          () => good['tls.key'],
          () => ca.certificate.pem,
        )
        .map((f) => f() as string),
      fc
        .tuple(
          fc.constantFrom(
            () => leaf.certificate.pem,
            () => leaf.privateKeyPem,
          ),
          fc.nat(1200),
          fc.string({ maxLength: 3 }),
        )
        .map(([f, at, s]) => {
          const t = f();
          return t.slice(0, at) + s + t.slice(at + s.length);
        }),
    );
    const shared = cache();
    fc.assert(
      fc.property(fc.record({ 'tls.crt': value, 'tls.key': value, 'ca.crt': value, 'ca.key': value, 'next.crt': value, 'retired.crt': value }), (data) => {
        observeLeafSecret(data, shared);
        observeCaSecret(data, shared);
      }),
      { numRuns: 300 },
    );
  });
});

describe('observeCaSecret', () => {
  const caData = (): SecretData => ({ 'ca.crt': ca.certificate.pem, 'ca.key': ca.privateKeyPem });

  it('reads the active CA and reports absent parts as undefined', () => {
    const o = observeCaSecret(caData(), cache());
    expect(o.active?.ok && o.active.value.certificate.isCa).toBe(true);
    expect([o.next, o.retired]).toEqual([undefined, undefined]);
    expect(observeCaSecret({}, cache())).toEqual({ active: undefined, next: undefined, retired: undefined });
  });

  it('refuses a CA whose RSA key has public exponent 3, active or next, as an adopted CA Secret or a token key may hold', () => {
    const weak = { 'ca.crt': weakCa.certificate.pem, 'ca.key': weakCa.privateKeyPem };
    expectProblem(
      observeCaSecret(weak, cache()).active,
      'weak_key',
      /^ca\.crt holds .*, an RSA key of 3072 bits with public exponent 3; only 65537 is accepted$/,
    );
    const next = observeCaSecret({ ...caData(), 'next.crt': weakCa.certificate.pem, 'next.key': weakCa.privateKeyPem }, cache());
    expect(next.active?.ok).toBe(true);
    expectProblem(next.next, 'weak_key', /^next\.crt holds .*public exponent 3/);
    // A key kept in a token is judged by its certificate alone: the reference says nothing of the key.
    const reference = observeCaSecret({ 'ca.crt': weakCa.certificate.pem, 'ca.key-ref': 'pkcs11:object=eso-mtls-ca-1' }, cache());
    expectProblem(reference.active, 'weak_key', /public exponent 3/);
  });

  it('reads next and retired material', () => {
    const o = observeCaSecret(
      { ...caData(), 'next.crt': bytes(nextCa.certificate.pem), 'next.key': nextCa.privateKeyPem, 'retired.crt': nextCa.certificate.pem + ca.certificate.pem },
      cache(),
    );
    expect(o.next?.ok && o.next.value.certificate.serialNumber).toBe(nextCa.certificate.serialNumber);
    expect(o.retired?.ok && o.retired.value).toHaveLength(2);
  });

  it.each([
    ['a leaf where the CA is expected', { 'ca.crt': 'LEAF', 'ca.key': 'LEAFKEY' }, 'not_a_ca', /ca\.crt holds CN=provider, which is not a CA/],
    ['two CAs in ca.crt', { 'ca.crt': 'TWO' }, 'multiple_certificates', /ca\.crt holds 2 certificates/],
    ['a CA without its key', { 'ca.key': '' }, 'missing_key', /ca\.key/],
    ['a CA key alone', { 'ca.crt': undefined }, 'missing_certificate', /ca\.crt/],
    ['the next CA key in ca.key', { 'ca.key': 'NEXTKEY' }, 'key_mismatch', /ca\.key is not the private key/],
  ] as const)('classifies %s', (_name, patch, problem, detail) => {
    const subst: Record<string, string> = {
      LEAF: leaf.certificate.pem,
      LEAFKEY: leaf.privateKeyPem,
      TWO: ca.certificate.pem + nextCa.certificate.pem,
      NEXTKEY: nextCa.privateKeyPem,
    };
    const data = Object.fromEntries(Object.entries({ ...caData(), ...patch }).map(([k, v]) => [k, typeof v === 'string' ? (subst[v] ?? v) : v]));
    expectProblem(observeCaSecret(data, cache()).active, problem, detail);
  });

  it('classifies bad retired and next material', () => {
    const o = observeCaSecret({ ...caData(), 'next.crt': leaf.certificate.pem, 'next.key': leaf.privateKeyPem, 'retired.crt': 'junk' }, cache());
    expectProblem(o.next, 'not_a_ca', /next\.crt/);
    expectProblem(o.retired, 'garbage_pem', /retired\.crt/);
    expectProblem(
      observeCaSecret({ ...caData(), 'retired.crt': ca.certificate.pem + leaf.certificate.pem }, cache()).retired,
      'not_a_ca',
      /certificate 2 of retired\.crt/,
    );
    expectProblem(observeCaSecret({ ...caData(), 'next.key': nextCa.privateKeyPem }, cache()).next, 'missing_certificate', /next\.crt/);
  });
});
