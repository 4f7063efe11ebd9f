import { describe, expect, it } from '@jest/globals';
import { type Instant, MemoryStore, type Plan, days, describeTarget, executePlan, isPlanEmpty, minutes, planRotation, seconds } from '@eso-mtls/core';
import { Pki, T0, convergedCluster, policy } from '../support/planner.js';

// Floods across namespaces (docs/security.md, T6): a bound on issuances per plan, served by priority, and
// an optional cap on namespaces. See docs/flood-control.md.

/** Past the renewal time of every leaf issued at T0 (notAfter - leafLookahead - leafJitter), well before notAfter. */
const DUE = T0 + policy.leafValidity - policy.leafLookahead;

const plan = (store: MemoryStore, pki: Pki, now: Instant, bounds: { maxIssuances?: number; maxNamespaces?: number } = {}): Plan =>
  planRotation(store.snapshot(), { now, policy, cache: pki.cache, ...bounds });

async function apply(store: MemoryStore, pki: Pki, p: Plan): Promise<void> {
  for (const w of await executePlan(p, { crypto: pki.crypto })) store.apply(w);
}

const targets = (p: Plan): string[] => p.leaves.map((l) => `${describeTarget(l.target)}:${l.reason}`);

/** `count` new namespaces `new-000`... with one Service each; they sort before the `zz-` ones already served. */
function flood(store: MemoryStore, count: number, createdAt: Instant): void {
  for (let i = 0; i < count; i++) store.setServices(`new-${String(i).padStart(3, '0')}`, [{ name: 'p', createdAt }]);
}

describe('a flood of new namespaces does not starve renewals that are due', () => {
  it('expiring leaves come first, then new namespaces, up to the bound; the rest are deferred to a plan a second later', async () => {
    const { pki, store } = await convergedCluster({ 'zz-a': [{ name: 'p' }], 'zz-b': [{ name: 'p' }] });
    flood(store, 40, DUE - days(1));
    const p = plan(store, pki, DUE, { maxIssuances: 10 });
    // The client and both namespaces were issued at T0 and are due; they sort last by name, yet go first.
    expect(targets(p).slice(0, 3).sort()).toEqual(['client:expiring', 'namespace/zz-a:expiring', 'namespace/zz-b:expiring']);
    expect(targets(p).slice(3)).toEqual(Array.from({ length: 7 }, (_, i) => `namespace/new-00${i}:initial`));
    expect(p.deferred).toHaveLength(33);
    expect(p.deferred.every((d) => d.reason === 'initial')).toBe(true);
    expect(p.deferred[0]).toMatchObject({ target: { namespace: 'new-007' }, services: ['p'] });
    expect(p.nextDueAt).toBe(DUE + seconds(1));
  });

  it('without a bound the order is the same and nothing is deferred', async () => {
    const { pki, store } = await convergedCluster({ 'zz-a': [{ name: 'p' }] });
    flood(store, 5, DUE - days(1));
    const p = plan(store, pki, DUE);
    expect(targets(p)).toEqual(['client:expiring', 'namespace/zz-a:expiring', ...Array.from({ length: 5 }, (_, i) => `namespace/new-00${i}:initial`)]);
    expect(p.deferred).toEqual([]);
  });

  it('the nearest notAfter goes first within a class, and every plan issues at most the bound until all converge', async () => {
    const { pki, store } = await convergedCluster({ 'zz-late': [{ name: 'p' }] });
    // zz-early sorts first by name but was issued an hour later, so it expires later: zz-late goes first.
    store.setServices('zz-early', [{ name: 'p' }]);
    await apply(store, pki, plan(store, pki, T0 + minutes(60)));
    flood(store, 25, DUE);
    let now = DUE + minutes(61);
    const rounds: Plan[] = [];
    for (let p = plan(store, pki, now, { maxIssuances: 4 }); !isPlanEmpty(p); p = plan(store, pki, now, { maxIssuances: 4 })) {
      expect(p.leaves.length).toBeLessThanOrEqual(4);
      rounds.push(p);
      await apply(store, pki, p);
      if (p.deferred.length === 0) break;
      expect(p.nextDueAt).toBe(now + seconds(1));
      now = p.nextDueAt!;
    }
    expect(targets(rounds[0]!)).toEqual(['client:expiring', 'namespace/zz-late:expiring', 'namespace/zz-early:expiring', 'namespace/new-000:initial']);
    expect(rounds).toHaveLength(Math.ceil(28 / 4));
    expect(rounds.at(-1)!.deferred).toEqual([]);
  });

  it('the leaves of an emergency CA rotation are never held back by the bound; new namespaces wait behind them', async () => {
    const services = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`ns-${i}`, [{ name: 'p' }]]));
    const { pki, store } = await convergedCluster(services);
    const ca = store.get('ca')!;
    store.put('ca', { ...ca, annotations: { 'eso-mtls.io/rotate': 'emergency' } });
    flood(store, 20, T0);
    const p = plan(store, pki, T0 + minutes(5), { maxIssuances: 3 });
    expect(p.ca?.phases).toEqual(['emergency']);
    // The client and the 12 served namespaces, over the bound of 3; the 20 new ones wait.
    expect(p.leaves.map((l) => l.reason)).toEqual(Array<string>(13).fill('forced'));
    expect(p.deferred.map((d) => d.reason)).toEqual(Array<string>(20).fill('initial'));
    const unbounded = plan(store, pki, T0 + minutes(5));
    expect(unbounded.leaves.map((l) => l.reason)).toEqual([...Array<string>(13).fill('forced'), ...Array<string>(20).fill('initial')]);
  });

  it('bundles are not issuances: a deferred leaf has its bundle rewritten, and the CA activation does not wait for it', async () => {
    const services = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`ns-${i}`, [{ name: 'p' }]]));
    const { pki, store } = await convergedCluster(services);
    const ca = store.get('ca')!;
    store.put('ca', { ...ca, annotations: { 'eso-mtls.io/rotate': 'r1' } });
    flood(store, 10, T0);
    // Every leaf is due while the next CA is prepared: two are issued, and each deferred one that
    // exists gets the next CA in its bundle now, so the activation is not held up by the bound.
    const prepare = plan(store, pki, DUE, { maxIssuances: 2 });
    expect(prepare.ca?.phases).toEqual(['prepare']);
    expect(targets(prepare)).toEqual(['client:expiring', 'namespace/ns-0:expiring']);
    expect(prepare.bundles.map((b) => describeTarget(b.target))).toEqual(['ns-1', 'ns-2', 'ns-3', 'ns-4', 'ns-5'].map((n) => `namespace/${n}`));
    await apply(store, pki, prepare);
    const activation = plan(store, pki, DUE + policy.propagationDelay + minutes(1), { maxIssuances: 2 });
    expect(activation.ca?.phases).toContain('activate');
    // Signed by the retired CA and past their renewal time: ranked with the expiring ones, before
    // the fresh leaves the retired CA signed and before the new namespaces.
    expect(targets(activation)).toEqual(['namespace/ns-1:ca_rotated', 'namespace/ns-2:ca_rotated']);
    expect(activation.deferred.slice(0, 5).map((d) => describeTarget(d.target))).toEqual([
      'namespace/ns-3',
      'namespace/ns-4',
      'namespace/ns-5',
      'client',
      'namespace/ns-0',
    ]);
    expect(activation.deferred.slice(5).map((d) => d.reason)).toEqual(Array<string>(10).fill('initial'));
  });

  it("ESO's client certificate goes first among first issuances, then the oldest namespaces", async () => {
    const pki = new Pki();
    const store = new MemoryStore();
    store.setServices('a-new', [{ name: 'p', createdAt: T0 }]);
    store.setServices('b-old', [{ name: 'p', createdAt: T0 - days(1) }]);
    const p = planRotation(store.snapshot(), { now: T0 + minutes(1), policy, cache: pki.cache, maxIssuances: 2 });
    expect(targets(p)).toEqual(['client:initial', 'namespace/b-old:initial']);
    expect(p.deferred.map((d) => describeTarget(d.target))).toEqual(['namespace/a-new']);
  });

  it('rejects a bound that is not a whole number from 1', async () => {
    const { pki, store } = await convergedCluster();
    expect(() => plan(store, pki, T0, { maxIssuances: 0 })).toThrow(/maxIssuances must be a whole number from 1, got 0/);
    expect(() => plan(store, pki, T0, { maxNamespaces: 1.5 })).toThrow(/maxNamespaces must be a whole number from 1, got 1.5/);
  });
});

