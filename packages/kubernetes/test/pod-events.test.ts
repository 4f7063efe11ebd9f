// Coalesced issuance Events (issue 25): order and content, on hand-driven timers and a recorder
// whose sends the test completes; never time.
import { describe, expect, it } from '@jest/globals';
import type { Timers } from '../src/runtime/clock.js';
import type { EventRecorder } from '../src/events/event-recorder.js';
import type { InvolvedObject } from '../src/events/involved-object.js';
import { PodIssuanceEvents } from '../src/pod-certificates/pod-events.js';

/** Timers fired by hand. */
function manualTimers(): Timers & { fire(): void } {
  let due: (() => void)[] = [];
  return {
    monotonicMs: () => 0,
    setTimer: (_ms, callback) => {
      due.push(callback);
      return { cancel: () => (due = due.filter((c) => c !== callback)), unref: () => undefined };
    },
    fire: () => {
      const now = due;
      due = [];
      now.forEach((c) => c());
    },
  };
}

/** A recorder whose sends stay in flight until the test ends them. */
function recorder() {
  const sent: { about: InvolvedObject; message: string; done: () => void }[] = [];
  const events = {
    send: (about: InvolvedObject, _type: string, _reason: string, message: string) => new Promise<void>((done) => sent.push({ about, message, done })),
  } as unknown as EventRecorder;
  return { events, sent };
}

const service = { namespace: 'ns-a', name: 'provider' };
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('PodIssuanceEvents', () => {
  it('makes one Event of a burst on one Service, and one more of everything issued while it was being sent', async () => {
    const timers = manualTimers();
    const { events, sent } = recorder();
    const batcher = new PodIssuanceEvents(events, 100, timers);
    for (let i = 0; i < 3; i++) batcher.issued(service, 'eso-mtls.io/provider-server', `p${i}`, ['provider'], 1e12 + i);
    expect(sent).toHaveLength(0);
    timers.fire();
    expect(sent.map((s) => s.message)).toEqual([expect.stringContaining('to 3 pods (p0, p1, p2)')]);
    // Issued while the first Event is in flight: they wait for it, however many windows pass.
    for (let i = 3; i < 30; i++) batcher.issued(service, 'eso-mtls.io/provider-server', `p${i}`, ['provider'], 1e12 + i);
    timers.fire();
    expect(sent).toHaveLength(1);
    sent[0]!.done();
    await tick();
    expect(sent).toHaveLength(2);
    expect(sent[1]!.message).toContain('to 27 pods (p3, p4, p5, p6, p7, p8, p9, p10, p11, p12 and 17 more)');
    expect(sent[1]!.message).toContain('for Services provider');
  });

  it('keeps objects apart, and flush sends what waits at once', () => {
    const timers = manualTimers();
    const { events, sent } = recorder();
    const batcher = new PodIssuanceEvents(events, 100, timers);
    batcher.issued(service, 's', 'a-0', ['provider'], 1e12);
    batcher.issued({ namespace: 'ns-b', name: 'provider' }, 's', 'b-0', ['provider'], 1e12);
    batcher.issued({ kind: 'Pod', namespace: 'eso', name: 'core-0' }, 'c', 'core-0', [], 1e12);
    batcher.flush();
    expect(sent.map((s) => [s.about.namespace, s.about.name, s.message.includes('pod ')])).toEqual([
      ['ns-a', 'provider', true],
      ['ns-b', 'provider', true],
      ['eso', 'core-0', true],
    ]);
    expect(sent[2]!.message).toContain('for ESO core (client)');
  });

  it('whenSent resolves once the waiting batches are sent too, as the last request finishes', async () => {
    const timers = manualTimers();
    const { events, sent } = recorder();
    const batcher = new PodIssuanceEvents(events, 100, timers);
    await batcher.whenSent();
    let done = false;
    batcher.issued(service, 's', 'a-0', ['provider'], 1e12);
    void batcher.whenSent().then(() => (done = true));
    timers.fire();
    // Issued while that Event is in flight: it waits for it, and whenSent waits for both.
    batcher.issued(service, 's', 'a-1', ['provider'], 1e12);
    batcher.issued({ namespace: 'ns-b', name: 'provider' }, 's', 'b-0', ['provider'], 1e12);
    timers.fire();
    expect(sent.map((s) => s.message)).toEqual([expect.stringContaining('pod a-0'), expect.stringContaining('pod b-0')]);
    sent[0]!.done();
    sent[1]!.done();
    await tick();
    expect(sent[2]!.message).toContain('pod a-1');
    expect(done).toBe(false);
    sent[2]!.done();
    await tick();
    expect(done).toBe(true);
  });

  it('whenSent waits for both Events of one object that flush sent together', async () => {
    const timers = manualTimers();
    const { events, sent } = recorder();
    const batcher = new PodIssuanceEvents(events, 100, timers);
    batcher.issued(service, 's', 'a-0', ['provider'], 1e12);
    timers.fire();
    batcher.issued(service, 's', 'a-1', ['provider'], 1e12);
    batcher.flush();
    expect(sent.map((s) => s.message)).toEqual([expect.stringContaining('pod a-0'), expect.stringContaining('pod a-1')]);
    let done = false;
    void batcher.whenSent().then(() => (done = true));
    sent[0]!.done();
    await tick();
    expect(done).toBe(false);
    sent[1]!.done();
    await tick();
    expect(done).toBe(true);
  });
});
