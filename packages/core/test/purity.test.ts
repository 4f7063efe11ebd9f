import { describe, expect, it } from '@jest/globals';
import { MemoryStore, days, executePlan, isPlanEmpty, planRotation, simulate } from '@eso-mtls/core';
import { Pki, T0, testCrypto } from './support/planner.js';

/**
 * Runs `fn` with the ambient clock, randomness and Web Crypto replaced by traps that record the
 * call and throw: the core must only use what it is given. Returns the calls caught.
 */
async function withAmbientTrapped<T>(fn: () => Promise<T>): Promise<{ result?: T; error?: unknown; caught: string[] }> {
  const caught: string[] = [];
  const trap = (what: string): never => {
    caught.push(what);
    throw new Error(`the core used ${what}`);
  };
  const RealDate = Date;
  const realRandom = Math.random;
  const cryptoDescriptor = Object.getOwnPropertyDescriptor(globalThis, 'crypto');
  class TrappedDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) trap('new Date()');
      super(...(args as [number]));
    }
    static override now(): number {
      return trap('Date.now()');
    }
  }
  globalThis.Date = TrappedDate as DateConstructor;
  Math.random = () => trap('Math.random()');
  Object.defineProperty(globalThis, 'crypto', { configurable: true, get: () => trap('globalThis.crypto') });
  try {
    return { result: await fn(), caught };
  } catch (error) {
    return { error, caught };
  } finally {
    globalThis.Date = RealDate;
    Math.random = realRandom;
    if (cryptoDescriptor) Object.defineProperty(globalThis, 'crypto', cryptoDescriptor);
  }
}

describe('purity at run time', () => {
  it('the traps work: they catch and throw', async () => {
    const { error, caught } = await withAmbientTrapped(async () => [Date.now(), Math.random(), globalThis.crypto, new Date()]);
    expect(String(error)).toContain('the core used Date.now()');
    expect(caught).toEqual(['Date.now()']);
    expect((await withAmbientTrapped(async () => new Date())).caught).toEqual(['new Date()']);
    expect((await withAmbientTrapped(async () => globalThis.crypto.getRandomValues(new Uint8Array(1)))).caught[0]).toBe('globalThis.crypto');
    expect((await withAmbientTrapped(async () => new Date(0).getTime())).result).toBe(0);
  });

  it('planning and executing (CA creation, leaves, recovery) use no ambient clock, randomness or crypto', async () => {
    const pki = new Pki();
    const store = new MemoryStore();
    store.setServices('a', [{ name: 'p' }]);
    store.setServices('b', [{ name: 'q' }]);
    const run = await withAmbientTrapped(async () => {
      for (const now of [T0, T0 + days(56), T0 + days(200)]) {
        if (now === T0 + days(200)) store.delete('ca');
        const plan = planRotation(store.snapshot(), { now, policy: pki.policy, cache: pki.cache });
        for (const w of await executePlan(plan, { crypto: pki.crypto })) store.apply(w);
      }
      return planRotation(store.snapshot(), { now: T0 + days(200), policy: pki.policy, cache: pki.cache });
    });
    expect(run.caught).toEqual([]);
    expect(run.error).toBeUndefined();
    expect(isPlanEmpty(run.result!)).toBe(true);
  });

  it('a whole simulation runs with the traps set', async () => {
    const run = await withAmbientTrapped(() =>
      simulate({
        policy: new Pki().policy,
        crypto: testCrypto(9),
        services: [{ namespace: 'a', name: 'p' }],
        start: T0,
        duration: days(400),
      }),
    );
    expect(run.caught).toEqual([]);
    expect(run.result?.summary.caPhases.activate).toBe(1);
  });
});