describe('an optional cap on the namespaces served', () => {
  it('leaves out the newest namespaces, reports each, and plans nothing for them', async () => {
    const { pki, store } = await convergedCluster({});
    store.setServices('c-old', [{ name: 'p', createdAt: T0 - days(3) }]);
    store.setServices('a-new', [{ name: 'p', createdAt: T0 - days(1) }]);
    // A namespace is as old as its oldest labelled Service.
    store.setServices('b-mixed', [
      { name: 'p', createdAt: T0 },
      { name: 'q', createdAt: T0 - days(2) },
    ]);
    const p = plan(store, pki, T0 + minutes(1), { maxNamespaces: 2 });
    expect(targets(p).sort()).toEqual(['namespace/b-mixed:initial', 'namespace/c-old:initial']);
    expect(p.excluded).toEqual([{ namespace: 'a-new', reason: 'cap', services: ['p'], message: expect.stringContaining('at most 2 provider namespaces') }]);
    expect(p.status.namespaces.map((n) => n.namespace)).toEqual(['b-mixed', 'c-old']);
  });

  it('a namespace that holds our certificate keeps its place: a newly labelled older Service does not displace it', async () => {
    const { pki, store } = await convergedCluster({});
    store.setServices('served', [{ name: 'p', createdAt: T0 }]);
    await apply(store, pki, plan(store, pki, T0 + minutes(1), { maxNamespaces: 1 }));
    store.setServices('older', [{ name: 'p', createdAt: T0 - days(100) }]);
    const p = plan(store, pki, T0 + minutes(2), { maxNamespaces: 1 });
    expect(p.leaves).toEqual([]);
    expect(p.excluded.map((e) => e.namespace)).toEqual(['older']);
    // Still so when it is due: it is renewed, the other still left out.
    const later = plan(store, pki, DUE + minutes(2), { maxNamespaces: 1 });
    expect(targets(later)).toEqual(['client:expiring', 'namespace/served:expiring']);
    expect(later.excluded.map((e) => e.namespace)).toEqual(['older']);
  });

  it('without a cap, or under it, nothing is left out', async () => {
    const { pki, store } = await convergedCluster({ a: [{ name: 'p' }], b: [{ name: 'p' }] });
    expect(plan(store, pki, T0 + minutes(1)).excluded).toEqual([]);
    expect(plan(store, pki, T0 + minutes(1), { maxNamespaces: 2 }).excluded).toEqual([]);
  });
});
