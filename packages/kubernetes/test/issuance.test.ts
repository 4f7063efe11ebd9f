import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { PROVIDER_LABEL } from '@eso-mtls/core';
import { ControllerMetrics } from '@eso-mtls/metrics';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { COMPONENT_LABEL, INSTALLATION_ANNOTATION, MANAGED_BY_LABEL } from '../src/index.js';
import { type RecordingAdapter, TestCluster, converge, startAdapter } from '@eso-mtls/test-kit/adapter';
import { certificates, text } from '@eso-mtls/test-kit/secrets';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { RecordingLogger } from '@eso-mtls/test-kit/logger';
import { handshake } from './support/tls.js';

const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const ESO = 'eso-issuance';

let plane: ControlPlane;
let cluster: TestCluster;
let run: RecordingAdapter;
const logger = new RecordingLogger();

beforeAll(async () => {
  plane = await startControlPlane({ identities: [{ name: 'eso-adapter', groups: ['system:masters'] }], audit: true });
  cluster = new TestCluster(plane);
  await cluster.namespace(ESO);
  run = await startAdapter(plane.kubeconfigFor('eso-adapter'), ESO, { logger });
}, 120_000);

afterAll(async () => {
  await run?.adapter.stop();
  await plane?.stop();
});

describe('issuing on the real apiserver', () => {
  it('labelling a Service produces the CA Secret, a provider Secret with the four SANs, and a client Secret', async () => {
    const ns = await cluster.namespace('iss-single');
    await cluster.labelledService(ns, 'vault');
    const provider = await eventually(async () => (await cluster.secret(ns)) ?? false);
    const caSecret = await eventually(async () => (await cluster.secret(ESO, 'eso-provider-ca-internal')) ?? false);
    const client = await eventually(async () => (await cluster.secret(ESO, 'eso-provider-client-tls')) ?? false);

    expect(caSecret.type).toBe('Opaque');
    const ca = new X509Certificate(text(caSecret, 'ca.crt'));
    expect(ca.ca).toBe(true);
    expect(ca.checkIssued(ca)).toBe(true);
    expect(ca.checkPrivateKey(createPrivateKey(text(caSecret, 'ca.key')))).toBe(true);

    expect(provider.type).toBe('kubernetes.io/tls');
    expect(provider.metadata?.labels).toMatchObject({ [MANAGED_BY_LABEL]: 'eso-mtls', [COMPONENT_LABEL]: 'provider-tls' });
    expect(provider.metadata?.annotations?.[INSTALLATION_ANNOTATION]).toBe(`${ESO}/eso-provider-ca-internal`);
    const leaf = new X509Certificate(text(provider, 'tls.crt'));
    const sans = ['vault', 'vault.iss-single', 'vault.iss-single.svc', 'vault.iss-single.svc.cluster.local'];
    expect(leaf.subjectAltName).toBe(sans.map((n) => `DNS:${n}`).join(', '));
    for (const name of sans) expect(leaf.checkHost(name)).toBe(name);
    expect(leaf.checkHost('vault.other.svc')).toBeUndefined();
    expect(leaf.ca).toBe(false);
    expect(leaf.keyUsage).toEqual([SERVER_AUTH]);
    expect(leaf.checkIssued(ca)).toBe(true);
    expect(leaf.verify(ca.publicKey)).toBe(true);
    expect(leaf.checkPrivateKey(createPrivateKey(text(provider, 'tls.key')))).toBe(true);
    expect(certificates(text(provider, 'ca.crt')).map((c) => c.fingerprint256)).toEqual([ca.fingerprint256]);

    expect(client.type).toBe('kubernetes.io/tls');
    expect(client.metadata?.labels?.[COMPONENT_LABEL]).toBe('client-tls');
    const clientLeaf = new X509Certificate(text(client, 'tls.crt'));
    expect(clientLeaf.subject).toBe('CN=external-secrets-core');
    expect(clientLeaf.subjectAltName).toBe(`URI:spiffe://cluster.local/ns/${ESO}/sa/external-secrets`);
    expect(clientLeaf.keyUsage).toEqual([CLIENT_AUTH]);
    expect(clientLeaf.verify(ca.publicKey)).toBe(true);
    expect(clientLeaf.checkPrivateKey(createPrivateKey(text(client, 'tls.key')))).toBe(true);

    // The two Secrets work together: a mutual TLS handshake with each side trusting its ca.crt.
    const reply = await handshake(
      { key: text(provider, 'tls.key'), cert: text(provider, 'tls.crt'), ca: text(provider, 'ca.crt') },
      { key: text(client, 'tls.key'), cert: text(client, 'tls.crt'), ca: text(client, 'ca.crt') },
      'vault.iss-single.svc',
    );
    expect(reply).toBe('ok');

    await eventually(() => expect(run.rotations).toContainEqual({ namespace: ns, services: ['vault'], reason: 'initial' }));
    await run.adapter.flushEvents();
    const events = await cluster.events(ns, 'vault');
    expect(events).toContainEqual(expect.objectContaining({ reason: 'Issued', type: 'Normal', message: expect.stringContaining('reason: initial') }));
  });

  it('gives two labelled Services in one namespace one Secret covering both, and re-issues without a Service that loses its label', async () => {
    const ns = await cluster.namespace('iss-pair');
    await cluster.labelledService(ns, 'alpha');
    await cluster.labelledService(ns, 'beta');
    const both = ['alpha', 'beta'].flatMap((s) => [s, `${s}.${ns}`, `${s}.${ns}.svc`, `${s}.${ns}.svc.cluster.local`]).sort();
    await eventually(async () => {
      const leaf = new X509Certificate(text(await cluster.secret(ns), 'tls.crt'));
      expect(leaf.subjectAltName).toBe(both.map((n) => `DNS:${n}`).join(', '));
    });
    await converge(run.adapter);
    const secrets = (await cluster.allSecrets()).filter((s) => s.metadata?.namespace === ns);
    expect(secrets).toHaveLength(1);

    await cluster.patchService(ns, 'beta', (labels) => delete labels[PROVIDER_LABEL]);
    await eventually(async () => {
      const leaf = new X509Certificate(text(await cluster.secret(ns), 'tls.crt'));
      expect(leaf.subjectAltName).toBe(`DNS:alpha, DNS:alpha.${ns}, DNS:alpha.${ns}.svc, DNS:alpha.${ns}.svc.cluster.local`);
    });
    // The Secret can be read back before the adapter's write hook has run: wait for the hook too.
    await eventually(() => expect(run.reasonsFor(`namespace/${ns}`).at(-1)).toBe('dns_changed'));
    await run.adapter.flushEvents();
    expect(await cluster.events(ns, 'alpha')).toContainEqual(
      expect.objectContaining({ reason: 'Rotated', message: expect.stringContaining('reason: dns_changed') }),
    );
  });

  it('re-issues without a deleted Service, and leaves the Secret alone once the last labelled Service is gone', async () => {
    const ns = await cluster.namespace('iss-delete');
    await cluster.labelledService(ns, 'one');
    await cluster.labelledService(ns, 'two');
    await eventually(async () => expect(new X509Certificate(text(await cluster.secret(ns), 'tls.crt')).subjectAltName).toContain('DNS:two'));
    await converge(run.adapter);

    await cluster.deleteService(ns, 'two');
    await eventually(async () => expect(new X509Certificate(text(await cluster.secret(ns), 'tls.crt')).subjectAltName).not.toContain('DNS:two'));
    await eventually(() => expect(run.reasonsFor(`namespace/${ns}`).at(-1)).toBe('dns_changed'));
    await converge(run.adapter);

    const before = await cluster.secret(ns);
    const writes = run.writes.length;
    await cluster.deleteService(ns, 'one');
    await new Promise((r) => setTimeout(r, 300)); // let the watch deliver the deletion
    await converge(run.adapter);
    const after = await cluster.secret(ns);
    expect(after?.metadata?.resourceVersion).toBe(before?.metadata?.resourceVersion);
    expect(run.writes.slice(writes).filter((w) => w.target === `namespace/${ns}`)).toEqual([]);
  });

  it('leaves an unmanaged external-secrets-provider-tls byte-for-byte and reports the conflict', async () => {
    const ns = await cluster.namespace('iss-foreign');
    const original = { 'tls.crt': Buffer.from('not ours').toString('base64'), extra: Buffer.from([0, 1, 2, 255]).toString('base64') };
    await cluster.core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: 'external-secrets-provider-tls', labels: { team: 'x' } },
        type: 'Opaque',
        data: original,
      },
    });
    const before = await cluster.secret(ns);
    await cluster.labelledService(ns, 'svc-a');
    await cluster.labelledService(ns, 'svc-b');
    await eventually(() => run.failures.some((f) => f.namespace === ns && f.services.length === 2));
    await converge(run.adapter);

    const after = await cluster.secret(ns);
    expect(after?.metadata?.resourceVersion).toBe(before?.metadata?.resourceVersion);
    expect(after?.data).toEqual(original);
    expect(after?.metadata?.labels).toEqual({ team: 'x' });
    expect(logger.text()).toMatch(
      new RegExp(`warn conflict: namespace ${ns}: Secret external-secrets-provider-tls exists but was not written by this installation`),
    );
    await run.adapter.flushEvents();
    for (const svc of ['svc-a', 'svc-b']) {
      expect(await cluster.events(ns, svc)).toContainEqual(expect.objectContaining({ reason: 'Conflict', type: 'Warning' }));
    }
    expect(run.writes.filter((w) => w.target === `namespace/${ns}`)).toEqual([]);
  });

  it('adopts an empty placeholder Secret, keeping its type', async () => {
    const ns = await cluster.namespace('iss-placeholder');
    await cluster.core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: 'external-secrets-provider-tls', labels: { 'helm.sh/chart': 'provider-1.0' } },
        type: 'Opaque',
        data: { 'tls.crt': '', 'tls.key': '', 'ca.crt': '' },
      },
    });
    await cluster.labelledService(ns, 'held');
    const adopted = await eventually(async () => {
      const s = await cluster.secret(ns);
      return text(s, 'tls.crt').includes('BEGIN CERTIFICATE') ? s! : false;
    });
    expect(adopted.type).toBe('Opaque');
    expect(adopted.metadata?.labels).toMatchObject({ 'helm.sh/chart': 'provider-1.0', [MANAGED_BY_LABEL]: 'eso-mtls' });
    expect(new X509Certificate(text(adopted, 'tls.crt')).checkHost(`held.${ns}.svc`)).toBe(`held.${ns}.svc`);
    expect(run.reasonsFor(`namespace/${ns}`)).toEqual(['initial']);
  });

  it('exposes certificate expiry to @eso-mtls/metrics through its status view', async () => {
    await converge(run.adapter);
    const metrics = new ControllerMetrics({ now: Date.now, source: run.adapter.status });
    const scrape = await metrics.registry.metrics();
    const leaf = new X509Certificate(text(await cluster.secret('iss-single'), 'tls.crt'));
    const line = scrape
      .split('\n')
      .find((l) => l.includes('namespace="iss-single"') && l.includes('service="vault"') && !l.startsWith('#') && l.includes('expiry'));
    expect(line).toBeDefined();
    const seconds = Number(line!.split(' ').at(-1));
    expect(Math.abs(seconds - (Date.parse(leaf.validTo) - Date.now()) / 1000)).toBeLessThan(60);
    expect(scrape).toMatch(/state="active"/);
    // The gauge showed the new certificate the moment it was written, not one plan later.
    const atWrite = run.shownAtWrite.filter((w) => w.namespace === 'iss-single');
    expect(atWrite.length).toBeGreaterThan(0);
    for (const w of atWrite) expect(w.shown).toBe(w.written);
    // ...and so did the CA that signed it, even for the very first leaf of an empty cluster.
    const firstLeaf = run.shownAtWrite[0]!;
    const ca = new X509Certificate(text(await cluster.secret(ESO, 'eso-provider-ca-internal'), 'ca.crt'));
    expect(Math.abs(firstLeaf.activeCa! - Date.parse(ca.validTo))).toBeLessThan(1000);
    expect(Math.abs(atWrite.at(-1)!.written! - Date.parse(leaf.validTo))).toBeLessThan(1000);
    // Services in conflict are listed without a certificate, so alerts can see them.
    expect([...run.adapter.status.providerCertificates()]).toContainEqual({ namespace: 'iss-foreign', service: 'svc-a', notAfter: undefined });
  });

  it('writes only its three Secret names, never deletes, and keeps the CA and client keys inside the ESO namespace', async () => {
    await converge(run.adapter);
    expect(logger.lines.filter((l) => l.level === 'error')).toEqual([]);
    const audit = plane.auditEvents().filter((e) => e.user.username === 'eso-adapter' && e.objectRef?.resource === 'secrets');
    const writes = audit.filter((e) => ['create', 'update', 'patch', 'delete'].includes(e.verb));
    expect(writes.length).toBeGreaterThan(0);
    expect(audit.filter((e) => e.verb === 'delete' || e.verb === 'deletecollection')).toEqual([]);
    for (const e of writes) {
      const name = e.objectRef?.name;
      const ok =
        name === 'external-secrets-provider-tls' ||
        (['eso-provider-ca-internal', 'eso-provider-client-tls'].includes(name ?? '') && e.objectRef?.namespace === ESO);
      expect({ ok, verb: e.verb, name, ns: e.objectRef?.namespace }).toMatchObject({ ok: true });
    }

    const all = await cluster.allSecrets();
    const esoNamespaces = new Set([ESO]);
    const caKeys = all
      .filter((s) => s.metadata?.labels?.[COMPONENT_LABEL] === 'ca')
      .flatMap((s) => [text(s, 'ca.key'), text(s, 'next.key')])
      .filter(Boolean);
    const clientKeys = all.filter((s) => s.metadata?.labels?.[COMPONENT_LABEL] === 'client-tls').map((s) => text(s, 'tls.key'));
    expect(caKeys).toHaveLength(1);
    expect(clientKeys).toHaveLength(1);
    for (const s of all) {
      const namespace = s.metadata?.namespace ?? '';
      const name = s.metadata?.name;
      expect(['eso-provider-ca-internal', 'eso-provider-client-tls'].includes(name ?? '') && !esoNamespaces.has(namespace)).toBe(false);
      if (esoNamespaces.has(namespace)) continue;
      const blob = Object.values(s.data ?? {})
        .map((v) => Buffer.from(v, 'base64').toString('latin1'))
        .join('\n');
      for (const key of [...caKeys, ...clientKeys]) expect(blob.includes(key.trim())).toBe(false);
      // A provider Secret holds one private key: its own, matching its own certificate.
      if (s.metadata?.labels?.[MANAGED_BY_LABEL] === 'eso-mtls') {
        expect(blob.match(/BEGIN PRIVATE KEY/g)).toHaveLength(1);
        expect(new X509Certificate(text(s, 'tls.crt')).checkPrivateKey(createPrivateKey(text(s, 'tls.key')))).toBe(true);
      }
    }
  });
});
