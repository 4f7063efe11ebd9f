import { beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { POD_KEY_TYPES } from '@eso-mtls/core';
import { podKeyTypeOf } from '../../src/pod/pod-key.js';
import { type KeyPair, POD_KEYS, spkiOf } from '../support/pod-keys.js';

// podKeyTypeOf on public keys node:crypto (OpenSSL) makes, as a kubelet's Go crypto would: the six
// types a kubelet can ask for are recognised, every other key is refused with a message that
// names its type and lists the accepted ones.

const ACCEPTED_LIST = 'RSA3072, RSA4096, ECDSAP256, ECDSAP384, ECDSAP521, ED25519';

/** Keys no kubelet sends, with what the refusal must call them. */
const refusedKeys: readonly (readonly [string, () => KeyPair, RegExp])[] = [
  ['RSA-2048', () => generateKeyPairSync('rsa', { modulusLength: 2048 }), /^an RSA key of 2048 bits; /],
  ['RSA-3080', () => generateKeyPairSync('rsa', { modulusLength: 3080 }), /^an RSA key of 3080 bits; /],
  ['ECDSA P-224', () => generateKeyPairSync('ec', { namedCurve: 'secp224r1' }), /^an ECDSA key on curve P-224; /],
  ['ECDSA secp256k1', () => generateKeyPairSync('ec', { namedCurve: 'secp256k1' }), /^an ECDSA key on curve secp256k1; /],
  ['ECDSA brainpoolP256r1', () => generateKeyPairSync('ec', { namedCurve: 'brainpoolP256r1' }), /^an ECDSA key on curve 1\.3\.36\.3\.3\.2\.8\.1\.1\.7; /],
  ['X25519', () => generateKeyPairSync('x25519'), /^a key of type X25519 \(algorithm 1\.3\.101\.110\); /],
  ['X448', () => generateKeyPairSync('x448'), /^a key of type X448 \(algorithm 1\.3\.101\.111\); /],
  ['Ed448', () => generateKeyPairSync('ed448'), /^a key of type Ed448 \(algorithm 1\.3\.101\.113\); /],
  ['RSASSA-PSS 3072', () => generateKeyPairSync('rsa-pss', { modulusLength: 3072 }), /^a key of type RSASSA-PSS \(algorithm 1\.2\.840\.113549\.1\.1\.10\); /],
];

/** Each key made once: RSA-4096 takes a while on a loaded machine. */
const spkis = new Map<string, Uint8Array>();
beforeAll(() => {
  for (const [type, make] of Object.entries(POD_KEYS)) spkis.set(type, spkiOf(make()));
  for (const [name, make] of refusedKeys) spkis.set(name, spkiOf(make()));
});

describe('podKeyTypeOf', () => {
  it('knows exactly the six types a kubelet can ask for', () => {
    expect(POD_KEY_TYPES).toEqual(['RSA3072', 'RSA4096', 'ECDSAP256', 'ECDSAP384', 'ECDSAP521', 'ED25519']);
  });

  it.each(POD_KEY_TYPES)('recognises a %s key made by node:crypto', (type) => {
    expect(podKeyTypeOf(spkis.get(type)!)).toEqual({ ok: true, type });
  });

  it.each(refusedKeys.map(([name, , message]) => [name, message] as const))('refuses %s, naming it and listing the accepted types', (name, message) => {
    const result = podKeyTypeOf(spkis.get(name)!);
    expect(result.ok).toBe(false);
    const detail = (result as { detail: string }).detail;
    expect(detail).toMatch(message);
    expect(detail.endsWith(`this signer issues for ${ACCEPTED_LIST}`)).toBe(true);
  });

  it.each([
    [3072, 3],
    [4096, 3],
    [3072, 17],
  ] as const)(
    'refuses an RSA key of %d bits (a size it accepts) with public exponent %d, naming the exponent: only 65537 is accepted',
    (modulusLength, publicExponent) => {
      const result = podKeyTypeOf(spkiOf(generateKeyPairSync('rsa', { modulusLength, publicExponent })));
      expect(result).toEqual({
        ok: false,
        detail: `an RSA key of ${modulusLength} bits with public exponent ${publicExponent}; only 65537 is accepted; this signer issues for ${ACCEPTED_LIST}`,
      });
    },
  );

  it('refuses a truncated SubjectPublicKeyInfo of every accepted type as unreadable', () => {
    for (const type of POD_KEY_TYPES) {
      const spki = spkis.get(type)!;
      for (const cut of [1, 2, 10, spki.length - 1]) {
        expect({ type, cut, result: podKeyTypeOf(spki.subarray(0, spki.length - cut)) }).toEqual({
          type,
          cut,
          result: { ok: false, detail: `an unreadable public key; this signer issues for ${ACCEPTED_LIST}` },
        });
      }
    }
  });

  it('refuses a SubjectPublicKeyInfo followed by other bytes, or not in a SEQUENCE', () => {
    const spki = spkis.get('ECDSAP256')!;
    const notOne = { ok: false, detail: `not one DER SubjectPublicKeyInfo; this signer issues for ${ACCEPTED_LIST}` };
    expect(podKeyTypeOf(Uint8Array.from([...spki, 0x05, 0x00]))).toEqual(notOne);
    expect(podKeyTypeOf(Uint8Array.from([0x31, ...spki.subarray(1)]))).toEqual(notOne);
  });

  it('refuses a SEQUENCE that is not a SubjectPublicKeyInfo, and the empty input', () => {
    expect(podKeyTypeOf(Uint8Array.of(0x30, 0x03, 0x02, 0x01, 0x00))).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/^not a SubjectPublicKeyInfo; /),
    });
    expect(podKeyTypeOf(new Uint8Array(0))).toMatchObject({ ok: false, detail: expect.stringMatching(/^an unreadable public key; /) });
  });

  it('never throws, whatever the bytes, and accepts only the six types', () => {
    const key = fc.constantFrom(...POD_KEY_TYPES).map((t) => spkis.get(t)!);
    const mutated = fc
      .tuple(key, fc.nat(), fc.integer({ min: 0, max: 255 }))
      .map(([spki, i, b]) => Uint8Array.from(spki.map((x, j) => (j === i % spki.length ? b : x))));
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 600 }), mutated), (bytes) => {
        const result = podKeyTypeOf(bytes);
        if (result.ok) expect(POD_KEY_TYPES).toContain(result.type);
        else expect(result.detail).toContain(`this signer issues for ${ACCEPTED_LIST}`);
      }),
      { numRuns: 300 },
    );
  });
});
