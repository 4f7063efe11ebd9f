import { describe, expect, it } from '@jest/globals';
import { Timeline } from '../src/demo/timeline.js';

function timeline(json: boolean, progress?: () => string) {
  let text = '';
  let now = Date.parse('2026-11-23T00:00:00.000Z');
  const calls = { made: 0, failed: 0 };
  const t = new Timeline({ write: (s: string) => (text += s) }, { json, now: () => now, calls: () => calls, ...(progress ? { progress } : {}) });
  return { t, calls, text: () => text, advance: (ms: number) => (now += ms) };
}

describe("the demo's timeline", () => {
  it('prints each event with the calls made and failed since the line before', () => {
    const { t, calls, text, advance } = timeline(false);
    calls.made = 40;
    advance(1500);
    t.record({ source: 'controller', subject: 'namespace/a', message: 'server certificate issued', reason: 'forced' });
    calls.made = 50;
    calls.failed = 2;
    advance(500);
    t.record({ source: 'eso', subject: 'a.a.svc:1', message: 'GetSecret FAILED' });
    expect(text().split('\n')).toEqual([
      '     +1.5s  +40 / 0          controller  namespace/a: server certificate issued [forced]',
      '     +2.0s  +8 / 2           eso         a.a.svc:1: GetSecret FAILED',
      '',
    ]);
  });

  it('--json: one object per line with an ISO 8601 time, and never a progress line', () => {
    const { t, text, advance } = timeline(true, () => 'progress');
    advance(250);
    t.startProgress();
    t.record({ source: 'kubelet', subject: 'namespace/a', message: 'periodic sync' });
    t.stopProgress();
    expect(text()).not.toContain('\r');
    expect(JSON.parse(text())).toEqual({
      time: '2026-11-23T00:00:00.250Z',
      elapsedMs: 250,
      source: 'kubelet',
      subject: 'namespace/a',
      event: 'periodic sync',
      callsOk: 0,
      callsFailed: 0,
    });
  });

  it('a progress line is redrawn under each event and erased at the end; without one, no carriage return is written', () => {
    const live = timeline(false, () => 'progress');
    live.t.startProgress(60_000);
    live.t.record({ source: 'scenario', subject: 'CA', message: 'annotated' });
    live.t.stopProgress();
    expect(live.text()).toBe('\r\x1b[2Kprogress\r\x1b[2K     +0.0s  +0 / 0           scenario    CA: annotated\n\r\x1b[2Kprogress\r\x1b[2K');
    const piped = timeline(false);
    piped.t.startProgress();
    piped.t.record({ source: 'scenario', subject: 'CA', message: 'annotated' });
    piped.t.stopProgress();
    expect(piped.text()).not.toContain('\r');
  });
});
