import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { sha256 } from '@eso-mtls/core';

const reference = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');

describe('sha256', () => {
  it('matches the FIPS 180-4 test vectors', () => {
    expect(Buffer.from(sha256(new Uint8Array(0))).toString('hex')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(Buffer.from(sha256(Buffer.from('abc'))).toString('hex')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('matches node:crypto at every padding boundary', () => {
    for (const n of [1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1000]) {
      const data = Uint8Array.from({ length: n }, (_, i) => (i * 31 + n) & 0xff);
      expect(Buffer.from(sha256(data)).toString('hex')).toBe(reference(data));
    }
  });

  it('matches node:crypto on random inputs', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (data) => {
        expect(Buffer.from(sha256(data)).toString('hex')).toBe(reference(data));
      }),
    );
  });
});
