import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { DerError, Tag, children, namedBits, oid, oidToString, readElement, sequence, smallInteger, time, tlv, unsignedInteger } from '../../src/x509/der.js';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

describe('DER writer', () => {
  it('encodes INTEGER magnitudes minimally, adding a zero octet when the top bit is set', () => {
    expect(hex(unsignedInteger(Uint8Array.of(0x00, 0x00, 0x7f)))).toBe('02017f');
    expect(hex(unsignedInteger(Uint8Array.of(0x80)))).toBe('02020080');
    expect(hex(unsignedInteger(Uint8Array.of(0x00, 0x80)))).toBe('02020080');
    expect(hex(unsignedInteger(Uint8Array.of(0, 0)))).toBe('020100');
    expect(hex(smallInteger(0))).toBe('020100');
    expect(hex(smallInteger(2))).toBe('020102');
    expect(hex(smallInteger(256))).toBe('02020100');
    expect(() => smallInteger(-1)).toThrow(DerError);
  });

  it('encodes lengths in short and long form', () => {
    expect(hex(tlv(Tag.OCTET_STRING, new Uint8Array(127))).slice(0, 4)).toBe('047f');
    expect(hex(tlv(Tag.OCTET_STRING, new Uint8Array(128))).slice(0, 6)).toBe('048180');
    expect(hex(tlv(Tag.OCTET_STRING, new Uint8Array(300))).slice(0, 8)).toBe('0482012c');
    expect(tlv(Tag.OCTET_STRING, new Uint8Array(70000)).length).toBe(70000 + 5);
  });

  it('round-trips object identifiers, including multi-octet arcs', () => {
    for (const dotted of ['2.5.29.19', '1.2.840.113549.1.1.11', '1.3.6.1.5.5.7.3.2', '0.9.2342.19200300.100.1.25', '2.999.3']) {
      const encoded = oid(dotted);
      expect(oidToString(encoded.subarray(2))).toBe(dotted);
    }
    expect(hex(oid('1.2.840.10045.4.3.2'))).toBe('06082a8648ce3d040302');
  });

  it('encodes named bits without trailing zero bits (keyUsage)', () => {
    expect(hex(namedBits([0]))).toBe('03020780'); // digitalSignature
    expect(hex(namedBits([0, 2]))).toBe('030205a0'); // + keyEncipherment
    expect(hex(namedBits([5, 6]))).toBe('03020106'); // keyCertSign + cRLSign
    expect(hex(namedBits([8]))).toBe('0303070080'); // decipherOnly spills into a second octet
  });

  it('writes UTCTime up to 2049 and GeneralizedTime from 2050, in whole seconds', () => {
    expect(Buffer.from(time(Date.parse('2049-12-31T23:59:59Z')).subarray(2)).toString()).toBe('491231235959Z');
    expect(time(Date.parse('2049-12-31T23:59:59Z'))[0]).toBe(Tag.UTC_TIME);
    expect(Buffer.from(time(Date.parse('2050-01-01T00:00:00Z')).subarray(2)).toString()).toBe('20500101000000Z');
    expect(time(Date.parse('2050-01-01T00:00:00Z'))[0]).toBe(Tag.GENERALIZED_TIME);
    expect(Buffer.from(time(Date.parse('1999-02-03T04:05:06.789Z')).subarray(2)).toString()).toBe('990203040506Z');
  });
});

describe('DER reader', () => {
  it('walks nested elements', () => {
    const der = sequence(smallInteger(5), sequence(oid('2.5.4.3')));
    const outer = readElement(der, 0);
    expect(outer.end).toBe(der.length);
    const [a, b] = children(der, outer);
    expect(a!.tag).toBe(Tag.INTEGER);
    expect(children(der, b!)[0]!.tag).toBe(Tag.OID);
  });

  it('rejects truncated input and lengths past the container', () => {
    const der = sequence(smallInteger(5), smallInteger(6));
    expect(() => readElement(der.subarray(0, der.length - 1), 0)).toThrow(/past the end/);
    expect(() => readElement(Uint8Array.of(0x30), 0)).toThrow(/truncated/);
    expect(() => readElement(Uint8Array.of(0x30, 0x85, 1, 1, 1, 1, 1), 0)).toThrow(/unsupported DER length/);
    expect(() => readElement(Uint8Array.of(0x30, 0x82, 1), 0)).toThrow(/truncated/);
  });

  it('never throws anything but DerError on arbitrary bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        try {
          const e = readElement(bytes, 0);
          if (e.tag & 0x20) children(bytes, e);
        } catch (err) {
          expect(err).toBeInstanceOf(DerError);
        }
      }),
    );
  });
});
