/**
 * Fuzzing the PEM (RFC 7468) and DER (X.690) readers with text and bytes nobody vetted: each
 * returns a result or throws its own error class (PemError, DerError), never anything else, and
 * what it returns stays within the input.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { PemError, decodePemBlocks, encodePem } from '@eso-mtls/core';
import { DerError, children, oidToString, readElement, tlv } from '../../src/x509/der.js';
import { decodeBase64, encodeBase64 } from '../../src/x509/pem.js';
import { fuzzParameters } from '../../../../testing/fuzz/runs.js';

/** Calls `f`; a throw of `errorClass` is the classified failure, any other throw fails the property. */
function classified<T>(errorClass: new (...args: never[]) => Error, f: () => T): T | Error {
  try {
    return f();
  } catch (e) {
    if (e instanceof errorClass) return e;
    throw e;
  }
}

const BASE64_CHARS = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=', '\r', '\n', ' ', '-', ':', '\u00e9', '\ufffd'];
const base64ish = fc.array(fc.constantFrom(...BASE64_CHARS), { maxLength: 120 }).map((a) => a.join(''));

/** Lines that look like PEM: BEGIN/END lines with real and odd labels, base64, headers, blanks. */
const pemLine = fc.oneof(
  fc.constantFrom('CERTIFICATE', 'PRIVATE KEY', 'EC PRIVATE KEY', 'X', '', 'certificate').map((l) => `-----BEGIN ${l}-----`),
  fc.constantFrom('CERTIFICATE', 'PRIVATE KEY', 'EC PRIVATE KEY', 'X', '').map((l) => `-----END ${l}-----`),
  base64ish,
  fc.uint8Array({ maxLength: 60 }).map(encodeBase64),
  fc.constantFrom('', '  ', '\t', 'Proc-Type: 4,ENCRYPTED', '-----', '=', '===='),
  fc.string({ unit: 'binary', maxLength: 20 }),
);
const pemText = fc.oneof(
  fc.array(pemLine, { maxLength: 30 }).chain((lines) => fc.constantFrom('\n', '\r\n', '\r').map((eol) => lines.join(eol))),
  fc
    .array(fc.tuple(fc.constantFrom('CERTIFICATE', 'PRIVATE KEY'), fc.uint8Array({ maxLength: 300 })), { maxLength: 4 })
    .map((blocks) => blocks.map(([label, der]) => encodePem(label, der)).join('')),
  fc.string({ unit: 'binary', maxLength: 200 }),
);

describe('decodePemBlocks on arbitrary text', () => {
  it('returns non-empty blocks with well-formed labels, or throws PemError', () => {
    fc.assert(
      fc.property(pemText, (text) => {
        const result = classified(PemError, () => decodePemBlocks(text));
        if (result instanceof Error) return;
        expect(result.length).toBeGreaterThan(0);
        for (const block of result) {
          expect(block.label).toMatch(/^[A-Z0-9 ]+$/);
          expect(block.der.length).toBeGreaterThan(0);
          // Never more bytes than the text could hold in base64.
          expect(block.der.length).toBeLessThanOrEqual((text.length * 3) / 4);
        }
      }),
      fuzzParameters(1000),
    );
  });

  it('reads back exactly what encodePem wrote, whatever the label and the bytes', () => {
    const label = fc.stringMatching(/^[A-Z0-9]([A-Z0-9 ]{0,20}[A-Z0-9])?$/);
    fc.assert(
      fc.property(label, fc.uint8Array({ minLength: 1, maxLength: 2000 }), (l, der) => {
        const [block, ...rest] = decodePemBlocks(encodePem(l, der));
        expect(rest).toEqual([]);
        expect(block!.label).toBe(l);
        expect(Buffer.from(block!.der).equals(Buffer.from(der))).toBe(true);
      }),
      fuzzParameters(200),
    );
  });
});

