// Every failure an operator must see: a leaf that cannot be signed, a CA that cannot be signed, and
// leaves that wait for a recovered CA. Each moves its counter (replayed through promtool and the
// shipped alert rules), records Warning Events, and is logged with namespace and service, once.
import { afterEach, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { ROTATE_ANNOTATION, minutes } from '@eso-mtls/core';
import { ControllerMetrics } from '@eso-mtls/metrics';
import { type AdapterOptions, ProviderCertificateAdapter } from '../src/index.js';
import { converge } from '@eso-mtls/test-kit/adapter';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { text } from '@eso-mtls/test-kit/secrets';
import { FailingCrypto } from './support/failing-crypto.js';
import { useInstallations } from '@eso-mtls/test-kit/installations';
import { controllerLike as wiredAdapter } from '@eso-mtls/test-kit/controller-like';

const CA_SECRET = 'eso-provider-ca-internal';
const suite = useInstallations();
const running: ProviderCertificateAdapter[] = [];
afterEach(async () => {
  for (const adapter of running.splice(0)) await adapter.stop();
});

const controllerLike = (eso: string, options: Omit<Partial<AdapterOptions>, 'hooks'>) => wiredAdapter(suite.plane.adminKubeConfig, eso, options, running);

async function counterValue(metrics: ControllerMetrics, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = await metrics.registry.getSingleMetric(name)!.get();
  const match = metric.values.find((v) => Object.entries(labels).every(([k, value]) => v.labels[k] === value));
  return match?.value ?? 0;
}

const serial = async (ns: string): Promise<string> => new X509Certificate(text(await suite.cluster.secret(ns), 'tls.crt')).serialNumber;

describe('a signer that fails for one namespace', () => {
  it("counts, records and logs the failure on each of that namespace's Services, fires the alert, and the others converge", async () => {
    const eso = await suite.cluster.namespace('eso-fa-leaf');
    for (const [ns, svc] of [
      ['fa-good', 'provider'],
      ['fa-bad', 'provider'],
      ['fa-bad', 'second'],
    ] as const) {
      await suite.cluster.namespace(ns);
      await suite.cluster.labelledService(ns, svc);
      suite.deleteAfterTest(ns, svc);
    }
    const crypto = new FailingCrypto();
    const { adapter, metrics, logger, scrapes } = await controllerLike(eso, { crypto });
    await adapter.start();
    await eventually(async () => expect(text(await suite.cluster.secret('fa-bad'), 'tls.crt')).toContain('BEGIN CERTIFICATE'));
    await converge(adapter);
    for (let i = 0; i < 3; i++) await scrapes.scrape();
    const goodBefore = await serial('fa-good');
    const badBefore = await serial('fa-bad');

    crypto.failNamespaces.add('fa-bad');
    for (const ns of ['fa-good', 'fa-bad']) await suite.cluster.patchService(ns, 'provider', (_, a) => (a[ROTATE_ANNOTATION] = 'ticket-1'));
    const failures = 'eso_provider_certificate_rotation_failures_total';
    await eventually(async () => expect(await counterValue(metrics, failures, { namespace: 'fa-bad', service: 'second' })).toBeGreaterThan(0));
    await eventually(async () => expect(await serial('fa-good')).not.toBe(goodBefore));
    for (let i = 0; i < 3; i++) await scrapes.scrape();

    expect(await counterValue(metrics, failures, { namespace: 'fa-bad', service: 'provider' })).toBeGreaterThan(0);
    expect(await counterValue(metrics, failures, { namespace: 'fa-good', service: 'provider' })).toBe(0);
    expect(await serial('fa-bad')).toBe(badBefore);
    await adapter.flushEvents();
    for (const svc of ['provider', 'second']) {
      expect(await suite.cluster.events('fa-bad', svc)).toContainEqual(
        expect.objectContaining({
          type: 'Warning',
          reason: 'Failed',
          message: expect.stringContaining('HSM refused to sign for fa-bad (test fault)'),
        }),
      );
    }
    expect((await suite.cluster.events('fa-good', 'provider')).filter((e) => e.type === 'Warning')).toEqual([]);
    const lines = logger.lines.filter((l) => l.message === 'issuing a certificate failed');
    // One line per failure of the namespace's Secret, naming how many Services and which (the requester first).
    expect(new Set(lines.map((l) => JSON.stringify([l.fields.namespace, l.fields.services, l.fields.sample])))).toEqual(
      new Set([JSON.stringify(['fa-bad', 2, ['provider', 'second']])]),
    );
    expect(lines[0]!.fields).toMatchObject({ target: 'namespace/fa-bad', reason: 'forced', error: expect.stringContaining('test fault') });

    const r = scrapes.expectFiring('EsoProviderCertificateRotationFailed', [
      { namespace: 'fa-bad', service: 'provider' },
      { namespace: 'fa-bad', service: 'second' },
    ]);
    expect([r.status, r.stdout + r.stderr]).toEqual([0, expect.stringContaining('SUCCESS')]);

    // Fixed: the next retry issues it.
    crypto.failNamespaces.clear();
    await eventually(async () => expect(await serial('fa-bad')).not.toBe(badBefore));
  });
});

describe('a signer that fails for the CA', () => {
  it('counts each failure, records a Warning Event on the CA Secret, fires the CA alert, and issues once it is fixed', async () => {
    const eso = await suite.cluster.namespace('eso-fa-ca');
    await suite.cluster.namespace('fa-ca');
    await suite.cluster.labelledService('fa-ca', 'provider');
    suite.deleteAfterTest('fa-ca', 'provider');
    const crypto = new FailingCrypto();
    crypto.failCa = true;
    const { adapter, metrics, logger, scrapes } = await controllerLike(eso, { crypto });
    for (let i = 0; i < 3; i++) await scrapes.scrape(); // the counter is exported at 0 before anything runs
    await adapter.start();
    const caFailures = 'eso_ca_certificate_rotation_failures_total';
    await eventually(async () => expect(await counterValue(metrics, caFailures)).toBeGreaterThan(1));
    for (let i = 0; i < 3; i++) await scrapes.scrape();

    expect(await suite.cluster.secret('fa-ca')).toBeUndefined();
    await adapter.flushEvents();
    const events = await suite.plane.adminKubeConfig
      .makeApiClient((await import('@kubernetes/client-node')).CoreV1Api)
      .listNamespacedEvent({ namespace: eso, fieldSelector: `involvedObject.kind=Secret,involvedObject.name=${CA_SECRET}` });
    expect(events.items.map((e) => [e.type, e.reason, e.message])).toContainEqual([
      'Warning',
      'Failed',
      expect.stringContaining('HSM refused to sign a CA (test fault)'),
    ]);
    const caLines = logger.lines.filter((l) => l.message === 'generating or signing the CA failed');
    expect(caLines.length).toBeGreaterThan(1); // one per failure
    expect(caLines[0]!.fields).toMatchObject({ target: 'ca', secret: `${eso}/${CA_SECRET}`, error: expect.stringContaining('test fault') });
    // The reconciler's own line is not repeated on every retry.
    expect(logger.lines.filter((l) => l.message === 'reconcile failed; retrying with backoff')).toHaveLength(1);

    const r = scrapes.expectFiring('EsoCaCertificateRotationFailed', [{}]);
    expect([r.status, r.stdout + r.stderr]).toEqual([0, expect.stringContaining('SUCCESS')]);

    crypto.failCa = false;
    await adapter.reconcileNow();
    await eventually(async () => expect(text(await suite.cluster.secret('fa-ca'), 'tls.crt')).toContain('BEGIN CERTIFICATE'));
    expect(logger.lines.filter((l) => l.message === 'reconcile succeeded again')).toHaveLength(1);
  });
});

describe('leaves waiting for a recovered CA', () => {
  it('are reported once per Service with an Event saying until when, however many rounds run, and the pause is a gauge', async () => {
    const eso = await suite.cluster.namespace('eso-fa-wait');
    await suite.cluster.namespace('fw-a');
    await suite.cluster.labelledService('fw-a', 'provider');
    suite.deleteAfterTest('fw-a', 'provider');
    const { adapter, metrics, logger, clock } = await controllerLike(eso, {});
    await adapter.start();
    await eventually(async () => expect(text(await suite.cluster.secret('fw-a'), 'tls.crt')).toContain('BEGIN CERTIFICATE'));
    await converge(adapter);

    // A recovery: the new CA may sign only once every bundle has held it for the propagation delay.
    await suite.cluster.deleteSecret(eso, CA_SECRET);
    await eventually(async () => expect(text(await suite.cluster.secret(eso, CA_SECRET), 'next.crt')).toContain('BEGIN CERTIFICATE'));
    await converge(adapter);
    await suite.cluster.deleteSecret('fw-a');
    await suite.cluster.namespace('fw-b');
    await suite.cluster.labelledService('fw-b', 'provider');
    suite.deleteAfterTest('fw-b', 'provider');
    // The client's leaf waits too (it chains to the CA that was deleted).
    await eventually(() =>
      expect(adapter.lastRound?.plan.waiting.map((w) => JSON.stringify(w.target)).sort()).toEqual([
        JSON.stringify('client'),
        JSON.stringify({ namespace: 'fw-a' }),
        JSON.stringify({ namespace: 'fw-b' }),
      ]),
    );
    await adapter.flushEvents();
    const waitingLines = () => logger.lines.filter((l) => l.message.startsWith('waiting for the new CA'));
    const linesBefore = waitingLines().length;
    const eventsBefore = await Promise.all(['fw-a', 'fw-b'].map((ns) => suite.cluster.events(ns, 'provider')));
    for (let i = 0; i < 20; i++) await adapter.reconcileNow();
    await adapter.flushEvents();

    // Twenty more rounds of the same wait: not one more line or Event.
    expect(waitingLines()).toHaveLength(linesBefore);
    const eventsAfter = await Promise.all(['fw-a', 'fw-b'].map((ns) => suite.cluster.events(ns, 'provider')));
    expect(eventsAfter).toEqual(eventsBefore);

    const until = adapter.status.signingPausedUntil();
    expect(until).toBeGreaterThan(clock.now());
    const untilText = new Date(Math.floor(until! / 1000) * 1000).toISOString().replace('.000Z', 'Z');
    // The latest line of each waiting Service names its current reason and the time signing resumes.
    const latest = (ns: string) =>
      waitingLines()
        .filter((l) => l.fields.namespace === ns)
        .at(-1)?.fields;
    expect(latest('fw-a')).toMatchObject({ service: 'provider', reason: 'secret_missing', until: untilText });
    expect(latest('fw-b')).toMatchObject({ service: 'provider', reason: 'initial', until: untilText });
    expect(waitingLines().filter((l) => l.fields.target === 'client')).toHaveLength(1);
    for (const events of eventsAfter) {
      const waiting = events.filter((e) => e.reason === 'WaitingForCA');
      expect(waiting.length).toBeGreaterThan(0);
      for (const e of waiting) expect(e).toMatchObject({ type: 'Warning', count: 1, message: expect.stringContaining(`no CA signs until ${untilText}`) });
    }
    expect(eventsAfter[1]!.filter((e) => e.reason === 'WaitingForCA')).toHaveLength(1); // fw-b waited for one reason only
    expect(await metrics.registry.metrics()).toContain(`eso_ca_signing_paused_until_timestamp_seconds ${until! / 1000}`);

    // The wait ends: both are issued, and the gauge is gone.
    clock.advance(minutes(6));
    await converge(adapter);
    for (const ns of ['fw-a', 'fw-b']) expect(text(await suite.cluster.secret(ns), 'tls.crt')).toContain('BEGIN CERTIFICATE');
    expect(await metrics.registry.metrics()).not.toMatch(/^eso_ca_signing_paused_until_timestamp_seconds /m);
  });
});

describe('a provider namespace being deleted', () => {
  it('is skipped and logged once, with no failure counted, recorded or alerted; the others are served, and it is again once it comes back', async () => {
    const eso = await suite.cluster.namespace('eso-fa-term');
    for (const ns of ['fa-term-ok', 'fa-term-gone']) {
      await suite.cluster.namespace(ns);
      await suite.cluster.labelledService(ns, 'provider');
      suite.deleteAfterTest(ns, 'provider');
    }
    // No namespace controller runs here: the deleted namespace keeps its `kubernetes` finalizer and
    // its Service, and stays Terminating, as a namespace held by a finalizer does in a real cluster.
    const core = suite.cluster.core;
    expect((await core.readNamespace({ name: 'fa-term-gone' })).spec?.finalizers).toEqual(['kubernetes']);
    await core.deleteNamespace({ name: 'fa-term-gone' });
    expect((await core.readNamespace({ name: 'fa-term-gone' })).status?.phase).toBe('Terminating');

    const { adapter, metrics, logger, scrapes } = await controllerLike(eso, {});
    for (let i = 0; i < 3; i++) await scrapes.scrape(); // the counters are exported at 0 before anything runs
    await adapter.start();
    await eventually(async () => expect(text(await suite.cluster.secret('fa-term-ok'), 'tls.crt')).toContain('BEGIN CERTIFICATE'));
    await converge(adapter);
    // Each round plans the namespace's Secret again and is refused again: nothing to retry, nothing failed.
    for (let i = 0; i < 3; i++) {
      expect(await adapter.reconcileNow()).toMatchObject({ failed: 0, stale: 0 });
      await scrapes.scrape();
    }

    expect(await suite.cluster.secret('fa-term-gone')).toBeUndefined();
    const failures = 'eso_provider_certificate_rotation_failures_total';
    expect(await counterValue(metrics, failures, { namespace: 'fa-term-gone' })).toBe(0);
    expect(await counterValue(metrics, 'eso_ca_certificate_rotation_failures_total')).toBe(0);
    for (const alert of ['EsoProviderCertificateRotationFailed', 'EsoCaCertificateRotationFailed']) {
      const r = scrapes.expectFiring(alert, []);
      expect([alert, r.status, r.stdout + r.stderr]).toEqual([alert, 0, expect.stringContaining('SUCCESS')]);
    }
    await adapter.flushEvents();
    const about = logger.lines.filter((l) => JSON.stringify(l.fields).includes('fa-term-gone'));
    expect(about).toEqual([
      {
        level: 'info',
        message: 'namespace is being deleted: nothing new is written in it (not a failure)',
        fields: { namespace: 'fa-term-gone', error: expect.stringContaining('because it is being terminated') },
      },
    ]);

    // It comes back (its deletion completes and it is created anew): served as any other.
    await suite.cluster.deleteService('fa-term-gone', 'provider');
    await core.replaceNamespaceFinalize({ name: 'fa-term-gone', body: { metadata: { name: 'fa-term-gone' }, spec: { finalizers: [] } } });
    await eventually(async () => expect(await core.readNamespace({ name: 'fa-term-gone' }).catch((e: { code?: number }) => e.code)).toBe(404));
    await suite.cluster.namespace('fa-term-gone');
    await suite.cluster.labelledService('fa-term-gone', 'provider');
    await eventually(async () => expect(text(await suite.cluster.secret('fa-term-gone'), 'tls.crt')).toContain('BEGIN CERTIFICATE'));
    expect(await counterValue(metrics, failures, { namespace: 'fa-term-gone' })).toBe(0);
  });
});
