import { describe, expect, it } from '@jest/globals';
import { ConcurrencyLimit } from '@eso-mtls/core';

describe('ConcurrencyLimit', () => {
  it('never runs more than its limit, keeps arrival order, and passes results and errors through', async () => {
    const limit = new ConcurrencyLimit(2);
    let active = 0;
    let most = 0;
    const started: number[] = [];
    const task = (i: number) => async () => {
      started.push(i);
      most = Math.max(most, ++active);
      await new Promise((r) => setImmediate(r));
      active--;
      if (i === 3) throw new Error('task 3 failed');
      return i;
    };
    const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => limit.run(task(i))));
    expect(most).toBe(2);
    expect(started).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual([0, 1, 2, 'task 3 failed', 4, 5, 6, 7]);
    expect(limit.pending).toBe(0);
  });

  it('hands a freed slot to the next waiter, so a task arriving at that moment waits its turn', async () => {
    const limit = new ConcurrencyLimit(1);
    let active = 0;
    let most = 0;
    const track = async () => {
      most = Math.max(most, ++active);
      await Promise.resolve();
      active--;
    };
    const first = limit.run(track);
    const second = limit.run(track);
    // Arrives while the first finishes and the second has not started yet.
    await first;
    const third = limit.run(track);
    await Promise.all([second, third]);
    expect(most).toBe(1);
  });

  it('refuses a limit that is not a positive integer', () => {
    expect(() => new ConcurrencyLimit(0)).toThrow('concurrency limit must be a positive integer, got 0');
  });
});
