import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { CertificateParseError, bundlePem, encodePem, issueCa, parseCertificate, resolvePolicy, splitPemCertificates } from '@eso-mtls/core';
import { decodeString } from '../../src/x509/distinguished-name.js';
import { p256Request, signRequest } from '@eso-mtls/test-kit/openssl';
import { nodeBackend, openssl, tempDir } from '../support/fixtures.js';

// Certificates made by OpenSSL, so parsing is checked against encodings we did not produce.
const tmp = tempDir('parse');
let caPem: string;
let leafPem: string;
let keyPem: string;

beforeAll(() => {
  const ext = tmp.write(
    'leaf.ext',
    [
      'basicConstraints = critical, CA:FALSE',
      'keyUsage = critical, digitalSignature',
      'extendedKeyUsage = serverAuth, clientAuth, codeSigning',
      'subjectAltName = DNS:a.example, URI:spiffe://td/ns/x, IP:127.0.0.1, DNS:b.example',
      'subjectKeyIdentifier = hash',
      'authorityKeyIdentifier = keyid:always',
    ].join('\n'),
  );
  const run = (args: string[]): void => {
    const r = openssl(args);
    if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.output}`);
  };
  const file = (name: string): string => `${tmp.dir}/${name}`;
  const caExtensions = ['-addext', 'basicConstraints=critical,CA:TRUE,pathlen:3', '-addext', 'keyUsage=critical,keyCertSign'];
  run(p256Request('self-signed', file('ca.key'), file('ca.pem'), '/C=DE/O=Acme, Inc./OU=PKI+CN=Acme Root', '-days', '30', ...caExtensions));
  run(p256Request('csr', file('leaf.key'), file('leaf.csr'), '/CN=a.example'));
  run(signRequest(file('leaf.csr'), file('ca.pem'), file('ca.key'), file('leaf.pem'), '-set_serial', '0x00ff01', '-days', '10', '-extfile', ext));
  caPem = readFileSync(file('ca.pem'), 'utf8');
  leafPem = readFileSync(file('leaf.pem'), 'utf8');
  keyPem = readFileSync(file('leaf.key'), 'utf8');
});
afterAll(() => tmp.remove());

describe('parseCertificate', () => {
  it('reads what OpenSSL wrote, agreeing with Node X509Certificate', () => {
    const view = parseCertificate(leafPem);
    const node = new X509Certificate(leafPem);
    expect(view.serialNumber).toBe('ff01');
    expect(node.serialNumber.toLowerCase()).toMatch(/^0*ff01$/);
    expect(view.notBefore).toBe(Date.parse(node.validFrom));
    expect(view.notAfter).toBe(Date.parse(node.validTo));
    expect(view.subject).toBe('CN=a.example');
    expect(view.subjectCommonName).toBe('a.example');
    expect(view.isCa).toBe(false);
    expect(view.pathLenConstraint).toBeUndefined();
    expect(view.dnsNames).toEqual(['a.example', 'b.example']);
    expect(view.uris).toEqual(['spiffe://td/ns/x']);
    expect(view.extendedKeyUsage).toEqual(['serverAuth', 'clientAuth', '1.3.6.1.5.5.7.3.3']);
    expect(view.signatureAlgorithm).toBe('1.2.840.10045.4.3.2');
    expect(Buffer.from(view.subjectPublicKeyInfo).equals(node.publicKey.export({ type: 'spki', format: 'der' }))).toBe(true);
    expect(Buffer.from(view.der).equals(node.raw)).toBe(true);
  });

  it('reads a multi-valued, reversed RFC 4514 issuer name, with escaping', () => {
    const ca = parseCertificate(caPem);
    expect(ca.subject).toBe('OU=PKI+CN=Acme Root,O=Acme\\, Inc.,C=DE');
    expect(parseCertificate(leafPem).issuer).toBe(ca.subject);
    expect(ca.isCa).toBe(true);
    expect(ca.pathLenConstraint).toBe(3);
    expect(ca.subjectCommonName).toBe('Acme Root');
  });

  it('reads SKI and AKI as OpenSSL computed them', () => {
    const ca = parseCertificate(caPem);
    const leaf = parseCertificate(leafPem);
    const text = openssl(['x509', '-in', `${tmp.dir}/leaf.pem`, '-noout', '-ext', 'subjectKeyIdentifier,authorityKeyIdentifier']).output;
    expect(text.replaceAll(':', '').toLowerCase()).toContain(leaf.subjectKeyIdentifier!);
    expect(leaf.authorityKeyIdentifier).toBe(ca.subjectKeyIdentifier);
  });

  it('keeps the exact signed bytes: TBSCertificate and signature verify with Node', async () => {
    const { verify, createPublicKey } = await import('node:crypto');
    const leaf = parseCertificate(leafPem);
    const ca = parseCertificate(caPem);
    const key = createPublicKey({ key: Buffer.from(ca.subjectPublicKeyInfo), format: 'der', type: 'spki' });
    expect(verify('sha256', leaf.tbsCertificate, key, leaf.signatureValue)).toBe(true);
  });

  it('accepts DER, CRLF and trailing whitespace, and normalises the PEM', () => {
    const canonical = parseCertificate(leafPem).pem;
    expect(parseCertificate(new X509Certificate(leafPem).raw).pem).toBe(canonical);
    expect(parseCertificate(`\n${leafPem.replaceAll('\n', '\r\n')}   \n\n`).pem).toBe(canonical);
    expect(canonical.endsWith('-----END CERTIFICATE-----\n')).toBe(true);
  });

  it.each([
    ['two certificates', () => leafPem + caPem, /expected one certificate, found 2/],
    ['a private key', () => keyPem, /is a PRIVATE KEY, where only CERTIFICATE blocks are expected/],
    ['garbage text', () => 'not a certificate', /not PEM/],
    ['a certificate PEM around garbage bytes', () => encodePem('CERTIFICATE', Uint8Array.of(1, 2, 3, 4)), /not a well-formed X.509 certificate/],
    [
      'trailing data after the DER',
      () => encodePem('CERTIFICATE', Buffer.concat([new X509Certificate(leafPem).raw, Buffer.of(0)])),
      /1 bytes of trailing data/,
    ],
    ['a truncated DER', () => encodePem('CERTIFICATE', new X509Certificate(leafPem).raw.subarray(0, 200)), /past the end/],
  ])('rejects %s with CertificateParseError', (_name, input, message) => {
    expect(() => parseCertificate(input())).toThrow(CertificateParseError);
    expect(() => parseCertificate(input())).toThrow(message);
  });

  it('throws only CertificateParseError on corrupted DER, whatever the corruption', () => {
    const der = new Uint8Array(new X509Certificate(leafPem).raw);
    fc.assert(
      fc.property(fc.nat(der.length - 1), fc.integer({ min: 0, max: 255 }), fc.nat(der.length), (at, value, cut) => {
        const bad = der.slice(0, Math.max(cut, at + 1));
        bad[at] = value;
        try {
          parseCertificate(bad);
        } catch (e) {
          expect(e).toBeInstanceOf(CertificateParseError);
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('certificate reader details', () => {
  it('reads UTCTime before 2050 and GeneralizedTime from 2050 as Node does', async () => {
    const crypto = nodeBackend();
    const ca = await issueCa({ crypto, policy: resolvePolicy(), now: Date.parse('2049-06-01T12:00:00Z') });
    const node = new X509Certificate(ca.certificate.pem);
    const view = parseCertificate(ca.certificate.pem);
    expect(view.notBefore).toBe(Date.parse(node.validFrom));
    expect(view.notAfter).toBe(Date.parse(node.validTo));
    expect(new Date(view.notAfter).toISOString()).toBe('2050-06-01T12:00:00.000Z');
  });

  it('decodes every DirectoryString type', () => {
    expect(decodeString(0x0c, Buffer.from('grüß', 'utf8'))).toBe('grüß');
    expect(decodeString(0x13, Buffer.from('Printable'))).toBe('Printable');
    expect(decodeString(0x1e, Buffer.from('00670072', 'hex'))).toBe('gr');
    expect(decodeString(0x1c, Buffer.from('0001f600', 'hex'))).toBe('\u{1f600}');
    expect(decodeString(0x04, Buffer.from('x'))).toBeUndefined();
  });

  it('rejects an impossible date', async () => {
    const crypto = nodeBackend();
    const ca = await issueCa({ crypto, policy: resolvePolicy(), now: Date.parse('2026-01-30T12:00:00Z') });
    // Patch the notBefore UTCTime 260130115500Z into 260230115500Z (February 30th); the reader must refuse it.
    const der = Buffer.from(ca.certificate.der);
    const at = der.indexOf(Buffer.from('260130115500Z'));
    expect(at).toBeGreaterThan(0);
    der.write('260230115500Z', at);
    expect(() => parseCertificate(der)).toThrow(/notBefore "260230115500Z" is not a valid date/);
  });
});

describe('splitPemCertificates and bundlePem', () => {
  it('split a bundle into normalised blocks and join them back in order', () => {
    const blocks = splitPemCertificates(`${leafPem.replaceAll('\n', '\r\n')}\n\n${caPem}`);
    expect(blocks).toHaveLength(2);
    const views = blocks.map((b) => parseCertificate(b));
    expect(bundlePem(views)).toBe(views[0]!.pem + views[1]!.pem);
    expect(bundlePem([])).toBe('');
  });
});
