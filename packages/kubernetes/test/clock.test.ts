import { describe, expect, it } from '@jest/globals';
import { sleep, systemTimers } from '../src/index.js';
import { FakeTimers } from './support/fake-timers.js';

/** Whether `promise` has settled, after the microtasks already queued have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
}

describe('sleep on injected timers', () => {
  it('wakes when its timer comes due, not before', async () => {
    const timers = new FakeTimers();
    const nap = sleep(500, undefined, timers);
    expect(timers.pending()).toEqual([{ inMs: 500, unref: false }]);
    timers.advance(499);
    expect(await settled(nap)).toBe(false);
    timers.advance(1);
    expect(await settled(nap)).toBe(true);
    expect(timers.pending()).toEqual([]);
  });

  it('wakes at once on abort and cancels its timer, and does not wait at all once aborted', async () => {
    const timers = new FakeTimers();
    const stop = new AbortController();
    const nap = sleep(30_000, stop.signal, timers);
    stop.abort();
    expect(await settled(nap)).toBe(true);
    expect(timers.pending()).toEqual([]);
    expect(await settled(sleep(30_000, stop.signal, timers))).toBe(true);
    expect(timers.pending()).toEqual([]);
  });

  it('takes a negative delay as none, on the real timers too', async () => {
    const timers = new FakeTimers();
    const nap = sleep(-5, undefined, timers);
    expect(timers.pending()).toEqual([{ inMs: 0, unref: false }]);
    timers.advance(0);
    expect(await settled(nap)).toBe(true);
    await sleep(-5);
  });
});

describe('the system timers', () => {
  it('run a callback after its delay on a clock that only moves forward, and cancel it', async () => {
    const before = systemTimers.monotonicMs();
    let ran = 0;
    systemTimers.setTimer(-1, () => ran++);
    const cancelled = systemTimers.setTimer(0, () => ran++);
    cancelled.cancel();
    await new Promise((r) => setTimeout(r, 20));
    expect(ran).toBe(1);
    expect(systemTimers.monotonicMs()).toBeGreaterThanOrEqual(before);
  });

  it("clamp a delay past Node's longest timer instead of firing at once", async () => {
    let ran = false;
    const far = systemTimers.setTimer(2 ** 31 + 10, () => (ran = true));
    far.unref();
    await new Promise((r) => setTimeout(r, 50));
    expect(ran).toBe(false);
    far.cancel();
  });
});
