import { beforeEach, describe, expect, it } from '@jest/globals';
import { MemoryStore, acknowledgementOf, days, isPlanEmpty, minutes } from '@eso-mtls/core';
import { Pki, T0, convergedCluster, describeWrites, planAt, reconcile, text } from '../support/planner.js';

const A = { namespace: 'a' } as const;

let pki: Pki;
let store: MemoryStore;
beforeEach(async () => {
  ({ pki, store } = await convergedCluster());
});

/** Overwrites data keys of a Secret as a user would. */
function tamper(target: typeof A | 'client', data: Record<string, string>): void {
  const s = store.get(target)!;
  store.put(target, { ...s, data: { ...s.data, ...data } });
}

describe('planRotation: each trigger', () => {
  it('secret_missing: a deleted Secret we issued; initial: a namespace never issued', async () => {
    store.delete(A);
    store.setServices('c', [{ name: 'r' }]);
    const { writes } = await reconcile(store, pki, T0 + minutes(5));
    expect(describeWrites(writes)).toEqual(['namespace/a:secret_missing', 'namespace/c:initial']);
  });

  it('invalid: garbage PEM, a key that does not match, or emptied data', async () => {
    tamper(A, { 'tls.crt': 'garbage' });
    tamper('client', { 'tls.key': (await pki.ca(T0, 'x')).privateKeyPem });
    store.put({ namespace: 'b' }, { ...store.get({ namespace: 'b' })!, data: {} });
    const { plan } = await reconcile(store, pki, T0 + minutes(5));
    expect(plan.leaves.map((l) => [l.target, l.reason])).toEqual([
      ['client', 'invalid'],
      [A, 'invalid'],
      [{ namespace: 'b' }, 'invalid'],
    ]);
    expect(plan.leaves[0]!.message).toContain('key_mismatch');
    expect(isPlanEmpty(planAt(store, pki, T0 + minutes(5)))).toBe(true);
  });

  it('ca_mismatch: a leaf from another CA written into the Secret', async () => {
    const other = await pki.ca(T0, 'intruder-ca');
    const leaf = await pki.server(other, T0, ['p', 'p.a', 'p.a.svc', 'p.a.svc.cluster.local']);
    tamper(A, { 'tls.crt': leaf.certificate.pem, 'tls.key': leaf.privateKeyPem });
    const { plan } = await reconcile(store, pki, T0 + minutes(5));
    expect(plan.leaves).toMatchObject([{ target: A, reason: 'ca_mismatch' }]);
    expect(plan.leaves[0]!.message).toContain('CN=intruder-ca');
  });

  it("a foreign CA in a provider Secret's ca.crt: the bundle is rewritten (not a rotation) and the CA spreads nowhere", async () => {
    const planted = await pki.ca(T0, 'planted-ca');
    tamper(A, { 'ca.crt': planted.certificate.pem });
    const leafBefore = text(store.get(A), 'tls.crt');
    const { writes } = await reconcile(store, pki, T0 + minutes(5));
    expect(describeWrites(writes)).toEqual(['namespace/a:bundle']);
    expect(writes[0]!.reason).toBeUndefined();
    expect(text(store.get(A), 'tls.crt')).toBe(leafBefore);
    expect(text(store.get(A), 'ca.crt')).toBe(text(store.get('ca'), 'ca.crt'));
    for (const target of ['ca', 'client', A, { namespace: 'b' }] as const) {
      expect(Object.values(store.get(target)!.data).join('')).not.toContain(planted.certificate.pem);
    }
  });

  it("expiring: at the leaf's renewal time, not before", async () => {
    const next = planAt(store, pki, T0 + days(1)).nextDueAt!;
    expect(isPlanEmpty(planAt(store, pki, next - 1000))).toBe(true);
    expect(planAt(store, pki, next).leaves.map((l) => l.reason)).toEqual(['expiring']);
  });
});

describe('planRotation: forced rotation', () => {
  it('a Service token re-issues its namespace (forced) and is acknowledged on our Secret', async () => {
    store.setServices('a', [{ name: 'p', rotateRequest: '2026-01-02' }]);
    const { plan } = await reconcile(store, pki, T0 + minutes(1));
    expect(plan.leaves).toMatchObject([
      { target: A, reason: 'forced', annotations: { 'eso-mtls.io/rotate-acknowledged': `{"p":"${acknowledgementOf('2026-01-02')}"}` } },
    ]);
    expect(isPlanEmpty(planAt(store, pki, T0 + minutes(2)))).toBe(true);
    // Removing the token asks for nothing; a new token asks again.
    store.setServices('a', [{ name: 'p' }]);
    expect(isPlanEmpty(planAt(store, pki, T0 + minutes(3)))).toBe(true);
    store.setServices('a', [{ name: 'p', rotateRequest: '2026-01-03' }]);
    expect(planAt(store, pki, T0 + minutes(4)).leaves.map((l) => l.reason)).toEqual(['forced']);
  });

  it('a token is one request per namespace: the same token on a second Service asks nothing again, a new one asks', async () => {
    store.setServices('a', [{ name: 'p', rotateRequest: 't' }, { name: 'q' }]);
    await reconcile(store, pki, T0 + minutes(1));
    // What `eso-mtls renew --namespace` does when the controller acts between its two patches.
    store.setServices('a', [
      { name: 'p', rotateRequest: 't' },
      { name: 'q', rotateRequest: 't' },
    ]);
    expect(isPlanEmpty(planAt(store, pki, T0 + minutes(2)))).toBe(true);
    store.setServices('a', [
      { name: 'p', rotateRequest: 't' },
      { name: 'q', rotateRequest: 'u' },
    ]);
    expect(planAt(store, pki, T0 + minutes(2)).leaves.map((l) => l.reason)).toEqual(['forced']);
  });

  it('a Service added with a token to a new namespace is initial', async () => {
    store.setServices('a', [{ name: 'p', rotateRequest: 't' }]);
    await reconcile(store, pki, T0 + minutes(1));
    store.setServices('new', [{ name: 'z', rotateRequest: 't' }]);
    expect(planAt(store, pki, T0 + minutes(2)).leaves.map((l) => [l.target, l.reason])).toEqual([[{ namespace: 'new' }, 'initial']]);
  });

  it("the client Secret's own eso-mtls.io/rotate annotation re-issues the client leaf", async () => {
    const client = store.get('client')!;
    store.put('client', { ...client, annotations: { 'eso-mtls.io/rotate': 'now' } });
    const { plan } = await reconcile(store, pki, T0 + minutes(1));
    expect(plan.leaves).toMatchObject([{ target: 'client', reason: 'forced' }]);
    expect(store.get('client')!.annotations['eso-mtls.io/rotate-acknowledged']).toBe('now');
    expect(isPlanEmpty(planAt(store, pki, T0 + minutes(2)))).toBe(true);
  });
});
