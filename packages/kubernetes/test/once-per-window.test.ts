import { describe, expect, it } from '@jest/globals';
import { OncePerWindow } from '../src/runtime/once-per-window.js';

describe('OncePerWindow', () => {
  it('lets each key through once per window, and forgets keys a window old', () => {
    let now = 0;
    const once = new OncePerWindow(1_000, { monotonicMs: () => now });
    expect([once.first('a'), once.first('a'), once.first('b')]).toEqual([true, false, true]);
    now = 999;
    expect([once.first('a'), once.first('b')]).toEqual([false, false]);
    now = 1_000;
    expect([once.first('a'), once.first('a'), once.first('b')]).toEqual([true, false, true]);
    // Keys not seen for a window are dropped, so a flood of distinct keys does not stay in memory.
    for (let i = 0; i < 1_000; i++) once.first(`k${i}`);
    now = 2_000;
    once.first('c');
    expect((once as unknown as { lastAt: Map<string, number> }).lastAt.size).toBe(1);
  });
});
