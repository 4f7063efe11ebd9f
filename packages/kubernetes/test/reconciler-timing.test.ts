import { describe, expect, it } from '@jest/globals';
import { TestClock } from '@eso-mtls/test-kit/clock';
import { converge, startAdapter } from '@eso-mtls/test-kit/adapter';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { useControlPlane } from '@eso-mtls/test-kit/installations';
import { FakeTimers } from './support/fake-timers.js';

const suite = useControlPlane();

describe('the reconciler on injected timers', () => {
  it("wakes at the plan's nextDueAt, not at the reconcile interval, and renews then: no sleeping", async () => {
    const clock = new TestClock();
    const timers = new FakeTimers();
    const eso = await suite.cluster.namespace('eso-due-timer');
    const ns = await suite.cluster.namespace('due-timer');
    await suite.cluster.labelledService(ns, 'p');
    const run = await startAdapter(suite.plane.adminKubeConfig, eso, { now: clock.now, timers });
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
      // ...and at that moment of both clocks, it renews by itself: the namespace's leaf or the
      // client's, whichever the jitter of its serial made due first. A watch event may have started a
      // round of its own meanwhile, which plans the same wake-up from a later instant: so time moves
      // on by a second per look, far short of the 10-minute interval, until the renewal is seen.
      clock.advance(5000);
      timers.advance(1);
      // At most 240 looks (60 s, one every 250 ms) move fake time 240 s: the interval is never reached.
      await eventually(
        () => {
          const renewed = [...run.reasonsFor(`namespace/${ns}`), ...run.reasonsFor('client')].filter((r) => r === 'expiring');
          if (renewed.length === 0) timers.advance(1000);
          expect(renewed).toContain('expiring');
        },
        60_000,
        'the expiring leaves to be renewed',
        250,
      );
    } finally {
      await run.adapter.stop();
    }
  }, 120_000);
});
