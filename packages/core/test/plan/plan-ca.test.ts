import { beforeEach, describe, expect, it } from '@jest/globals';
import {
  type Instant,
  MemoryStore,
  type Plan,
  type SecretTarget,
  type WriteRefusal,
  days,
  executePlan,
  isPlanEmpty,
  minutes,
  planRotation,
  refusalGrace,
} from '@eso-mtls/core';
import { Pki, T0, convergedCluster, describeWrites, planAt, reconcile, text } from '../support/planner.js';

const LEAVES = ['client', { namespace: 'a' }, { namespace: 'b' }] as const;

let pki: Pki;
let store: MemoryStore;
beforeEach(async () => {
  ({ pki, store } = await convergedCluster());
});

const bundleOf = (target: (typeof LEAVES)[number]): string[] => pki.cache.parseBundle(text(store.get(target), 'ca.crt')).map((c) => c.serialNumber);
const issuerOf = (target: (typeof LEAVES)[number]): string => pki.cache.parse(text(store.get(target), 'tls.crt')).issuer;
const activeSubject = (): string => pki.cache.parse(text(store.get('ca'), 'ca.crt')).subject;

/** Reconciles at each nextDueAt until `until`; returns what each step wrote. */
async function runUntil(from: Instant, until: Instant): Promise<{ at: Instant; writes: string[] }[]> {
  const steps: { at: Instant; writes: string[] }[] = [];
  let at = from;
  while (at <= until) {
    const { writes } = await reconcile(store, pki, at);
    if (writes.length > 0) steps.push({ at, writes: describeWrites(writes) });
    // Every leaf chains to a CA in every bundle after each step.
    for (const holder of LEAVES) {
      const trusted = pki.cache.parseBundle(text(store.get(holder), 'ca.crt'));
      for (const leaf of LEAVES) expect(trusted.some((ca) => pki.cache.isSignedBy(pki.cache.parse(text(store.get(leaf), 'tls.crt')), ca))).toBe(true);
    }
    at = planAt(store, pki, at).nextDueAt!;
  }
  return steps;
}

