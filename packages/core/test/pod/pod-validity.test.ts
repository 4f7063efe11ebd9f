import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { type Policy, days, hours, minutes, resolvePolicy, seconds } from '@eso-mtls/core';
import { MAX_POD_BACKDATE, type PodValidityInput, podRefreshTime, podValidity } from '../../src/pod/pod-validity.js';
import { NOW } from '../support/fixtures.js';

// The times of a pod certificate against what kube-apiserver v1.37.2 accepts
// (docs/pod-certificates-facts.md, section 4) and the refresh rule of docs/pod-certificates.md:
// beginRefreshAt = notAfter − min(35 days, lifetime/3), less the policy's jitter, clamped to
// [notBefore + 10 min, notAfter − 10 min].

const policy = resolvePolicy();
const SERIAL = '4a1b2c3d4e5f60718293a4b5c6d7e8f9';
const iso = (t: number): string => new Date(t).toISOString();
const base: PodValidityInput = { now: NOW, maxExpirationSeconds: undefined, maxValidity: hours(24), caNotAfter: NOW + days(300), serialNumber: SERIAL, policy };

/** The times of a successful podValidity, as ISO strings; fails the test on a refusal. */
function times(input: Partial<PodValidityInput>): { notBefore: string; notAfter: string; beginRefreshAt: string } {
  const v = podValidity({ ...base, ...input });
  if (!v.ok) throw new Error(`podValidity refused: ${v.detail}`);
  return { notBefore: iso(v.notBefore), notAfter: iso(v.notAfter), beginRefreshAt: iso(v.beginRefreshAt) };
}

// Expected jitters of SERIAL, computed outside this code base (FNV-1a of the serial's hex as a
// fraction of 2^32, 0.2697722…, times the jitter bound, truncated to the second).
describe('podValidity, worked examples (now 2026-11-15T10:20:30.456Z, default policy)', () => {
  it('a day by default: backdated 2 minutes (not the policy 5), whole seconds, refresh 8 h early less 32m22s of jitter', () => {
    expect(times({})).toEqual({ notBefore: '2026-11-15T10:18:31.000Z', notAfter: '2026-11-16T10:18:31.000Z', beginRefreshAt: '2026-11-16T01:46:09.000Z' });
  });

  it('maxExpirationSeconds 3600: an hour, refresh 20 min early less 80 s', () => {
    expect(times({ maxExpirationSeconds: 3600 })).toEqual({
      notBefore: '2026-11-15T10:18:31.000Z',
      notAfter: '2026-11-15T11:18:31.000Z',
      beginRefreshAt: '2026-11-15T10:57:11.000Z',
    });
  });

  it('a 90-day leaf: refresh min(35 d, 90 d / 3) = 30 days early, less a jitter of up to the policy 3 days', () => {
    expect(times({ maxExpirationSeconds: 7_862_400, maxValidity: days(90) })).toEqual({
      notBefore: '2026-11-15T10:18:31.000Z',
      notAfter: '2027-02-13T10:18:31.000Z',
      beginRefreshAt: '2027-01-13T14:53:07.000Z',
    });
  });

  it('the longest leaf is 91 days, whatever the maximum validity', () => {
    const v = times({ maxExpirationSeconds: 7_862_400, maxValidity: days(365) });
    expect([v.notBefore, v.notAfter]).toEqual(['2026-11-15T10:18:31.000Z', '2027-02-14T10:18:31.000Z']);
  });

  it('the request asks for less than the maximum validity, or more: the smaller wins', () => {
    expect(times({ maxExpirationSeconds: 7200, maxValidity: hours(24) }).notAfter).toBe('2026-11-15T12:18:31.000Z');
    expect(times({ maxExpirationSeconds: 86_400 * 10, maxValidity: hours(24) }).notAfter).toBe('2026-11-16T10:18:31.000Z');
    expect(times({ maxExpirationSeconds: undefined, maxValidity: days(10) }).notAfter).toBe('2026-11-16T10:18:31.000Z');
  });

  it('a smaller policy backdate is kept; none at all gives now truncated to the second', () => {
    expect(times({ policy: resolvePolicy({ notBeforeBackdate: seconds(30) }) }).notBefore).toBe('2026-11-15T10:20:00.000Z');
    expect(times({ policy: resolvePolicy({ notBeforeBackdate: 0 }) }).notBefore).toBe('2026-11-15T10:20:30.000Z');
  });

  it('clamps the leaf to the CA, truncated to the second', () => {
    const caNotAfter = Date.parse('2026-11-15T12:00:00.999Z');
    expect(times({ caNotAfter })).toEqual({
      notBefore: '2026-11-15T10:18:31.000Z',
      notAfter: '2026-11-15T12:00:00.000Z',
      beginRefreshAt: '2026-11-15T11:23:54.000Z',
    });
  });

  it('fails when the CA leaves less than an hour, naming the CA notAfter', () => {
    for (const caNotAfter of [NOW + minutes(57), NOW - days(1), Date.parse('2026-11-15T11:18:30.999Z')]) {
      expect(podValidity({ ...base, caNotAfter })).toEqual({
        ok: false,
        detail: `the signing CA expires at ${iso(caNotAfter)}, leaving less than the 1h a pod certificate must last`,
      });
    }
    expect(podValidity({ ...base, caNotAfter: Date.parse('2026-11-15T11:18:31.000Z') }).ok).toBe(true);
  });

  it('fails, naming the cause, for a maxExpirationSeconds the apiserver never lets through or a maximum validity under an hour', () => {
    for (const maxExpirationSeconds of [3599, 0, -5, 7_862_401, 3600.5, Number.NaN]) {
      expect(podValidity({ ...base, maxExpirationSeconds })).toEqual({
        ok: false,
        detail: `maxExpirationSeconds ${maxExpirationSeconds} is outside [3600, 7862400], the range the apiserver accepts`,
      });
    }
    expect(podValidity({ ...base, maxValidity: minutes(30) })).toEqual({
      ok: false,
      detail: 'the maximum validity 30m is below the 1h a pod certificate must last',
    });
  });
});

