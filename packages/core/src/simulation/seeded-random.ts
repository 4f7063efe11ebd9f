import type { RandomSource } from '../crypto/crypto.js';

/**
 * A deterministic {@link RandomSource} (SplitMix32) for simulations and tests: the same seed gives
 * the same serial numbers, hence the same jitter and the same timeline. Never for production keys.
 */
export function seededRandom(seed: number): RandomSource {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  return (length) => {
    const out = new Uint8Array(length);
    for (let i = 0; i < length; i += 4) {
      const word = next();
      for (let j = 0; j < 4 && i + j < length; j++) out[i + j] = (word >>> (8 * j)) & 0xff;
    }
    return out;
  };
}