describe('planner: overlap CA rotation', () => {
  it('prepare (bundles only) → activate after propagationDelay (every leaf ca_rotated) → retire after propagationDelay + maxConnectionAge', async () => {
    const { policy } = pki;
    const oldCa = pki.cache.parse(text(store.get('ca'), 'ca.crt'));
    const prepareAt = oldCa.notAfter - policy.caLookahead;
    const steps = (await runUntil(prepareAt - days(1), prepareAt + days(1))).filter((s) => s.writes.some((w) => w.startsWith('ca:')));
    expect(steps.map((s) => s.writes)).toEqual([
      ['ca:prepare', 'client:bundle', 'namespace/a:bundle', 'namespace/b:bundle'],
      ['ca:activate', 'client:ca_rotated', 'namespace/a:ca_rotated', 'namespace/b:ca_rotated'],
      ['ca:retire', 'client:bundle', 'namespace/a:bundle', 'namespace/b:bundle'],
    ]);
    expect(steps[0]!.at).toBe(prepareAt);
    expect(steps[1]!.at - steps[0]!.at).toBeGreaterThanOrEqual(policy.propagationDelay);
    expect(steps[1]!.at - steps[0]!.at).toBeLessThanOrEqual(policy.propagationDelay + 1000);
    expect(steps[2]!.at - steps[1]!.at).toBeGreaterThanOrEqual(policy.propagationDelay + policy.maxConnectionAge);
    expect(activeSubject()).not.toBe(oldCa.subject);
    for (const target of LEAVES) {
      expect(issuerOf(target)).toBe(activeSubject());
      expect(bundleOf(target)).toEqual([pki.cache.parse(text(store.get('ca'), 'ca.crt')).serialNumber]);
    }
  });

  it('a forced CA rotation (annotation on the CA Secret) runs the same overlap', async () => {
    const ca = store.get('ca')!;
    store.put('ca', { ...ca, annotations: { 'eso-mtls.io/rotate': 'please' } });
    const steps = await runUntil(T0 + minutes(1), T0 + days(1));
    expect(steps.map((s) => s.writes[0])).toEqual(['ca:prepare', 'ca:activate', 'ca:retire']);
    expect(store.get('ca')!.annotations['eso-mtls.io/rotate-acknowledged']).toBe('please');
  });

  it('activation waits while a managed bundle lacks next (a write that failed), then for propagationDelay after its repair', async () => {
    const ca = store.get('ca')!;
    store.put('ca', { ...ca, annotations: { 'eso-mtls.io/rotate': 'r' } });
    const first = planAt(store, pki, T0 + minutes(1));
    const writes = await executePlan(first, { crypto: pki.crypto });
    for (const w of writes) if (!(typeof w.target === 'object' && w.target.namespace === 'b')) store.apply(w);
    const late = planAt(store, pki, T0 + minutes(30));
    expect(late.ca).toBeUndefined();
    expect(late.bundles.map((b) => b.target)).toEqual([{ namespace: 'b' }]);
    await reconcile(store, pki, T0 + minutes(30));
    // The repaired bundle reaches b's pods within propagationDelay of its write, not before.
    const after = planAt(store, pki, T0 + minutes(31));
    expect(after.ca).toBeUndefined();
    expect(after.nextDueAt).toBe(T0 + minutes(30) + 1000 + pki.policy.propagationDelay);
    expect(planAt(store, pki, after.nextDueAt!).ca?.phases).toEqual(['activate']);
  });

  it('a namespace whose Secret refuses our writes holds activation for refusalGrace only, is then left behind and reported, and catches up once writable', async () => {
    const { policy } = pki;
    const ca = store.get('ca')!;
    store.put('ca', { ...ca, annotations: { 'eso-mtls.io/rotate': 'r' } });
    const preparedAt = T0 + minutes(1);
    const isB = (target: SecretTarget): boolean => typeof target === 'object' && target.namespace === 'b';
    // b's Secret was made immutable: every write to it is refused from the prepare on.
    const refusal: WriteRefusal = { since: preparedAt, reason: 'immutable', detail: 'data: Forbidden: field is immutable when `immutable` is set' };
    const planRefused = (now: Instant) => {
      const snapshot = store.snapshot();
      const namespaces = snapshot.namespaces.map((n) => (n.namespace === 'b' ? { ...n, writesRefused: refusal } : n));
      return planRotation({ ...snapshot, namespaces }, { now, policy, cache: pki.cache });
    };
    const applyAllButB = async (plan: Plan) => {
      for (const w of await executePlan(plan, { crypto: pki.crypto })) if (!isB(w.target)) store.apply(w);
    };
    await applyAllButB(planRefused(preparedAt));
    const leftBehindAt = preparedAt + refusalGrace(policy);

    // Within the grace it holds activation as any bundle short of next does, and the plan wakes at its end.
    const holding = planRefused(leftBehindAt - 1000);
    expect(holding.ca).toBeUndefined();
    expect(holding.leftBehind).toEqual([]);
    expect(holding.nextDueAt).toBe(leftBehindAt);

    // Then the others move on without it: activation, every leaf but b's re-issued, b reported.
    const moved = planRefused(leftBehindAt);
    expect(moved.ca?.phases).toEqual(['activate']);
    expect(moved.ca?.message).toContain('without 1 namespace(s) whose Secret refuses our writes');
    expect(moved.leftBehind).toEqual([
      { namespace: 'b', services: ['q'], reason: 'immutable', since: preparedAt, message: expect.stringContaining('Delete the Secret') },
    ]);
    expect(moved.leftBehind[0]!.message).toContain('namespace b is left behind by the CA rotation');
    await applyAllButB(moved);
    const oldCa = pki.cache.parse(text(store.get({ namespace: 'b' }), 'tls.crt')).issuer;
    expect(issuerOf('client')).toBe(activeSubject());
    expect(issuerOf({ namespace: 'b' })).toBe(oldCa);

    // While refused it stays reported, and the CA its leaf chains to stays trusted everywhere (never retired).
    const later = planRefused(leftBehindAt + days(1));
    expect(later.leftBehind.map((l) => l.namespace)).toEqual(['b']);
    expect(later.ca?.phases ?? []).not.toContain('retire');
    expect(later.trust.retired.map((c) => c.subject)).toEqual([oldCa]);

    // Writable again (the adapter's write landed, so no refusal): b gets the new CA's leaf and bundle.
    const { plan: caughtUp, writes } = await reconcile(store, pki, leftBehindAt + days(1));
    expect(caughtUp.leftBehind).toEqual([]);
    expect(describeWrites(writes)).toContain('namespace/b:ca_rotated');
    expect(issuerOf({ namespace: 'b' })).toBe(activeSubject());
  });

  it('when every served namespace refuses our writes (RBAC or a policy broken for all), nobody is left behind and activation waits', async () => {
    const ca = store.get('ca')!;
    store.put('ca', { ...ca, annotations: { 'eso-mtls.io/rotate': 'r' } });
    const preparedAt = T0 + minutes(1);
    for (const w of await executePlan(planAt(store, pki, preparedAt), { crypto: pki.crypto })) if (typeof w.target !== 'object') store.apply(w);
    const refusal: WriteRefusal = { since: preparedAt, reason: 'refused', detail: 'secrets is forbidden' };
    const snapshot = store.snapshot();
    const namespaces = snapshot.namespaces.map((n) => ({ ...n, writesRefused: refusal }));
    const plan = planRotation({ ...snapshot, namespaces }, { now: preparedAt + days(1), policy: pki.policy, cache: pki.cache });
    expect(plan.ca).toBeUndefined();
    expect(plan.leftBehind).toEqual([]);
  });

  it('a refused namespace whose bundle already holds every CA that signs is not left behind', async () => {
    const refusal: WriteRefusal = { since: T0, reason: 'refused', detail: 'denied by policy' };
    const snapshot = store.snapshot();
    const namespaces = snapshot.namespaces.map((n) => (n.namespace === 'b' ? { ...n, writesRefused: refusal } : n));
    const plan = planRotation({ ...snapshot, namespaces }, { now: T0 + days(1), policy: pki.policy, cache: pki.cache });
    expect(plan.leftBehind).toEqual([]);
  });
});