describe('decodeBase64 on arbitrary text', () => {
  it('agrees with Node on what it accepts, and throws PemError on the rest', () => {
    fc.assert(
      fc.property(fc.oneof(base64ish, fc.uint8Array({ maxLength: 90 }).map(encodeBase64)), (text) => {
        const result = classified(PemError, () => decodeBase64(text));
        if (result instanceof Error) return;
        expect(text).toMatch(/^[A-Za-z0-9+/]*={0,2}$/);
        expect(text.length % 4).toBe(0);
        expect(Buffer.from(result).equals(Buffer.from(text, 'base64'))).toBe(true);
      }),
      fuzzParameters(1000),
    );
  });
});

/** Random TLV trees, encoded with the core's own writer. */
const tlvTree: fc.Arbitrary<Uint8Array> = fc.letrec<{ node: Uint8Array }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.tuple(fc.integer({ min: 0, max: 0x1e }), fc.uint8Array({ maxLength: 300 })).map(([tag, body]) => tlv(tag, body)),
    fc.tuple(fc.constantFrom(0x30, 0x31, 0xa0, 0xa3), fc.array(tie('node'), { maxLength: 4 })).map(([tag, kids]) => tlv(tag, ...kids)),
  ),
})).node;

/** Reads every element of `der` reachable from offset 0, recursing into constructed ones; returns how many. */
function walk(der: Uint8Array): number {
  let count = 0;
  const visit = (offset: number, limit: number): number => {
    const e = readElement(der, offset, limit);
    expect(e.start).toBe(offset);
    expect(e.contentStart).toBeGreaterThan(e.start);
    expect(e.end).toBeGreaterThanOrEqual(e.contentStart);
    expect(e.end).toBeLessThanOrEqual(limit);
    count++;
    if (e.tag & 0x20) {
      let covered = e.contentStart;
      for (const c of children(der, e)) {
        expect(c.start).toBe(covered);
        covered = visit(c.start, e.end);
      }
      expect(covered).toBe(e.end);
    }
    return e.end;
  };
  visit(0, der.length);
  return count;
}

describe('the DER reader on arbitrary bytes', () => {
  it('reads elements within their container, or throws DerError', () => {
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 200 }),
      tlvTree.chain((t) => fc.tuple(fc.nat(t.length), fc.nat(255)).map(([i, b]) => flip(t, i, b))),
    );
    fc.assert(
      fc.property(bytes, (der) => {
        classified(DerError, () => walk(der));
      }),
      fuzzParameters(1000),
    );
  });

  it('reads back every tree the writer encodes', () => {
    fc.assert(
      fc.property(tlvTree, (der) => {
        expect(walk(der)).toBeGreaterThan(0);
        expect(readElement(der, 0).end).toBe(der.length);
      }),
      fuzzParameters(300),
    );
  });

  it('gives the exact dotted OID of DER contents, and throws DerError on any other', () => {
    // Long runs of continuation octets make arcs far beyond 2^53.
    const continued = fc.tuple(fc.uint8Array({ maxLength: 30 }), fc.nat(255)).map(([b, last]) => Uint8Array.from([...b.map((x) => x | 0x80), last]));
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 64 }), continued), (body) => {
        const expected = referenceOid(body);
        const result = classified(DerError, () => oidToString(body));
        expect(result instanceof Error ? undefined : result).toBe(expected);
      }),
      fuzzParameters(1000),
    );
  });
});

/** X.690 8.19 with bigints, written for clarity: undefined for contents that are not DER. */
function referenceOid(body: Uint8Array): string | undefined {
  const arcs: bigint[] = [];
  let value = 0n;
  let length = 0;
  for (const b of body) {
    if (length === 0 && b === 0x80) return undefined;
    value = value * 128n + BigInt(b & 0x7f);
    length++;
    if (b & 0x80) continue;
    arcs.push(value);
    value = 0n;
    length = 0;
  }
  if (arcs.length === 0 || length > 0) return undefined;
  const [first, ...rest] = arcs;
  const head = first! < 80n ? [first! / 40n, first! % 40n] : [2n, first! - 80n];
  return [...head, ...rest].join('.');
}

function flip(bytes: Uint8Array, index: number, mask: number): Uint8Array {
  const out = Uint8Array.from(bytes);
  if (index < out.length) out[index]! ^= mask;
  return out;
}
