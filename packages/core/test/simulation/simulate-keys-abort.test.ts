import { describe, expect, it } from '@jest/globals';
import { type CryptoBackend, DEFAULT_LEAF_KEY_POOL_SIZE, type KeyAlgorithm, days, resolvePolicy, simulate } from '@eso-mtls/core';
import { T0, testCrypto } from '../support/planner.js';

// Scale: 8 Services in 4 namespaces, ECDSA P-256 test keys, one simulated year: a few hundred leaves.
const services = Array.from({ length: 8 }, (_, i) => ({ namespace: `team-${i % 4}`, name: `provider-${i}` }));

/** The test backend, counting the real key pairs it generates. */
function countingCrypto(seed: number): { crypto: CryptoBackend; generated: () => number } {
  const base = testCrypto(seed);
  let generated = 0;
  const signer = {
    ...base.signer,
    sign: base.signer.sign.bind(base.signer),
    generateKey: (algorithm: KeyAlgorithm) => {
      generated++;
      return base.signer.generateKey(algorithm);
    },
  };
  return { crypto: { ...base, signer }, generated: () => generated };
}

describe('simulate: pooled leaf keys', () => {
  it('reuses a small pool of real keys for leaves, says so, and still judges every rotation', async () => {
    const { crypto, generated } = countingCrypto(3);
    const { summary } = await simulate({ policy: resolvePolicy(), crypto, services, start: T0, duration: days(365) });
    const leaves = summary.serverIssuances + summary.clientIssuances;
    expect(summary.violations).toEqual([]);
    expect(leaves).toBeGreaterThan(20);
    expect(summary.leafKeys).toEqual({ pooled: true, poolSize: DEFAULT_LEAF_KEY_POOL_SIZE, generated: DEFAULT_LEAF_KEY_POOL_SIZE, handedOut: leaves });
    // The pool's keys plus one per CA (CA keys are never pooled).
    const cas = (summary.caPhases.create ?? 0) + (summary.caPhases.prepare ?? 0);
    expect(generated()).toBe(DEFAULT_LEAF_KEY_POOL_SIZE + cas);
  });

  it('freshLeafKeys: one real key per leaf, as the controller does', async () => {
    const { crypto, generated } = countingCrypto(3);
    const { summary } = await simulate({ policy: resolvePolicy(), crypto, services, start: T0, duration: days(365), freshLeafKeys: true });
    const leaves = summary.serverIssuances + summary.clientIssuances;
    expect(summary.violations).toEqual([]);
    expect(summary.leafKeys).toEqual({ pooled: false, poolSize: 0, generated: leaves, handedOut: leaves });
    expect(generated()).toBe(leaves + (summary.caPhases.create ?? 0) + (summary.caPhases.prepare ?? 0));
  });
});

describe('simulate: AbortSignal', () => {
  it('an abort stops the run between reconciles: it resolves with the part simulated so far and does no more work', async () => {
    const { crypto, generated } = countingCrypto(5);
    const stop = new AbortController();
    const reached: number[] = [];
    const run = simulate({
      policy: resolvePolicy(),
      crypto,
      services,
      start: T0,
      duration: days(3 * 365),
      signal: stop.signal,
      onProgress: (at) => {
        reached.push(at);
        if (reached.length === 3) stop.abort(new Error('test over'));
      },
    });
    const { summary, timeline } = await run;
    const [progressAtStop, keysAtStop] = [reached.length, generated()];
    expect(progressAtStop).toBe(3);
    // What was simulated up to the third reconcile, said to be partial.
    expect(summary).toMatchObject({ interrupted: true, start: T0, end: reached[2], reconciles: 3 });
    expect(summary.serverIssuances).toBeGreaterThan(0);
    expect(timeline.every((e) => e.at <= reached[2]!)).toBe(true);
    // Nothing left running: another simulation to completion gives the aborted one every chance to go on.
    const whole = await simulate({ policy: resolvePolicy(), crypto: testCrypto(6), services: services.slice(0, 1), start: T0, duration: days(30) });
    expect(whole.summary).toMatchObject({ interrupted: false, end: T0 + days(30) });
    expect([reached.length, generated()]).toEqual([progressAtStop, keysAtStop]);
  });

  it('an already aborted signal starts nothing: an empty, interrupted result', async () => {
    const { crypto, generated } = countingCrypto(7);
    const { summary, timeline } = await simulate({ policy: resolvePolicy(), crypto, services, start: T0, duration: days(30), signal: AbortSignal.abort() });
    expect(summary).toMatchObject({ interrupted: true, start: T0, end: T0, reconciles: 0 });
    expect(timeline).toEqual([]);
    expect(generated()).toBe(0);
  });
});
