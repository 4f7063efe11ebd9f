import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { MemoryStore, days, isPlanEmpty, minutes } from '@eso-mtls/core';
import { renewalTime } from '../../src/policy/rules.js';
import { Pki, T0, convergedCluster, describeWrites, planAt, reconcile, text } from '../support/planner.js';

describe('planRotation: convergence', () => {
  it('labelled Services get a CA, one server Secret per namespace with the SAN union, and a client Secret', async () => {
    const pki = new Pki();
    const store = new MemoryStore();
    store.setServices('team-a', [{ name: 'vault' }, { name: 'aws' }]);
    store.setServices('team-b', [{ name: 'gcp' }]);
    const { writes } = await reconcile(store, pki, T0);
    expect(describeWrites(writes)).toEqual(['ca:create', 'client:initial', 'namespace/team-a:initial', 'namespace/team-b:initial']);

    const ca = new X509Certificate(text(store.get('ca'), 'ca.crt'));
    const a = new X509Certificate(text(store.get({ namespace: 'team-a' }), 'tls.crt'));
    expect(a.checkIssued(ca)).toBe(true);
    expect(a.verify(ca.publicKey)).toBe(true);
    const sans = [
      'aws',
      'aws.team-a',
      'aws.team-a.svc',
      'aws.team-a.svc.cluster.local',
      'vault',
      'vault.team-a',
      'vault.team-a.svc',
      'vault.team-a.svc.cluster.local',
    ];
    expect(a.subjectAltName).toBe(sans.map((n) => `DNS:${n}`).join(', '));
    for (const name of sans) expect(a.checkHost(name)).toBe(name);
    const client = new X509Certificate(text(store.get('client'), 'tls.crt'));
    expect(client.subjectAltName).toBe('URI:spiffe://cluster.local/ns/external-secrets-system/sa/external-secrets');
    expect(client.checkIssued(ca)).toBe(true);
    // Every leaf Secret carries the expected bundle; the CA key stays in the CA Secret.
    for (const target of ['client', { namespace: 'team-a' }, { namespace: 'team-b' }] as const) {
      expect(text(store.get(target), 'ca.crt')).toBe(ca.toString());
      expect(Object.keys(store.get(target)!.data).sort()).toEqual(['ca.crt', 'tls.crt', 'tls.key']);
    }
    expect(isPlanEmpty(planAt(store, pki, T0))).toBe(true);
  });

  it('nextDueAt is the earliest renewal time, and the next plan at that instant renews exactly that leaf', async () => {
    const { pki, store } = await convergedCluster({ a: [{ name: 'p' }], b: [{ name: 'p' }], c: [{ name: 'p' }] });
    const idle = planAt(store, pki, T0 + minutes(10));
    const renewals = (['client', { namespace: 'a' }, { namespace: 'b' }, { namespace: 'c' }] as const).map((t) =>
      renewalTime(pki.cache.parse(text(store.get(t), 'tls.crt')), pki.policy),
    );
    expect(idle.nextDueAt).toBe(Math.min(...renewals));
    expect(isPlanEmpty(planAt(store, pki, idle.nextDueAt! - 1))).toBe(true);
    const due = planAt(store, pki, idle.nextDueAt!);
    expect(due.leaves.map((l) => l.reason)).toEqual(['expiring']);
    expect(due.ca).toBeUndefined();
  });

  it('reports the notAfter of what is in use, for metrics', async () => {
    const { pki, store } = await convergedCluster({ a: [{ name: 'p' }, { name: 'q' }] });
    const { status } = planAt(store, pki, T0 + days(1));
    expect(status.ca.active).toBe(pki.cache.parse(text(store.get('ca'), 'ca.crt')).notAfter);
    expect(status.client).toBe(T0 + days(90));
    expect(status.namespaces).toEqual([{ namespace: 'a', services: ['p', 'q'], notAfter: T0 + days(90) }]);
  });
});