describe('podRefreshTime', () => {
  it('keeps 10 minutes from both ends even when the policy would not', () => {
    const notBefore = Date.parse('2026-11-15T10:00:00Z');
    // A policy without lookahead or jitter would refresh at notAfter itself.
    const none: Policy = { ...policy, leafLookahead: 0, leafJitter: 0 };
    expect(iso(podRefreshTime(notBefore, notBefore + hours(1), SERIAL, none))).toBe('2026-11-15T10:50:00.000Z');
    // One that asks for everything at once refreshes 10 minutes after notBefore.
    const eager: Policy = { ...policy, leafLookahead: days(1000), leafJitter: 0 };
    expect(iso(podRefreshTime(notBefore, notBefore + minutes(20), SERIAL, eager))).toBe('2026-11-15T10:10:00.000Z');
  });

  it('spreads leaves issued together over the jitter', () => {
    const notBefore = Date.parse('2026-11-15T10:00:00Z');
    const notAfter = notBefore + hours(24);
    const serials = Array.from({ length: 200 }, (_, i) => (0x40_00_00_00 + i * 7919).toString(16).padEnd(32, '0'));
    const early = serials.map((s) => notAfter - podRefreshTime(notBefore, notAfter, s, policy));
    expect(Math.min(...early)).toBeGreaterThanOrEqual(hours(8));
    expect(Math.max(...early)).toBeLessThanOrEqual(hours(10));
    expect(new Set(early).size).toBeGreaterThan(100);
    expect(Math.max(...early) - Math.min(...early)).toBeGreaterThan(hours(1.5));
  });
});

/** Instants from 2000 to 2100, with milliseconds. */
const instant = fc.integer({ min: Date.parse('2000-01-01T00:00:00Z'), max: Date.parse('2100-01-01T00:00:00Z') });
const inputs: fc.Arbitrary<PodValidityInput> = fc
  .record({
    now: instant,
    maxExpirationSeconds: fc.option(fc.integer({ min: 3600, max: 7_862_400 }), { nil: undefined }),
    maxValidity: fc.oneof(fc.integer({ min: hours(1), max: days(91) }), fc.constantFrom(hours(1), hours(24), days(90), days(91))),
    // The CA ends anywhere from a day ago to 400 days on, often around the one-hour edge.
    caOffset: fc.oneof(fc.integer({ min: -days(1), max: days(400) }), fc.integer({ min: minutes(55), max: minutes(65) })),
    serialNumber: fc.uint8Array({ minLength: 16, maxLength: 16 }).map((b) => Buffer.from(b).toString('hex')),
    backdate: fc.integer({ min: 0, max: minutes(10) }),
  })
  .map(({ now, caOffset, backdate, ...rest }) => ({ ...rest, now, caNotAfter: now + caOffset, policy: resolvePolicy({ notBeforeBackdate: backdate }) }));

