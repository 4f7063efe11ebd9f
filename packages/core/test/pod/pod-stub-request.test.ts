import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { MAX_STUB_REQUEST_BYTES, StubRequestError, stubRequestPublicKey } from '../../src/pod/stub-request.js';
import { openssl, tempDir } from '../support/fixtures.js';
import { type KeyPair, POD_KEYS, spkiOf, stubRequest } from '../support/pod-keys.js';

// stubRequestPublicKey on stub PKCS#10 requests made by OpenSSL exactly as the facts document made
// them for kube-apiserver (`openssl req -new -key K -subj / -outform DER`): the key taken is the
// key's own SubjectPublicKeyInfo, byte for byte; anything that is not one DER request, or is over
// the size bound, is a StubRequestError with a message.

const tmp = tempDir('pod-stub-request');
afterAll(() => tmp.remove());

const KEYS: Readonly<Record<string, () => KeyPair>> = {
  ...POD_KEYS,
  // Types podKeyTypeOf refuses: the request is still read, the key type decided later.
  'RSA-2048': () => generateKeyPairSync('rsa', { modulusLength: 2048 }),
  'P-224': () => generateKeyPairSync('ec', { namedCurve: 'secp224r1' }),
  secp256k1: () => generateKeyPairSync('ec', { namedCurve: 'secp256k1' }),
  Ed448: () => generateKeyPairSync('ed448'),
};

const made = new Map<string, { readonly pair: KeyPair; readonly request: Uint8Array }>();
beforeAll(() => {
  for (const [name, make] of Object.entries(KEYS)) {
    const pair = make();
    made.set(name, { pair, request: stubRequest(tmp, name, pair) });
  }
});

/** The StubRequestError `f` throws (failing when it throws anything else or nothing). */
function stubError(f: () => unknown): StubRequestError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(StubRequestError);
    return e as StubRequestError;
  }
  throw new Error('expected a StubRequestError, got a result');
}

describe('stubRequestPublicKey on OpenSSL-made stub requests', () => {
  it.each(Object.keys(KEYS))('takes the %s key, equal to the key pair SubjectPublicKeyInfo', (name) => {
    const { pair, request } = made.get(name)!;
    expect(Buffer.from(stubRequestPublicKey(request)).toString('hex')).toBe(Buffer.from(spkiOf(pair)).toString('hex'));
  });

  it('matches what openssl itself reads as the request public key', () => {
    const { request } = made.get('ECDSAP384')!;
    const path = `${tmp.dir}/ECDSAP384.der`;
    const r = openssl(['req', '-in', path, '-inform', 'DER', '-pubkey', '-noout']);
    expect(r.status).toBe(0);
    const body = r.output.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '');
    expect(Buffer.from(stubRequestPublicKey(request)).toString('base64')).toBe(body);
  });

  it('returns a copy: changing the request afterwards does not change the key', () => {
    const { pair, request } = made.get('ED25519')!;
    const copy = Uint8Array.from(request);
    const key = stubRequestPublicKey(copy);
    copy.fill(0);
    expect(key).toEqual(spkiOf(pair));
  });

  it('takes only the key from a request with a subject, a SAN and an EKU', () => {
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const request = stubRequest(
      tmp,
      'evil',
      pair,
      '/CN=evil/O=attackers',
      '-addext',
      'subjectAltName=DNS:evil.example,URI:spiffe://cluster.local/ns/external-secrets-system/sa/external-secrets',
      '-addext',
      'extendedKeyUsage=clientAuth,serverAuth',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
    );
    const text = openssl(['req', '-in', `${tmp.dir}/evil.der`, '-inform', 'DER', '-noout', '-text']).output;
    expect(text).toMatch(/DNS:evil\.example/);
    expect(stubRequestPublicKey(request)).toEqual(spkiOf(pair));
  });
});

