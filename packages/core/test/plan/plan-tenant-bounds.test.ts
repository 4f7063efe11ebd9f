import { beforeEach, describe, expect, it } from '@jest/globals';
import {
  MAX_DNS_NAME_BYTES,
  MAX_ROTATE_REQUEST_BYTES,
  MAX_SERVER_CERTIFICATE_BYTES,
  MemoryStore,
  acknowledgementOf,
  dnsNamesBytes,
  fitServiceNames,
  isPlanEmpty,
  minutes,
  namespaceDnsNames,
} from '@eso-mtls/core';
import { Pki, T0, convergedCluster, planAt, reconcile } from '../support/planner.js';

const A = { namespace: 'a' } as const;
const ACK = 'eso-mtls.io/rotate-acknowledged';

let pki: Pki;
let store: MemoryStore;
beforeEach(async () => {
  ({ pki, store } = await convergedCluster({ a: [{ name: 'p' }, { name: 'q' }], b: [{ name: 'r' }] }));
});

describe('rotation requests are bounded', () => {
  it('a token over the limit is ignored and reported; the namespace is not re-issued and nothing of it is copied', async () => {
    const huge = 'x'.repeat(250_000);
    store.setServices('a', [{ name: 'p', rotateRequest: huge }, { name: 'q' }]);
    const plan = planAt(store, pki, T0 + minutes(1));
    expect(isPlanEmpty(plan)).toBe(true);
    expect(plan.refused).toEqual([expect.objectContaining({ namespace: 'a', service: 'p', reason: 'rotate_request_too_large' })]);
    expect(plan.refused[0]!.message.length).toBeLessThan(400);
    expect(plan.refused[0]!.message).not.toContain('xxxxxxxx');
  });

  it('a token of exactly the limit is honoured; one multi-byte character more is not', async () => {
    const atLimit = 'é'.repeat(MAX_ROTATE_REQUEST_BYTES / 2);
    store.setServices('a', [{ name: 'p', rotateRequest: atLimit }, { name: 'q' }]);
    expect(planAt(store, pki, T0 + minutes(1)).leaves.map((l) => l.reason)).toEqual(['forced']);
    store.setServices('a', [{ name: 'p', rotateRequest: `${atLimit}a` }, { name: 'q' }]);
    const plan = planAt(store, pki, T0 + minutes(1));
    expect(plan.leaves).toEqual([]);
    expect(plan.refused.map((r) => r.reason)).toEqual(['rotate_request_too_large']);
  });

  it('the acknowledgement is a digest per Service, whatever the token, and the message names Services, not tokens', async () => {
    const token = 'y'.repeat(MAX_ROTATE_REQUEST_BYTES);
    store.setServices('a', [
      { name: 'p', rotateRequest: token },
      { name: 'q', rotateRequest: token },
    ]);
    const { plan } = await reconcile(store, pki, T0 + minutes(1));
    const ack = plan.leaves[0]!.annotations[ACK]!;
    expect(JSON.parse(ack)).toEqual({ p: acknowledgementOf(token), q: acknowledgementOf(token) });
    expect(acknowledgementOf(token)).toMatch(/^sha256:[0-9a-f]{32}$/);
    expect(plan.leaves[0]!.message).toContain('Services p, q');
    expect(plan.leaves[0]!.message).not.toContain(token);
    expect(isPlanEmpty(planAt(store, pki, T0 + minutes(2)))).toBe(true);
  });

  it('upgrade: an acknowledgement written by 0.1 (raw tokens) is still honoured, so nothing is re-issued', async () => {
    store.setServices('a', [{ name: 'p', rotateRequest: '2026-01-02' }, { name: 'q' }]);
    const secret = store.get(A)!;
    // What 0.1's namespaceRotationRequest wrote: the JSON of raw tokens.
    store.put(A, { ...secret, annotations: { ...secret.annotations, [ACK]: '{"p":"2026-01-02"}' } });
    expect(isPlanEmpty(planAt(store, pki, T0 + minutes(1)))).toBe(true);
    store.setServices('a', [{ name: 'p', rotateRequest: '2026-01-03' }, { name: 'q' }]);
    expect(planAt(store, pki, T0 + minutes(1)).leaves.map((l) => l.reason)).toEqual(['forced']);
  });

  it('a tampered or oversized acknowledgement counts as empty: the request is performed once more, not an error', async () => {
    store.setServices('a', [{ name: 'p', rotateRequest: 't' }, { name: 'q' }]);
    const secret = store.get(A)!;
    store.put(A, { ...secret, annotations: { ...secret.annotations, [ACK]: `{"p":"${'t'.repeat(300_000)}"}` } });
    expect(planAt(store, pki, T0 + minutes(1)).leaves.map((l) => l.reason)).toEqual(['forced']);
  });
});

