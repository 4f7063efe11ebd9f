import { describe, expect, it } from '@jest/globals';
import { MemoryStore, StoreConflictError, days, executePlan, materializeBundle, materializeCaChange, materializeLeaf, minutes } from '@eso-mtls/core';
import { trustBundle } from '../../src/ca/ca-layout.js';
import { Pki, T0, convergedCluster, planAt, reconcile } from '../support/planner.js';

describe('executePlan', () => {
  it('writes the CA first, then leaves signed by the CA after that write, then bundles; leaves carry the new bundle', async () => {
    const { pki, store } = await convergedCluster();
    store.delete({ namespace: 'b' });
    const ca = store.get('ca')!;
    const annotated = store.put('ca', { ...ca, annotations: { 'eso-mtls.io/rotate': 'go' } });
    const prepare = await reconcile(store, pki, T0 + minutes(1));
    expect(prepare.writes.map((w) => w.kind)).toEqual(['ca', 'serverLeaf', 'bundle', 'bundle']);
    const caData = prepare.writes[0]!.data;
    expect(Object.keys(caData).sort()).toEqual(['ca.crt', 'ca.key', 'next.crt', 'next.key']);
    expect(prepare.writes[0]).toMatchObject({ create: false, base: annotated.version, annotations: { 'eso-mtls.io/rotate-acknowledged': 'go' } });
    const expected = `${caData['ca.crt']}${caData['next.crt']}`;
    // The new leaf (b, secret_missing) is signed by the active CA and already trusts next.
    expect(prepare.writes[1]!.data['ca.crt']).toBe(expected);
    expect(pki.cache.isSignedBy(pki.cache.parse(prepare.writes[1]!.data['tls.crt']!), pki.cache.parse(caData['ca.crt']!))).toBe(true);
    // A bundle update rewrites ca.crt and keeps the rest byte for byte.
    const bundle = prepare.writes[2]!;
    expect(bundle.data['ca.crt']).toBe(expected);
    expect(bundle.reason).toBeUndefined();
  });

  it('the materialise helpers let an adapter write the CA, confirm, then issue leaves against it', async () => {
    const pki = new Pki();
    const store = new MemoryStore();
    store.setServices('a', [{ name: 'p' }]);
    const plan = planAt(store, pki, T0);
    const ca = await materializeCaChange(plan, { crypto: pki.crypto });
    expect(ca.write).toMatchObject({ target: 'ca', kind: 'ca', create: true, phases: ['create'], reason: 'initial' });
    expect(ca.bundle).toBe(trustBundle([ca.active!.certificate]));
    expect(ca.write!.notAfter).toBe(ca.active!.certificate.notAfter);
    store.apply(ca.write!);
    const leaf = await materializeLeaf(plan, plan.leaves[1]!, ca, { crypto: pki.crypto, now: T0 + 1500 });
    expect(leaf).toMatchObject({ target: { namespace: 'a' }, kind: 'serverLeaf', reason: 'initial', services: ['p'], create: true });
    // Issued at the time the adapter passes (write time), not the plan's.
    expect(pki.cache.parse(leaf.data['tls.crt']!).notBefore).toBe(T0 + 1000 - pki.policy.notBeforeBackdate);
    expect(leaf.notAfter).toBe(T0 + 1000 + days(90));
  });

  it('an update planned from a stale version is refused by the store (the adapter re-plans)', async () => {
    const { pki, store } = await convergedCluster({ a: [{ name: 'p' }] });
    store.setServices('a', [{ name: 'p' }, { name: 'q' }]);
    const plan = planAt(store, pki, T0 + minutes(1));
    const s = store.get({ namespace: 'a' })!;
    store.put({ namespace: 'a' }, s);
    const writes = await executePlan(plan, { crypto: pki.crypto });
    expect(() => store.apply(writes[0]!)).toThrow(StoreConflictError);
    expect(() => store.apply({ ...writes[0]!, create: true })).toThrow(/create, but the Secret exists/);
  });

  it('a bundle update keeps every other key of the Secret', async () => {
    const { pki, store } = await convergedCluster({ a: [{ name: 'p' }] });
    const s = store.get({ namespace: 'a' })!;
    store.put({ namespace: 'a' }, { ...s, data: { ...s.data, 'ca.crt': new TextEncoder().encode('stale'), extra: 'kept' } });
    const plan = planAt(store, pki, T0 + minutes(1));
    const ca = await materializeCaChange(plan, { crypto: pki.crypto });
    const write = materializeBundle(plan.bundles[0]!, ca, T0 + minutes(2));
    expect(write.data).toEqual({ ...s.data, 'ca.crt': ca.bundle, extra: 'kept' });
    expect(write.annotations).toEqual({ 'eso-mtls.io/bundle-written-at': new Date(T0 + minutes(2)).toISOString() });
  });

  it('stamps eso-mtls.io/bundle-written-at only when a write adds a CA certificate to the bundle', async () => {
    const { pki, store } = await convergedCluster({ a: [{ name: 'p' }] });
    const stamp = (): string | undefined => store.get({ namespace: 'a' })!.annotations['eso-mtls.io/bundle-written-at'];
    expect(stamp()).toBe(new Date(T0).toISOString());
    // A renewal with the same bundle keeps the stamp: routine renewals never hold back a CA activation.
    const renewal = planAt(store, pki, T0 + days(56));
    const writes = await executePlan(renewal, { crypto: pki.crypto });
    expect(writes.find((w) => w.kind === 'serverLeaf')?.annotations).toEqual({});
    for (const w of writes) store.apply(w);
    expect(stamp()).toBe(new Date(T0).toISOString());
    // Publishing a next CA adds a certificate: stamped at the write time.
    const ca = store.get('ca')!;
    store.put('ca', { ...ca, annotations: { 'eso-mtls.io/rotate': 'go' } });
    const prepare = await reconcile(store, pki, T0 + days(57));
    expect(prepare.writes.map((w) => w.kind)).toEqual(['ca', 'bundle', 'bundle']);
    expect(stamp()).toBe(new Date(T0 + days(57)).toISOString());
    // Retiring the old CA only drops one: the stamp stays.
    let at = T0 + days(57);
    while (store.get('ca')!.data['retired.crt'] === undefined || planAt(store, pki, at).ca?.phases[0] !== 'retire') {
      await reconcile(store, pki, at);
      at = planAt(store, pki, at).nextDueAt!;
    }
    const retire = await reconcile(store, pki, at);
    expect(retire.writes.filter((w) => w.kind === 'bundle').map((w) => w.annotations)).toEqual([{}, {}]);
  });

  it("with the planner's cache, what was just issued is re-observed without parsing, key checks or verification", async () => {
    const pki = new Pki();
    const store = new MemoryStore();
    for (const ns of ['a', 'b', 'c']) store.setServices(ns, [{ name: 'p' }]);
    const plan = planAt(store, pki, T0);
    for (const w of await executePlan(plan, { crypto: pki.crypto, cache: pki.cache })) store.apply(w);
    const before = { ...pki.cache.stats };
    expect(planAt(store, pki, T0 + minutes(1)).leaves).toEqual([]);
    expect(pki.cache.stats.keyChecks - before.keyChecks).toBe(0);
    expect(pki.cache.stats.verifications - before.verifications).toBe(0);
  });
});
