import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { TestClock, TestCluster, converge, eventually, startAdapter } from './support/cluster.js';
import { FakeTimers } from './support/fake-timers.js';

let plane: ControlPlane;
let cluster: TestCluster;

beforeAll(async () => {
  plane = await startControlPlane();
  cluster = new TestCluster(plane);
}, 120_000);

afterAll(async () => {
  await plane?.stop();
});

describe('the reconciler on injected timers', () => {
  it("wakes at the plan's nextDueAt, not at the reconcile interval, and renews then: no sleeping", async () => {
    const clock = new TestClock();
    const timers = new FakeTimers();
    const eso = await cluster.namespace('eso-due-timer');
    const ns = await cluster.namespace('due-timer');
    await cluster.labelledService(ns, 'p');
    const run = await startAdapter(plane.adminKubeConfig, eso, { now: clock.now, timers });
    // The reconciler's wake-up is the one timer that keeps the process alive; the watch guards do not.
    const wakeUps = (): number[] =>
      timers
        .pending()
        .filter((t) => !t.unref)
        .map((t) => t.inMs);
    try {
      await converge(run.adapter);
      expect(run.reasonsFor(`namespace/${ns}`)).toEqual(['initial']);
      // With the leaf due in weeks, a round's next wake-up is the safety net, the reconcile interval.
      await run.adapter.reconcileNow();
      expect(wakeUps()).toEqual([10 * 60_000]);
      const due = run.adapter.lastRound!.plan.nextDueAt!;
      expect(due - clock.now()).toBeGreaterThan(10 * 60_000);

      // Five seconds before the leaf comes due, a round plans a wake-up for then...
      clock.set(due - 5000);
      await run.adapter.reconcileNow();
      expect(wakeUps()).toEqual([5000]);
      timers.advance(4999);
      await new Promise((r) => setImmediate(r));
      expect(run.reasonsFor(`namespace/${ns}`)).toEqual(['initial']);
      // ...and at that moment of both clocks, it renews by itself. A watch event may have started a
      // round of its own meanwhile, which plans the same wake-up from a later instant: so time moves
      // on by a second per look, far short of the 10-minute interval, until the renewal is seen.
      clock.advance(5000);
      timers.advance(1);
      await eventually(() => {
        if (run.reasonsFor(`namespace/${ns}`).length < 2) timers.advance(1000);
        expect(run.reasonsFor(`namespace/${ns}`)).toEqual(['initial', 'expiring']);
      });
    } finally {
      await run.adapter.stop();
    }
  }, 60_000);
});