describe('stubRequestPublicKey refuses what is not one DER CertificationRequest', () => {
  it('the empty input and garbage', () => {
    expect(stubError(() => stubRequestPublicKey(new Uint8Array(0))).message).toMatch(/^not a DER CertificationRequest: /);
    expect(stubError(() => stubRequestPublicKey(new TextEncoder().encode('hello, signer'))).message).toMatch(/^not a DER CertificationRequest: /);
    expect(stubError(() => stubRequestPublicKey(Uint8Array.of(0x02, 0x01, 0x00))).message).toBe('not one DER CertificationRequest');
  });

  it('the PEM form of a request (the field is DER)', () => {
    const path = `${tmp.dir}/ECDSAP256.der`;
    const pem = openssl(['req', '-in', path, '-inform', 'DER', '-outform', 'PEM']).output;
    expect(pem).toMatch(/^-----BEGIN CERTIFICATE REQUEST-----/);
    expect(stubError(() => stubRequestPublicKey(new TextEncoder().encode(pem))).message).toMatch(/^not (a|one) DER CertificationRequest/);
  });

  it('a request followed by trailing bytes', () => {
    const { request } = made.get('ECDSAP256')!;
    for (const tail of [[0x00], [0x05, 0x00], [...request]]) {
      expect(stubError(() => stubRequestPublicKey(Uint8Array.from([...request, ...tail]))).message).toBe('not one DER CertificationRequest');
    }
  });

  it('a truncated request, whatever the cut', () => {
    const { request } = made.get('RSA3072')!;
    for (let length = 0; length < request.length; length += 7) {
      expect(stubError(() => stubRequestPublicKey(request.subarray(0, length))).message).toMatch(/^not a DER CertificationRequest: /);
    }
  });

  it('a certificationRequestInfo without a subjectPKInfo', () => {
    // SEQUENCE { SEQUENCE { INTEGER 0, SEQUENCE {} } }
    const der = Uint8Array.of(0x30, 0x07, 0x30, 0x05, 0x02, 0x01, 0x00, 0x30, 0x00);
    expect(stubError(() => stubRequestPublicKey(der)).message).toBe('certificationRequestInfo lacks a version, subject or subjectPKInfo');
    expect(stubError(() => stubRequestPublicKey(Uint8Array.of(0x30, 0x03, 0x02, 0x01, 0x00))).message).toBe('no certificationRequestInfo');
  });

  it(`anything over ${MAX_STUB_REQUEST_BYTES} bytes, before reading it, even a well-formed request`, () => {
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const sans = Array.from({ length: 700 }, (_, i) => `DNS:name-${i}.a-rather-long-domain.example`).join(',');
    const big = stubRequest(tmp, 'big', pair, '/', '-addext', `subjectAltName=${sans}`);
    expect(big.length).toBeGreaterThan(MAX_STUB_REQUEST_BYTES);
    expect(stubError(() => stubRequestPublicKey(big)).message).toBe(`the stub request is ${big.length} bytes, over the limit of ${MAX_STUB_REQUEST_BYTES}`);
    const huge = new Uint8Array(64 * 1024 * 1024);
    expect(stubError(() => stubRequestPublicKey(huge)).message).toMatch(/^the stub request is 67108864 bytes, over the limit of 16384$/);
    // At the bound exactly the request is read (and this one refused for its content, not its size).
    expect(stubError(() => stubRequestPublicKey(new Uint8Array(MAX_STUB_REQUEST_BYTES))).message).toMatch(/^not (a|one) DER CertificationRequest/);
  });

  it('the largest request a kubelet makes, RSA-4096, is far below the bound', () => {
    expect(made.get('RSA4096')!.request.length).toBeLessThan(MAX_STUB_REQUEST_BYTES / 8);
  });

  it('throws nothing but StubRequestError, for any bytes or any mutation of a real request', () => {
    const requests = [...made.values()].map((m) => m.request);
    const mutated = fc
      .tuple(fc.constantFrom(...requests), fc.nat(), fc.integer({ min: 0, max: 255 }), fc.nat({ max: 8 }))
      .map(([r, i, b, cut]) => Uint8Array.from(r.map((x, j) => (j === i % r.length ? b : x))).subarray(0, r.length - cut));
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 2000 }), mutated), (bytes) => {
        try {
          const key = stubRequestPublicKey(bytes);
          expect(key.length).toBeLessThan(bytes.length);
        } catch (e) {
          expect(e).toBeInstanceOf(StubRequestError);
        }
      }),
      { numRuns: 500 },
    );
  });
});
