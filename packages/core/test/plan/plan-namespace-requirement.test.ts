import { describe, expect, it } from '@jest/globals';
import {
  type Instant,
  type MemoryStore,
  type NamespaceRequirement,
  type Plan,
  type Snapshot,
  describeTarget,
  formatNamespaceRequirement,
  minutes,
  parseNamespaceRequirement,
  planRotation,
} from '@eso-mtls/core';
import { type Pki, T0, convergedCluster, policy } from '../support/planner.js';

// The controller's own namespace check (docs/security.md, T3; docs/label-policy.md): with a namespace
// requirement, labelled Services of a namespace without the label are left out as if unlabelled,
// before anything else about them is judged, and reported with reason not_allowed.

const REQUIREMENT: NamespaceRequirement = { key: 'eso-mtls.io/providers-allowed', value: 'true' };

/** The store's snapshot with each namespace's `allowed` set from `allowed` (as the adapter's namespace cache would). */
function snapshotWith(store: MemoryStore, allowed: ReadonlySet<string>): Snapshot {
  const s = store.snapshot();
  return { ...s, namespaces: s.namespaces.map((n) => ({ ...n, allowed: allowed.has(n.namespace) })) };
}

function plan(store: MemoryStore, pki: Pki, now: Instant, allowed: ReadonlySet<string>, extra: { maxNamespaces?: number } = {}): Plan {
  return planRotation(snapshotWith(store, allowed), { now, policy, cache: pki.cache, namespaceRequirement: REQUIREMENT, ...extra });
}

const targets = (p: Plan): string[] => p.leaves.map((l) => describeTarget(l.target));

describe('a namespace requirement', () => {
  it('serves only namespaces with the label; the others are excluded as not_allowed with a message naming the label', async () => {
    const { pki, store } = await convergedCluster({});
    store.setServices('team-a', [{ name: 'vault' }]);
    store.setServices('team-b', [{ name: 'aws' }, { name: 'gcp' }]);
    const p = plan(store, pki, T0 + minutes(1), new Set(['team-a']));
    expect(targets(p)).toEqual(['namespace/team-a']);
    expect(p.excluded).toEqual([
      {
        namespace: 'team-b',
        reason: 'not_allowed',
        services: ['aws', 'gcp'],
        message: expect.stringContaining(`lacks the label ${formatNamespaceRequirement(REQUIREMENT)}`),
      },
    ]);
    expect(p.status.namespaces.map((n) => n.namespace)).toEqual(['team-a']);
  });

  it('fails closed: a namespace whose label is not known is not served', async () => {
    const { pki, store } = await convergedCluster({});
    store.setServices('team-a', [{ name: 'vault' }]);
    const p = planRotation(store.snapshot(), { now: T0 + minutes(1), policy, cache: pki.cache, namespaceRequirement: REQUIREMENT });
    expect(p.leaves.map((l) => describeTarget(l.target))).toEqual([]);
    expect(p.excluded.map((e) => e.reason)).toEqual(['not_allowed']);
  });

  it('without a requirement, `allowed` is not read: every namespace is served', async () => {
    const { pki, store } = await convergedCluster({});
    store.setServices('team-a', [{ name: 'vault' }]);
    const p = planRotation(snapshotWith(store, new Set()), { now: T0 + minutes(1), policy, cache: pki.cache });
    expect(targets(p)).toEqual(['namespace/team-a']);
    expect(p.excluded).toEqual([]);
  });

  it('is judged before the names and the Secret: no conflict is reported for a namespace that is not allowed', async () => {
    const { pki, store } = await convergedCluster({});
    store.setServices('team-a', [{ name: 'Not_A_Label' }]);
    store.setServices('team-b', [{ name: 'p' }]);
    store.put({ namespace: 'team-b' }, { data: { 'tls.crt': new TextEncoder().encode('theirs') }, ownership: 'foreign', annotations: {} });
    const p = plan(store, pki, T0 + minutes(1), new Set());
    expect(p.conflicts).toEqual([]);
    expect(p.excluded.map((e) => [e.namespace, e.reason])).toEqual([
      ['team-a', 'not_allowed'],
      ['team-b', 'not_allowed'],
    ]);
  });

  it('a served namespace that loses the label keeps its Secret untouched and is no longer renewed; labelled again, it is', async () => {
    const { pki, store } = await convergedCluster({ 'team-a': [{ name: 'vault' }] });
    const issued = store.get({ namespace: 'team-a' })!;
    const due = T0 + policy.leafValidity - policy.leafLookahead + minutes(1);
    const off = plan(store, pki, due, new Set());
    expect(targets(off)).not.toContain('namespace/team-a');
    expect(off.bundles.map((b) => describeTarget(b.target))).not.toContain('namespace/team-a');
    expect(off.excluded.map((e) => e.namespace)).toEqual(['team-a']);
    expect(store.get({ namespace: 'team-a' })).toBe(issued);
    const on = plan(store, pki, due, new Set(['team-a']));
    expect(on.leaves.filter((l) => describeTarget(l.target) === 'namespace/team-a').map((l) => l.reason)).toEqual(['expiring']);
  });

  it('namespaces not allowed do not count against the cap on namespaces', async () => {
    const { pki, store } = await convergedCluster({});
    store.setServices('a-not-allowed', [{ name: 'p', createdAt: T0 - 3 * 86_400_000 }]);
    store.setServices('b-allowed', [{ name: 'p', createdAt: T0 - 86_400_000 }]);
    const p = plan(store, pki, T0 + minutes(1), new Set(['b-allowed']), { maxNamespaces: 1 });
    expect(targets(p)).toEqual(['namespace/b-allowed']);
    expect(p.excluded.map((e) => [e.namespace, e.reason])).toEqual([['a-not-allowed', 'not_allowed']]);
  });
});

describe('parseNamespaceRequirement', () => {
  it.each([
    ['eso-mtls.io/providers-allowed=true', { key: 'eso-mtls.io/providers-allowed', value: 'true' }],
    ['tier=platform', { key: 'tier', value: 'platform' }],
    ['example.com/a.b_c-d=X-1.y_z', { key: 'example.com/a.b_c-d', value: 'X-1.y_z' }],
  ])('reads %s', (text, expected) => {
    expect(parseNamespaceRequirement(text)).toEqual(expected);
    expect(formatNamespaceRequirement(expected)).toBe(text);
  });

  it.each([
    ['a bare key', 'eso-mtls.io/providers-allowed'],
    ['an empty value', 'eso-mtls.io/providers-allowed='],
    ['an empty key', '=true'],
    ['a second equals sign', 'a=b=c'],
    ['an upper-case prefix', 'Eso-mtls.io/x=true'],
    ['a name over 63 characters', `${'a'.repeat(64)}=true`],
    ['a value over 63 characters', `a=${'b'.repeat(64)}`],
    ['a selector of two terms', 'a=b,c=d'],
    ['an inequality', 'a!=b'],
    ['a value with a space', 'a=b c'],
  ])('refuses %s', (_, text) => {
    expect(parseNamespaceRequirement(text)).toBeUndefined();
  });
});