describe('planRotation: Services', () => {
  it('a Service losing its label re-issues at once without its names (dns_changed)', async () => {
    const { pki, store } = await convergedCluster({ a: [{ name: 'p' }, { name: 'q' }] });
    store.setServices('a', [{ name: 'q' }]);
    const { plan } = await reconcile(store, pki, T0 + minutes(1));
    expect(plan.leaves).toMatchObject([{ target: { namespace: 'a' }, reason: 'dns_changed', dnsNames: ['q', 'q.a', 'q.a.svc', 'q.a.svc.cluster.local'] }]);
    expect(new X509Certificate(text(store.get({ namespace: 'a' }), 'tls.crt')).subjectAltName).not.toContain('DNS:p');
  });

  it('a namespace whose last Service is gone is left alone: no renewal, no bundle update', async () => {
    const { pki, store } = await convergedCluster({ a: [{ name: 'p' }], b: [{ name: 'p' }] });
    store.setServices('b', []);
    const before = store.get({ namespace: 'b' });
    const late = planAt(store, pki, T0 + days(80));
    expect(late.leaves.map((l) => l.target)).toEqual(['client', { namespace: 'a' }]);
    expect(late.status.namespaces.map((n) => n.namespace)).toEqual(['a']);
    await reconcile(store, pki, T0 + days(80));
    expect(store.get({ namespace: 'b' })).toBe(before);
  });

  it('a Service name that cannot be a DNS SAN is a conflict; the rest of the plan goes on', async () => {
    const pki = new Pki();
    const store = new MemoryStore();
    store.setServices('a', [{ name: 'Bad_Name' }, { name: 'good' }]);
    store.setServices('b', [{ name: 'x'.repeat(64) }]);
    store.setServices('c', [{ name: 'fine' }]);
    const { plan } = await reconcile(store, pki, T0);
    expect(plan.conflicts.map((c) => [c.target, c.services])).toEqual([
      [{ namespace: 'a' }, ['Bad_Name']],
      [{ namespace: 'b' }, ['x'.repeat(64)]],
    ]);
    expect(plan.conflicts[0]!.message).toContain('"Bad_Name"');
    expect(plan.leaves.map((l) => [l.target, l.dnsNames[0]])).toEqual([
      ['client', undefined],
      [{ namespace: 'a' }, 'good'],
      [{ namespace: 'c' }, 'fine'],
    ]);
  });
});

describe('planRotation: ownership', () => {
  it('a foreign Secret is never written and is reported with its Services', async () => {
    const pki = new Pki();
    const store = new MemoryStore();
    store.setServices('a', [{ name: 'p' }]);
    const foreign = store.put({ namespace: 'a' }, { data: { 'tls.crt': 'theirs' }, ownership: 'foreign', annotations: {} });
    const { plan } = await reconcile(store, pki, T0);
    expect(plan.conflicts).toMatchObject([{ target: { namespace: 'a' }, services: ['p'] }]);
    expect(plan.leaves.map((l) => l.target)).toEqual(['client']);
    expect(store.get({ namespace: 'a' })).toBe(foreign);
  });

  it('an empty placeholder is adopted at its version (initial), keeping nothing of it but the object', async () => {
    const pki = new Pki();
    const store = new MemoryStore();
    store.setServices('a', [{ name: 'p' }]);
    const placeholder = store.put(
      { namespace: 'a' },
      { data: { 'tls.crt': '', 'tls.key': '', 'ca.crt': '' }, ownership: 'placeholder', annotations: { chart: 'x' } },
    );
    const { plan } = await reconcile(store, pki, T0);
    expect(plan.leaves[1]).toMatchObject({ target: { namespace: 'a' }, reason: 'initial', create: false, base: placeholder.version });
    expect(store.get({ namespace: 'a' })).toMatchObject({ ownership: 'managed', annotations: { chart: 'x' } });
  });

  it('a foreign client Secret: conflict, and no CA is ever recovered from it', async () => {
    const pki = new Pki();
    const store = new MemoryStore();
    const other = await pki.ca(T0, 'planted');
    store.put('client', { data: { 'ca.crt': other.certificate.pem }, ownership: 'foreign', annotations: {} });
    const plan = planAt(store, pki, T0);
    expect(plan.conflicts).toMatchObject([{ target: 'client' }]);
    expect(plan.ca?.phases).toEqual(['create']);
    expect(plan.trust.retired).toEqual([]);
  });
});