/** `count` Services with 63-character names. */
const longServices = (count: number, prefix = 's'): { name: string }[] =>
  Array.from({ length: count }, (_, i) => ({ name: `${prefix}${String(i).padStart(5, '0')}`.padEnd(63, 'x') }));

describe('a namespace certificate is bounded in size', () => {
  const ns = 'n'.repeat(63);

  it('names that would cross the bound are refused, the ones that fit are served, and the leaf stays under the bound', async () => {
    store.setServices(ns, longServices(600));
    const { plan } = await reconcile(store, pki, T0 + minutes(1));
    const leaf = plan.leaves.find((l) => typeof l.target === 'object' && l.target.namespace === ns)!;
    const refused = plan.refused.filter((r) => r.reason === 'certificate_too_large');
    expect(leaf.services.length + refused.length).toBe(600);
    expect(refused.length).toBeGreaterThan(0);
    expect(dnsNamesBytes(leaf.dnsNames)).toBeLessThanOrEqual(MAX_DNS_NAME_BYTES);
    expect(refused[0]!.message).toContain(`over the limit of ${MAX_DNS_NAME_BYTES}`);
    const der = store.get({ namespace: ns })!.data['tls.crt'];
    expect(pki.cache.parse(String(der)).der.length).toBeLessThanOrEqual(MAX_SERVER_CERTIFICATE_BYTES);
  });

  it('a new Service never pushes out a served one: renewals and forced rotations keep the set that fitted', async () => {
    store.setServices(ns, longServices(200, 'm'));
    const first = (await reconcile(store, pki, T0 + minutes(1))).plan;
    const served = first.leaves.find((l) => typeof l.target === 'object' && l.target.namespace === ns)!.services;
    // An earlier name in sort order arrives, with a rotation request on a served Service.
    const newcomer = { name: 'a'.repeat(63) };
    store.setServices(ns, [newcomer, ...longServices(200, 'm').map((s, i) => (i === 0 ? { ...s, rotateRequest: 'now' } : s))]);
    const plan = planAt(store, pki, T0 + minutes(2));
    const leaf = plan.leaves.find((l) => typeof l.target === 'object' && l.target.namespace === ns);
    expect(leaf?.reason).toBe('forced');
    expect(leaf?.services).toEqual(served);
    expect(plan.refused.map((r) => r.service)).toContain(newcomer.name);
  });

  it('fitServiceNames: served first, then by name, each while the names fit', () => {
    const services = ['c', 'b', 'a'].map((name) => ({ namespace: 'x', name }));
    const one = dnsNamesBytes(namespaceDnsNames([{ namespace: 'x', name: 'a' }], 'cluster.local'));
    const served = namespaceDnsNames([{ namespace: 'x', name: 'c' }], 'cluster.local');
    const fit = fitServiceNames(services, served, 'cluster.local', 2 * one);
    expect(fit.fitted.map((s) => s.name)).toEqual(['c', 'b']);
    expect(fit.refused.map((r) => r.service.name)).toEqual(['a']);
    expect(fit.bytes).toBe(2 * one);
    expect(fit.dnsNames).toEqual(namespaceDnsNames(fit.fitted, 'cluster.local'));
  });

  it('issueServerLeaf refuses names over the bound', async () => {
    const { certificate, privateKeyPem } = await pki.ca(T0);
    const names = namespaceDnsNames(
      longServices(600).map((s) => ({ namespace: ns, name: s.name })),
      'cluster.local',
    );
    await expect(pki.server({ certificate, privateKeyPem }, T0, names)).rejects.toThrow(/over the limit of/);
  });
});
