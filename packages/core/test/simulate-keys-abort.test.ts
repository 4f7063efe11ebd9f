import { describe, expect, it } from '@jest/globals';
import { type CryptoBackend, DEFAULT_LEAF_KEY_POOL_SIZE, type KeyAlgorithm, days, resolvePolicy, simulate } from '@eso-mtls/core';
import { T0, testCrypto } from './support/planner.js';

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
  it('an abort stops the run between reconciles: it rejects with the reason and does no more work', async () => {
    const { crypto, generated } = countingCrypto(5);
    const stop = new AbortController();
    let progress = 0;
    const run = simulate({
      policy: resolvePolicy(),
      crypto,
      services,
      start: T0,
      duration: days(3 * 365),
      signal: stop.signal,
      onProgress: () => {
        if (++progress === 3) stop.abort(new Error('test over'));
      },
    });
    await expect(run).rejects.toThrow('test over');
    const [progressAtStop, keysAtStop] = [progress, generated()];
    expect(progressAtStop).toBe(3);
    // Nothing left running: another simulation to completion gives the aborted one every chance to go on.
    await simulate({ policy: resolvePolicy(), crypto: testCrypto(6), services: services.slice(0, 1), start: T0, duration: days(30) });
    expect([progress, generated()]).toEqual([progressAtStop, keysAtStop]);
  });

  it('an already aborted signal starts nothing', async () => {
    const { crypto, generated } = countingCrypto(7);
    await expect(simulate({ policy: resolvePolicy(), crypto, services, start: T0, duration: days(30), signal: AbortSignal.abort() })).rejects.toThrow();
    expect(generated()).toBe(0);
  });
});
