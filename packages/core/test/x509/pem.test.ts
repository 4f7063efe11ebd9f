import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { PemError, decodePemBlocks, encodePem } from '@eso-mtls/core';
import { decodeBase64, encodeBase64, textOf } from '../../src/x509/pem.js';

describe('base64', () => {
  it('round-trips and matches Node for every length', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const b64 = encodeBase64(bytes);
        expect(b64).toBe(Buffer.from(bytes).toString('base64'));
        expect(Buffer.from(decodeBase64(b64)).equals(Buffer.from(bytes))).toBe(true);
      }),
    );
  });

  it('rejects what lenient decoders skip: truncation, stray characters, misplaced padding', () => {
    expect(() => decodeBase64('QUJD' + 'QU')).toThrow(/multiple of 4/);
    expect(() => decodeBase64('QU*D')).toThrow(/invalid base64 character "\*"/);
    expect(() => decodeBase64('QU=D')).toThrow(PemError);
    expect(() => decodeBase64('Q===')).toThrow(PemError);
    expect(() => decodeBase64('QQ==QUJD')).toThrow(PemError);
  });
});

describe('PEM', () => {
  const der = Uint8Array.from({ length: 100 }, (_, i) => i);
  const pem = encodePem('CERTIFICATE', der);

  it('wraps at 64 columns with a trailing newline', () => {
    const lines = pem.split('\n');
    expect(lines[0]).toBe('-----BEGIN CERTIFICATE-----');
    expect(lines[1]).toHaveLength(64);
    expect(pem.endsWith('-----END CERTIFICATE-----\n')).toBe(true);
  });

  it('accepts CRLF line ends, indentation and surrounding blank lines', () => {
    const messy = `\r\n  ${pem.replaceAll('\n', '  \r\n')}\r\n\r\n`;
    const [block] = decodePemBlocks(messy);
    expect(block!.label).toBe('CERTIFICATE');
    expect(Buffer.from(block!.der).equals(Buffer.from(der))).toBe(true);
  });

  it('reads several blocks in order', () => {
    const two = pem + encodePem('PRIVATE KEY', Uint8Array.of(1, 2, 3));
    expect(decodePemBlocks(two).map((b) => b.label)).toEqual(['CERTIFICATE', 'PRIVATE KEY']);
  });

  it.each([
    ['no block at all', 'hello world', /outside any PEM block/],
    ['text between blocks', `${pem}junk\n${pem}`, /line 6 is outside any PEM block: "junk"/],
    ['a missing END line', pem.replace('-----END CERTIFICATE-----\n', ''), /no END line/],
    ['mismatched END', pem.replace('END CERTIFICATE', 'END PRIVATE KEY'), /does not close BEGIN CERTIFICATE/],
    ['truncated base64', pem.replace(/[A-Za-z0-9+/=]{3}\n-----END/, '\n-----END'), /not a multiple of 4 \(truncated\?\)/],
    ['an empty block', '-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n', /is empty/],
    ['the empty string', '', /no PEM block found/],
    ['encapsulated headers', pem.replace('-----\n', '-----\nProc-Type: 4,ENCRYPTED\n'), /headers are not supported/],
  ])('rejects %s, saying where', (_name, text, message) => {
    expect(() => decodePemBlocks(text)).toThrow(message);
  });

  it('decodes Secret bytes as text without ever throwing', () => {
    expect(textOf(Buffer.from(pem))).toBe(pem);
    expect(textOf(Uint8Array.of(0xff, 0x00, 0x41))).toBe('\ufffd\u0000A');
    expect(textOf(new Uint8Array(20_000).fill(0x41))).toHaveLength(20_000);
  });
});