describe('podValidity, properties (any now, maxExpirationSeconds, maximum validity and CA)', () => {
  it('notBefore: whole seconds, at most 2 minutes and at most the policy backdate before now, never after it', () => {
    fc.assert(
      fc.property(inputs, (input) => {
        const v = podValidity(input);
        if (!v.ok) return;
        expect(v.notBefore % 1000).toBe(0);
        expect(v.notBefore).toBeLessThanOrEqual(input.now);
        expect(v.notBefore).toBeGreaterThanOrEqual(input.now - MAX_POD_BACKDATE);
        expect(v.notBefore).toBeGreaterThanOrEqual(Math.floor((input.now - input.policy.notBeforeBackdate) / 1000) * 1000);
      }),
      { numRuns: 2000 },
    );
  });

  it('lifetime: whole seconds, at least an hour, at most min(maxExpirationSeconds, maximum validity), inside the CA', () => {
    fc.assert(
      fc.property(inputs, (input) => {
        const v = podValidity(input);
        if (!v.ok) return;
        const limit = Math.min(seconds(input.maxExpirationSeconds ?? 86_400), input.maxValidity);
        expect(v.notAfter % 1000).toBe(0);
        expect(v.notAfter - v.notBefore).toBeGreaterThanOrEqual(hours(1));
        expect(v.notAfter - v.notBefore).toBeLessThanOrEqual(limit);
        expect(v.notAfter).toBeLessThanOrEqual(input.caNotAfter);
        // As long as allowed: only the second truncation or the CA's end shortens it.
        expect(v.notAfter - v.notBefore > limit - 1000 || v.notAfter > input.caNotAfter - 1000).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('fails exactly when the CA leaves too little: always under an hour from now, never from an hour and a second on', () => {
    fc.assert(
      fc.property(inputs, (input) => {
        const v = podValidity(input);
        if (input.caNotAfter >= input.now + hours(1) + 1000) expect(v.ok).toBe(true);
        if (input.caNotAfter < input.now + hours(1) - MAX_POD_BACKDATE) expect(v.ok).toBe(false);
        if (!v.ok) expect(v.detail).toBe(`the signing CA expires at ${iso(input.caNotAfter)}, leaving less than the 1h a pod certificate must last`);
      }),
      { numRuns: 2000 },
    );
  });

  it('beginRefreshAt: whole seconds, in [notBefore + 10 min, notAfter − 10 min], min(35 d, lifetime/3) early plus up to min(3 d, lifetime/12)', () => {
    fc.assert(
      fc.property(inputs, (input) => {
        const v = podValidity(input);
        if (!v.ok) return;
        const lifetime = v.notAfter - v.notBefore;
        expect(v.beginRefreshAt % 1000).toBe(0);
        expect(v.beginRefreshAt).toBeGreaterThanOrEqual(v.notBefore + minutes(10));
        expect(v.beginRefreshAt).toBeLessThanOrEqual(v.notAfter - minutes(10));
        const lead = Math.min(days(35), lifetime / 3);
        expect(v.notAfter - v.beginRefreshAt).toBeGreaterThanOrEqual(lead);
        expect(v.notAfter - v.beginRefreshAt).toBeLessThan(lead + Math.min(days(3), lifetime / 12) + 1000);
      }),
      { numRuns: 2000 },
    );
  });

  it('24-hour leaves refresh 8 h early plus up to 2 h; 90-day leaves 30 days early plus up to 3 days', () => {
    const serial = fc.uint8Array({ minLength: 16, maxLength: 16 }).map((b) => Buffer.from(b).toString('hex'));
    fc.assert(
      fc.property(instant, serial, (now, serialNumber) => {
        const day = podValidity({ ...base, now, caNotAfter: now + days(400), serialNumber });
        const quarter = podValidity({ ...base, now, caNotAfter: now + days(400), serialNumber, maxExpirationSeconds: 7_862_400, maxValidity: days(90) });
        if (!day.ok || !quarter.ok) throw new Error('refused');
        expect(day.notAfter - day.notBefore).toBe(hours(24));
        expect(day.notAfter - day.beginRefreshAt).toBeGreaterThanOrEqual(hours(8));
        expect(day.notAfter - day.beginRefreshAt).toBeLessThanOrEqual(hours(10));
        expect(quarter.notAfter - quarter.notBefore).toBe(days(90));
        expect(quarter.notAfter - quarter.beginRefreshAt).toBeGreaterThanOrEqual(days(30));
        expect(quarter.notAfter - quarter.beginRefreshAt).toBeLessThanOrEqual(days(33));
      }),
      { numRuns: 500 },
    );
  });
});
