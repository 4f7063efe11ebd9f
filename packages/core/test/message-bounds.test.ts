import { describe, expect, it } from '@jest/globals';
import { type CertificateView, days, minutes, namespaceDnsNames } from '@eso-mtls/core';
import { LEAF_RULES, type LeafRuleContext } from '../src/policy/rules.js';
import { truncateList } from '../src/common/truncate.js';
import { T0, convergedCluster, planAt, policy, reconcile, view } from './support/planner.js';

/**
 * A message is bounded by its size, not by its input: whatever a tenant labels, each rule's
 * message stays under this many characters (two lists of 5 names of at most 128 characters each,
 * and a sentence). Before, the names-changed message quoted every name a namespace asks for: 62 KB
 * at 600 Services.
 */
const MAX_MESSAGE = 2048;

const active = view({ serialNumber: 'ac', subject: 'CN=active', isCa: true });
const names = (count: number, prefix = 's'): string[] =>
  Array.from({ length: count }, (_, i) => namespaceDnsNames([{ namespace: 'ns', name: `${prefix}-${String(i).padStart(5, '0')}` }], 'cluster.local'))
    .flat()
    .sort();

function ctx(have: readonly string[], want: readonly string[], overrides: Partial<LeafRuleContext> = {}): LeafRuleContext {
  const leaf: CertificateView = view({ serialNumber: '01', issuer: 'CN=active', dnsNames: have, notBefore: T0, notAfter: T0 + days(90) });
  return {
    now: T0,
    policy,
    subject: 'namespace ns',
    presence: 'present',
    previouslyIssued: true,
    leaf: { ok: true, value: { certificate: leaf, privateKeyPem: 'key' } },
    trust: { active, retired: [] },
    isSignedBy: (l, ca) => l.issuer === ca.subject,
    identity: { kind: 'server', dnsNames: want },
    ...overrides,
  };
}

describe('rule messages are bounded by their size, not by the Services', () => {
  it('names changed, 10,000 Services (40,000 names) on each side: the message names what changed, in part, and counts', () => {
    const have = names(10_000);
    const want = names(10_000, 't');
    for (const rule of LEAF_RULES) {
      const message = rule(ctx(have, want))?.message ?? '';
      expect(message.length).toBeLessThan(MAX_MESSAGE);
    }
    const message = LEAF_RULES.map((rule) => rule(ctx(have, want))).find((t) => t?.reason === 'dns_changed')!.message;
    expect(message).toContain('from 40000 to 40000');
    expect(message).toContain('and 39995 more');
    expect(message).toContain('added [t-00000,');
    expect(message).toContain('removed [s-00000,');
  });

  it('one Service added to 10,000: the message names it and nothing of the others', () => {
    const have = names(10_000);
    const want = [...have, ...names(1, 'new')].sort();
    const trigger = LEAF_RULES.map((rule) => rule(ctx(have, want))).find((t) => t !== undefined)!;
    expect(trigger.reason).toBe('dns_changed');
    expect(trigger.message).toBe(`namespace ns: DNS names changed from 40000 to 40004: added [${truncateList(names(1, 'new'))}]`);
  });

  it('names of 253 characters are cut too', () => {
    const long = (i: number): string => `${String(i).padStart(3, '0')}${'a'.repeat(59)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(62)}`;
    const want = Array.from({ length: 1000 }, (_, i) => long(i));
    expect(want[0]!.length).toBe(253);
    const message = LEAF_RULES.map((rule) => rule(ctx([], want))).find((t) => t !== undefined)!.message;
    expect(message.length).toBeLessThan(MAX_MESSAGE);
  });
});

describe('plans at 600 Services in one namespace', () => {
  // 600 Services as the issue measured; the certificate holds 2,400 names (about 52 KB).
  const services = Array.from({ length: 600 }, (_, i) => ({ name: `svc-${String(i).padStart(3, '0')}` }));

  it('adding one: the issuance is prompted by it alone, and its message is bounded', async () => {
    const { pki, store } = await convergedCluster({ big: services });
    store.setServices('big', [...services, { name: 'svc-new' }]);
    const plan = planAt(store, pki, T0 + minutes(1));
    expect(plan.leaves.map((l) => [l.reason, l.services.length, l.promptedBy])).toEqual([['dns_changed', 601, ['svc-new']]]);
    expect(plan.leaves[0]!.message.length).toBeLessThan(MAX_MESSAGE);
  });

  it('removing one, or every Service asking for a rotation: messages stay bounded', async () => {
    const { pki, store } = await convergedCluster({ big: services });
    store.setServices('big', services.slice(1));
    let plan = planAt(store, pki, T0 + minutes(1));
    expect(plan.leaves.map((l) => [l.reason, l.promptedBy])).toEqual([['dns_changed', []]]);
    expect(plan.leaves[0]!.message).toContain('removed [svc-000');
    expect(plan.leaves[0]!.message.length).toBeLessThan(MAX_MESSAGE);

    await reconcile(store, pki, T0 + minutes(1));
    store.setServices(
      'big',
      services.map((s) => ({ ...s, rotateRequest: 'ticket-1' })),
    );
    plan = planAt(store, pki, T0 + minutes(2));
    expect(plan.leaves.map((l) => [l.reason, l.promptedBy.length])).toEqual([['forced', 600]]);
    expect(plan.leaves[0]!.message).toContain('and 597 more');
    expect(plan.leaves[0]!.message.length).toBeLessThan(MAX_MESSAGE);
  });
});
