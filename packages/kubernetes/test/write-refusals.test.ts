import { describe, expect, it } from '@jest/globals';
import type { Snapshot } from '@eso-mtls/core';
import { WriteRefusals, refusalOf } from '../src/rounds/write-refusals.js';

// Which failed writes of a provider Secret count as refusals (the CA rotation stops waiting for
// them after a grace), and how long a run of refusals lasts. The real apiserver's answers are in
// ca-rotation-left-behind.test.ts.
const snapshot = (...namespaces: string[]): Snapshot => ({ namespaces: namespaces.map((namespace) => ({ namespace, services: [], previouslyIssued: true })) });
const refusalOfNamespace = (s: Snapshot, namespace: string) => s.namespaces.find((n) => n.namespace === namespace)?.writesRefused;

describe('refusalOf', () => {
  it('an immutable Secret, or a 400, 403 or 422, is a refusal retrying cannot change', () => {
    expect(refusalOf(422, { immutable: true })).toBe('immutable');
    expect(refusalOf(403, { immutable: true })).toBe('immutable');
    for (const code of [400, 403, 422]) expect([code, refusalOf(code, { immutable: false })]).toEqual([code, 'refused']);
    expect(refusalOf(403, undefined)).toBe('refused'); // a create refused by a policy
  });

  it('a 5xx, a 429, a timeout (no status) or a conflict is transient, even on an immutable Secret', () => {
    for (const code of [500, 503, 504, 429, 409, 404, undefined]) expect([code, refusalOf(code, { immutable: true })]).toEqual([code, undefined]);
  });
});

describe('WriteRefusals', () => {
  it('dates a run of refusals from its first, keeps the latest answer, and ends it at the first write that lands', () => {
    const refusals = new WriteRefusals();
    refusals.failed('a', 422, 'field is immutable', { immutable: true }, 1000);
    refusals.failed('a', 503, 'unavailable', { immutable: true }, 2000); // transient: neither starts nor ends it
    refusals.failed('a', 422, 'still immutable', { immutable: true }, 3000);
    expect(refusalOfNamespace(refusals.apply(snapshot('a', 'b')), 'a')).toEqual({ since: 1000, reason: 'immutable', detail: 'still immutable' });
    expect(refusalOfNamespace(refusals.apply(snapshot('a', 'b')), 'b')).toBeUndefined();
    refusals.written('a');
    expect(refusalOfNamespace(refusals.apply(snapshot('a')), 'a')).toBeUndefined();
    refusals.failed('a', 403, 'denied', undefined, 5000);
    expect(refusalOfNamespace(refusals.apply(snapshot('a')), 'a')).toMatchObject({ since: 5000, reason: 'refused' });
  });

  it('a transient failure alone is never a refusal', () => {
    const refusals = new WriteRefusals();
    refusals.failed('a', 500, 'etcd timeout', { immutable: true }, 1000);
    const s = snapshot('a');
    expect(refusals.apply(s)).toBe(s);
  });

  it('forgets a namespace no longer in the snapshot, so one that comes back starts afresh', () => {
    const refusals = new WriteRefusals();
    refusals.failed('gone', 403, 'denied', undefined, 1000);
    refusals.apply(snapshot('other'));
    expect(refusalOfNamespace(refusals.apply(snapshot('gone')), 'gone')).toBeUndefined();
  });

  it("bounds the apiserver's answer it keeps", () => {
    const refusals = new WriteRefusals();
    refusals.failed('a', 422, 'x'.repeat(100_000), undefined, 1000);
    expect(refusalOfNamespace(refusals.apply(snapshot('a')), 'a')!.detail.length).toBeLessThanOrEqual(600);
  });
});
