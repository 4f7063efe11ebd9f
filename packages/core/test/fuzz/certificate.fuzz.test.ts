/**
 * Fuzzing the certificate reader (parseCertificate and the CertificateCache in front of it) with
 * arbitrary bytes and text and with mutations of certificates the core issued. The classified
 * failure is CertificateParseError; anything else thrown fails. Where OpenSSL (node:crypto's
 * X509Certificate) reads the same bytes, the fields both read must agree.
 *
 * Memory bound: the CertificateView of an input of n bytes (or n characters of PEM) retains at
 * most 16n + 4 KiB, counted structurally (2 bytes per character plus a header per string, 8 per
 * array slot, each distinct buffer once). Inputs go up to 1 MiB, the apiserver's cap on a Secret.
 * Time bound: one input is read well within the controller's 10 s leader-election renew deadline,
 * which a synchronous read longer than that would make it miss.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { X509Certificate, createPublicKey } from 'node:crypto';
import { CertificateCache, CertificateParseError, type CertificateView, parseCertificate } from '@eso-mtls/core';
import { encodePem } from '../../src/x509/pem.js';
import { nodeBackend } from '../support/fixtures.js';
import { type FuzzParameters, fuzzParameters } from '../../../../testing/fuzz/runs.js';
import { derMutations, mutateDer } from './mutate.js';
import { allIssued as issued } from './pki.js';

const crypto = nodeBackend();

/** 10 s: the default leader-election renew deadline a blocking read must stay well inside. */
const RENEW_DEADLINE_MS = 10_000;
const MAX_SECRET_BYTES = 1024 * 1024;

/** `p` with a thousandth of its runs, at least one. */
const perThousand = (p: FuzzParameters): FuzzParameters => ({ ...p, numRuns: Math.max(1, Math.round(p.numRuns / 1000)) });

/** parseCertificate, or the CertificateParseError it threw; any other throw fails the property. */
function parse(input: string | Uint8Array): CertificateView | CertificateParseError {
  const started = performance.now();
  try {
    return parseCertificate(input);
  } catch (e) {
    if (!(e instanceof CertificateParseError)) throw e;
    // A parse error names what is wrong with the certificate, never a limit of the engine.
    expect(e.message).not.toMatch(/call stack|Invalid (string|array|typed array) length/);
    return e;
  } finally {
    expect(performance.now() - started).toBeLessThan(RENEW_DEADLINE_MS);
  }
}

/** Bytes retained by `value`, counted structurally; each buffer counted once. */
function retainedBytes(value: unknown, buffers = new Set<ArrayBufferLike>()): number {
  if (typeof value === 'string') return 16 + 2 * value.length;
  if (value instanceof Uint8Array) {
    if (buffers.has(value.buffer)) return 0;
    buffers.add(value.buffer);
    return value.buffer.byteLength;
  }
  if (Array.isArray(value)) return 16 + value.reduce((n: number, v) => n + 8 + retainedBytes(v, buffers), 0);
  if (value !== null && typeof value === 'object') return Object.values(value).reduce((n: number, v) => n + 8 + retainedBytes(v, buffers), 16);
  return 8;
}

function expectBounded(view: CertificateView | CertificateParseError, inputSize: number): void {
  const size = view instanceof CertificateParseError ? 2 * view.message.length : retainedBytes(view);
  expect(size).toBeLessThanOrEqual(16 * inputSize + 4096);
}

