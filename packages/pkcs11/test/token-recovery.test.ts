// A SoftHSM2 token whose folder is moved away and put back (issue 23 item 11). SoftHSM2 reads its
// tokens at C_Initialize: new sessions on the same module keep failing after the restore, so the
// token finalises and initialises the module again. The reopens are bounded by a backoff on an
// injected clock (counted through the binding's C_Initialize), not by sleeping; a key missing
// from a token that still answers reopens nothing.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { CaKeyUnavailableError } from '@eso-mtls/core';
import { type Pkcs11Binding, type Pkcs11Module, loadBinding } from '../src/binding.js';
import { Pkcs11Token } from '../src/token.js';
import { type TestToken, createTestToken } from './support/softhsm.js';

let token: TestToken;
const opened: Pkcs11Token[] = [];
beforeEach(() => {
  token = createTestToken();
});
afterEach(() => {
  for (const t of opened.splice(0)) t.close();
  token.remove();
});

/** A token on the real binding whose C_Initialize calls are counted, on a clock the test moves. */
function countedToken() {
  const real = loadBinding();
  const counts = { initialize: 0 };
  const PKCS11 = class extends (real.PKCS11 as new () => Pkcs11Module) {
    override C_Initialize(options?: { readonly flags?: number }): void {
      counts.initialize++;
      super.C_Initialize(options);
    }
  } as Pkcs11Binding['PKCS11'];
  const clock = { now: 0 };
  const recovered: number[] = [];
  const t = new Pkcs11Token({
    modulePath: token.modulePath,
    tokenLabel: token.label,
    pin: () => token.pin,
    binding: { PKCS11, constants: real.constants },
    reopenBackoff: { initialMs: 1000, maxMs: 4000, now: () => clock.now },
    onRecovered: () => recovered.push(clock.now),
  });
  opened.push(t);
  return { t, counts, clock, recovered };
}

const KEY = { id: new Uint8Array([0xe5, 0x01]), label: 'eso-mtls-ca-recovery' };
const DATA = new TextEncoder().encode('to be signed');

/** `n` calls, signing and reading the public key alternately; every one must fail with the token's error. */
async function failingCalls(t: Pkcs11Token, n: number): Promise<string[]> {
  const messages: string[] = [];
  for (let i = 0; i < n; i++) {
    const call = i % 2 === 0 ? t.sign(KEY.id, DATA) : Promise.resolve().then(() => t.publicKey(KEY.id));
    const error = await call.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CaKeyUnavailableError);
    messages.push((error as Error).message);
  }
  return messages;
}

describe('a PKCS#11 token that goes away and comes back', () => {
  it('fails loudly while away, reopens the module at most once per backoff delay, and signs again once restored', async () => {
    const { t, counts, clock, recovered } = countedToken();
    const spki = await t.generate('ECDSA-P256', KEY);
    expect((await t.sign(KEY.id, DATA)).length).toBeGreaterThan(0);
    expect(counts.initialize).toBe(1);

    const restore = token.moveAway();
    // The open session finds nothing; the token, asked, no longer answers: a token failure, not a missing key.
    const [first] = await failingCalls(t, 1);
    expect(first).toMatch(/^PKCS#11 token "eso-mtls-test": signing with key e501 failed: CKR_/);
    expect(first).not.toMatch(/holds no/);

    // The first reopen is at the next use; then one per delay (1 s, 2 s, 4 s, 4 s), however many calls come in between.
    const reopens: number[] = [];
    for (const step of [0, 999, 1, 1999, 1, 3999, 1, 3999, 1, 4000]) {
      clock.now += step;
      const before = counts.initialize;
      expect(new Set(await failingCalls(t, 20)).size).toBeLessThanOrEqual(2);
      reopens.push(counts.initialize - before);
    }
    expect(reopens).toEqual([1, 0, 1, 0, 1, 0, 1, 0, 1, 1]);
    expect(recovered).toEqual([]);

    restore();
    // Still within the 4 s delay: nothing touches the token yet.
    await expect(t.sign(KEY.id, DATA)).rejects.toThrow(CaKeyUnavailableError);
    clock.now += 4000;
    expect((await t.sign(KEY.id, DATA)).length).toBeGreaterThan(0);
    expect(t.publicKey(KEY.id)).toEqual(spki);
    expect(recovered).toEqual([clock.now]);

    // A success resets the backoff: the next outage is reopened at once again.
    const restoreAgain = token.moveAway();
    const before = counts.initialize;
    await failingCalls(t, 4);
    expect(counts.initialize - before).toBe(1);
    restoreAgain();
  });

  it('reopens nothing for a key deleted from a token that still answers', async () => {
    const { t, counts } = countedToken();
    await t.generate('ECDSA-P256', KEY);
    token.deleteKeyElsewhere(KEY.id);
    for (let i = 0; i < 10; i++) {
      expect(() => t.publicKey(KEY.id)).toThrow(/holds no public key with id e501/);
      await expect(t.sign(KEY.id, DATA)).rejects.toThrow(/holds no private key with id e501/);
    }
    expect(counts.initialize).toBe(1);
  });
});