describe('planner: CA recovery', () => {
  it('CA Secret deleted: recovered only from the client Secret, never from a provider namespace; no hard cut-over', async () => {
    const lost = pki.cache.parse(text(store.get('ca'), 'ca.crt'));
    const planted = await pki.ca(T0, 'planted-ca');
    const a = store.get({ namespace: 'a' })!;
    store.put({ namespace: 'a' }, { ...a, data: { ...a.data, 'ca.crt': `${text(a, 'ca.crt')}${planted.certificate.pem}` } });
    store.delete('ca');
    const recover = planAt(store, pki, T0 + days(1));
    expect(recover.ca).toMatchObject({ phases: ['recover'], reason: 'secret_missing' });
    expect(recover.trust.retired.map((c) => c.serialNumber)).toEqual([lost.serialNumber]);
    expect(recover.leaves).toEqual([]);
    const steps = await runUntil(T0 + days(1), T0 + days(2));
    expect(steps.map((s) => s.writes[0])).toEqual(['ca:recover', 'ca:activate', 'ca:retire']);
    expect(steps[1]!.writes.slice(1)).toEqual(['client:ca_rotated', 'namespace/a:ca_rotated', 'namespace/b:ca_rotated']);
    for (const target of ['ca', ...LEAVES] as const) expect(Object.values(store.get(target)!.data).join('')).not.toContain(planted.certificate.pem);
  });

  it('leaves due while no CA signs wait for the activation', async () => {
    store.delete('ca');
    store.delete({ namespace: 'a' });
    const plan = planAt(store, pki, T0 + days(1));
    expect(plan.leaves).toEqual([]);
    expect(plan.waiting.map((w) => [w.target, w.reason])).toEqual([
      ['client', 'ca_rotated'],
      [{ namespace: 'a' }, 'secret_missing'],
      [{ namespace: 'b' }, 'ca_rotated'],
    ]);
    // The adapter wakes when the new CA can be activated.
    expect(plan.nextDueAt).toBeLessThanOrEqual(T0 + days(1) + pki.policy.propagationDelay + 1000);
  });

  it('ca.crt removed beside a good ca.key: its certificate is restored from the client Secret, nothing is re-issued', async () => {
    const ca = store.get('ca')!;
    const before = text(ca, 'ca.crt');
    store.put('ca', { ...ca, data: { ...ca.data, 'ca.crt': '' } });
    const { plan, writes } = await reconcile(store, pki, T0 + days(1));
    expect(plan.ca).toMatchObject({ phases: ['restore'], reason: undefined });
    expect(plan.ca!.message).toContain('restored from the client Secret');
    expect(describeWrites(writes)).toEqual(['ca:restore']);
    expect(text(store.get('ca'), 'ca.crt')).toBe(before);
    expect(isPlanEmpty(planAt(store, pki, T0 + days(1) + minutes(1)))).toBe(true);
  });

  it('ca.crt replaced by another CA beside a good ca.key: restored too; a key no certificate in the client Secret matches is recovered', async () => {
    const ca = store.get('ca')!;
    const other = await pki.ca(T0, 'other-ca');
    store.put('ca', { ...ca, data: { ...ca.data, 'ca.crt': other.certificate.pem } });
    expect(planAt(store, pki, T0 + days(1)).ca).toMatchObject({ phases: ['restore'] });
    // A key that no certificate in the client Secret matches: its certificate stays trusted as retired, a new CA is recovered.
    store.put('ca', { ...ca, data: { ...ca.data, 'ca.key': other.privateKeyPem } });
    const plan = planAt(store, pki, T0 + days(1));
    expect(plan.ca).toMatchObject({ phases: ['recover'], reason: 'invalid' });
    expect(plan.ca!.message).toMatch(
      /the CA key is unusable \(ca.key is not the private key of the certificate in ca.crt.*no certificate in the client Secret's ca.crt matches it/,
    );
  });

  it('while no CA signs, waiting leaves and the plan say until when', async () => {
    store.delete('ca');
    store.delete({ namespace: 'a' });
    const now = T0 + days(1);
    const plan = planAt(store, pki, now);
    const until = plan.status.signingPausedUntil!;
    expect(until).toBeGreaterThan(now);
    expect(until).toBeLessThanOrEqual(now + pki.policy.propagationDelay + 1000);
    expect(plan.waiting.map((w) => [w.services, w.until])).toEqual([
      [[], until],
      [['p'], until],
      [['q'], until],
    ]);
    // Once the recovery's CA is written, the wait goes on until its activation, then ends.
    await reconcile(store, pki, now);
    expect(planAt(store, pki, now + minutes(1)).status.signingPausedUntil).toBe(until);
    await reconcile(store, pki, until);
    expect(planAt(store, pki, until + 1000).status.signingPausedUntil).toBeUndefined();
  });

  it('CA and client Secrets both gone: nothing to recover from, a new CA is created and every leaf is ca_mismatch', async () => {
    store.delete('ca');
    store.delete('client');
    const { writes } = await reconcile(store, pki, T0 + days(1));
    expect(describeWrites(writes)).toEqual(['ca:create', 'client:secret_missing', 'namespace/a:ca_mismatch', 'namespace/b:ca_mismatch']);
  });
});

describe('planner: emergency CA rotation', () => {
  it('hard cut-over: new CA at once, every leaf forced, the old CA leaves every bundle at once', async () => {
    const old = pki.cache.parse(text(store.get('ca'), 'ca.crt'));
    const ca = store.get('ca')!;
    store.put('ca', { ...ca, annotations: { 'eso-mtls.io/rotate': 'emergency' } });
    const { writes } = await reconcile(store, pki, T0 + days(3));
    expect(describeWrites(writes)).toEqual(['ca:emergency', 'client:forced', 'namespace/a:forced', 'namespace/b:forced']);
    for (const target of LEAVES) {
      expect(bundleOf(target)).toEqual([pki.cache.parse(text(store.get('ca'), 'ca.crt')).serialNumber]);
      expect(bundleOf(target)).not.toContain(old.serialNumber);
    }
    expect(isPlanEmpty(planAt(store, pki, T0 + days(3)))).toBe(true);
  });
});