/** The fields OpenSSL reads too must agree with ours, when OpenSSL reads the certificate at all. */
function expectAgreesWithOpenSsl(view: CertificateView): void {
  let x: X509Certificate;
  try {
    x = new X509Certificate(view.der);
  } catch {
    return;
  }
  expect(view.notBefore).toBe(x.validFromDate.getTime());
  expect(view.notAfter).toBe(x.validToDate.getTime());
  // OpenSSL re-encodes the key it exports, so both sides go through the same export.
  const exported = (read: () => { export(o: { type: 'spki'; format: 'der' }): Buffer }): Buffer | undefined => {
    try {
      return read().export({ type: 'spki', format: 'der' });
    } catch {
      return undefined;
    }
  };
  const theirs = exported(() => x.publicKey);
  if (theirs) expect(exported(() => createPublicKey({ key: Buffer.from(view.subjectPublicKeyInfo), format: 'der', type: 'spki' }))).toEqual(theirs);
  // OpenSSL's `ca` also needs keyUsage keyCertSign; whatever it calls a CA, we must too.
  if (x.ca) expect(view.isCa).toBe(true);
}

describe('parseCertificate on arbitrary input', () => {
  it('reads arbitrary bytes and text as a certificate or a CertificateParseError', () => {
    const input = fc.oneof(
      fc.uint8Array({ maxLength: 400 }),
      fc.string({ unit: 'binary', maxLength: 400 }),
      fc.uint8Array({ maxLength: 300 }).map((b) => encodePem('CERTIFICATE', b)),
    );
    fc.assert(
      fc.property(input, (i) => {
        const view = parse(i);
        expectBounded(view, i.length);
      }),
      fuzzParameters(800),
    );
  });

  it('reads mutated certificates as certificates OpenSSL agrees with, or a CertificateParseError', () => {
    fc.assert(
      fc.property(fc.nat(), derMutations, fc.boolean(), (which, mutations, asPem) => {
        const der = mutateDer(issued[which % issued.length]!.certificate.der, mutations);
        const input = asPem ? encodePem('CERTIFICATE', der) : der;
        const view = parse(input);
        expectBounded(view, input.length);
        if (!(view instanceof CertificateParseError)) expectAgreesWithOpenSsl(view);
      }),
      fuzzParameters(600),
    );
  });

  it('reads a certificate with one element blown up to 1 MiB within the bounds', () => {
    const big = fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 8 }), fc.integer({ min: 1000, max: MAX_SECRET_BYTES - 2000 })).map(([unit, size]) => {
      const out = new Uint8Array(size);
      for (let i = 0; i < size; i++) out[i] = unit[i % unit.length]!;
      return out;
    });
    fc.assert(
      fc.property(fc.nat(), fc.nat(), big, fc.boolean(), (which, at, bytes, asPem) => {
        const der = mutateDer(issued[which % issued.length]!.certificate.der, [{ kind: 'contents', at, bytes }]);
        const input = asPem ? encodePem('CERTIFICATE', der) : der;
        expectBounded(parse(input), input.length);
      }),
      // Each input is up to 1 MiB: this property counts in thousands of the others' runs (4 in `npm test`).
      perThousand(fuzzParameters(4000)),
    );
  });
});

describe('CertificateCache.parseBundle on arbitrary text', () => {
  it('returns certificates or throws CertificateParseError, memoising both', () => {
    const block = fc.oneof(
      fc.nat().map((i) => issued[i % issued.length]!.certificate.pem),
      fc.tuple(fc.nat(), derMutations).map(([i, m]) => encodePem('CERTIFICATE', mutateDer(issued[i % issued.length]!.certificate.der, m))),
      fc.uint8Array({ maxLength: 100 }).map((b) => encodePem('PRIVATE KEY', b)),
      fc.string({ maxLength: 30 }),
    );
    const cache = new CertificateCache(crypto.verifier, { maxEntries: 64 });
    fc.assert(
      fc.property(fc.array(block, { maxLength: 5 }), (blocks) => {
        const text = blocks.join('');
        const read = (): readonly CertificateView[] | CertificateParseError => {
          try {
            return cache.parseBundle(text);
          } catch (e) {
            if (e instanceof CertificateParseError) return e;
            throw e;
          }
        };
        const first = read();
        expect(read()).toBe(first);
      }),
      fuzzParameters(300),
    );
  });
});
