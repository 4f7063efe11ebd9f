// Issue 37 item 3 on a real apiserver: one tenant's immutable provider Secret must not hold every
// other namespace's CA rotation. It holds it for the grace (propagationDelay + reconcileInterval)
// only; then the rotation goes on without it, and the namespace is reported (Event, gauge, alert,
// one log line) until a write of its Secret lands and it catches up (docs/ca-rotation.md).
import { afterEach, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { ROTATE_ANNOTATION, minutes, seconds } from '@eso-mtls/core';
import type { ControllerMetrics } from '@eso-mtls/metrics';
import type { V1Secret } from '@kubernetes/client-node';
import type { AdapterOptions, ProviderCertificateAdapter } from '../src/index.js';
import { converge } from '@eso-mtls/test-kit/adapter';
import { controllerLike as wiredAdapter } from '@eso-mtls/test-kit/controller-like';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { useInstallations } from '@eso-mtls/test-kit/installations';
import { text } from '@eso-mtls/test-kit/secrets';

const CA_SECRET = 'eso-provider-ca-internal';
const GAUGE = 'eso_ca_rotation_namespace_left_behind';
const suite = useInstallations();
const running: ProviderCertificateAdapter[] = [];
afterEach(async () => {
  for (const adapter of running.splice(0)) await adapter.stop();
});

const controllerLike = (eso: string, options: Omit<Partial<AdapterOptions>, 'hooks'>) => wiredAdapter(suite.plane.adminKubeConfig, eso, options, running);

async function gaugeSeries(metrics: ControllerMetrics): Promise<Record<string, string | number>[]> {
  const metric = await metrics.registry.getSingleMetric(GAUGE)!.get();
  return metric.values.map((v) => ({ ...v.labels, value: v.value }));
}

async function counterValue(metrics: ControllerMetrics, name: string, labels: Record<string, string>): Promise<number> {
  const metric = await metrics.registry.getSingleMetric(name)!.get();
  return metric.values.find((v) => Object.entries(labels).every(([k, value]) => v.labels[k] === value))?.value ?? 0;
}

const subjectOf = (secret: V1Secret | undefined, key: string): string => new X509Certificate(text(secret, key)).subject;
const issuerOf = (secret: V1Secret | undefined): string => new X509Certificate(text(secret, 'tls.crt')).issuer;
const bundleSubjects = (secret: V1Secret | undefined, key = 'ca.crt'): string[] =>
  text(secret, key)
    .split(/(?<=-----END CERTIFICATE-----)\s*/)
    .filter((pem) => pem.includes('BEGIN CERTIFICATE'))
    .map((pem) => new X509Certificate(pem).subject);

describe("a provider Secret the controller cannot write (a tenant's immutable: true)", () => {
  it('holds the CA rotation for the grace only, then is left behind and reported once, and catches up when deleted', async () => {
    const eso = await suite.cluster.namespace('eso-left-behind');
    for (const ns of ['lb-ok', 'lb-stuck']) {
      await suite.cluster.namespace(ns);
      await suite.cluster.labelledService(ns, 'provider');
      suite.deleteAfterTest(ns, 'provider');
    }
    // The figures: a 10 s propagation delay; the reconcile interval stays at its 10-minute default.
    const propagationDelay = seconds(10);
    const grace = propagationDelay + minutes(10);
    const { adapter, metrics, logger, clock, scrapes } = await controllerLike(eso, { policy: { propagationDelay } });
    await adapter.start();
    await eventually(async () => {
      for (const ns of ['lb-ok', 'lb-stuck']) expect(text(await suite.cluster.secret(ns), 'tls.crt')).toContain('BEGIN CERTIFICATE');
    });
    await converge(adapter);
    const oldCa = subjectOf(await suite.cluster.secret(eso, CA_SECRET), 'ca.crt');

    // The tenant of lb-stuck marks its provider Secret immutable; then a CA rotation is asked for.
    const stuck = (await suite.cluster.secret('lb-stuck'))!;
    await suite.cluster.core.replaceNamespacedSecret({ namespace: 'lb-stuck', name: stuck.metadata!.name!, body: { ...stuck, immutable: true } });
    const stuckBefore = (await suite.cluster.secret('lb-stuck'))!;
    const caSecret = (await suite.cluster.secret(eso, CA_SECRET))!;
    caSecret.metadata!.annotations = { ...caSecret.metadata!.annotations, [ROTATE_ANNOTATION]: 'left-behind-1' };
    await suite.cluster.core.replaceNamespacedSecret({ namespace: eso, name: CA_SECRET, body: caSecret });
    await eventually(async () => expect(text(await suite.cluster.secret(eso, CA_SECRET), 'next.crt')).toContain('BEGIN CERTIFICATE'));
    const newCa = subjectOf(await suite.cluster.secret(eso, CA_SECRET), 'next.crt');
    await eventually(async () => expect(bundleSubjects(await suite.cluster.secret('lb-ok'))).toContain(newCa));
    // The refused bundle write is a failure of lb-stuck, as any failed write is.
    const failures = 'eso_provider_certificate_rotation_failures_total';
    await eventually(async () => expect(await counterValue(metrics, failures, { namespace: 'lb-stuck', service: 'provider' })).toBeGreaterThan(0));
    const refusedAt = clock.now();

    // Within the grace the refusal holds the rotation, as any bundle short of the next CA does.
    clock.advance(propagationDelay + seconds(1));
    for (let i = 0; i < 3; i++) await adapter.reconcileNow();
    let ca = await suite.cluster.secret(eso, CA_SECRET);
    expect([subjectOf(ca, 'ca.crt'), text(ca, 'next.crt') !== '']).toEqual([oldCa, true]);
    expect(await gaugeSeries(metrics)).toEqual([]);

    // Past it, the other namespaces move on: the next CA signs, and lb-ok is re-issued by it.
    clock.set(refusedAt + grace + seconds(1));
    await eventually(async () => {
      await adapter.reconcileNow();
      expect(subjectOf(await suite.cluster.secret(eso, CA_SECRET), 'ca.crt')).toBe(newCa);
    });
    await eventually(async () => {
      await adapter.reconcileNow();
      expect(issuerOf(await suite.cluster.secret('lb-ok'))).toBe(newCa);
      expect(issuerOf(await suite.cluster.secret(eso, 'eso-provider-client-tls'))).toBe(newCa);
    });
    ca = await suite.cluster.secret(eso, CA_SECRET);
    // The old CA stays trusted as retired: lb-stuck's leaf still chains to it, and ESO still trusts it.
    expect(bundleSubjects(ca, 'retired.crt')).toEqual([oldCa]);
    expect(bundleSubjects(await suite.cluster.secret(eso, 'eso-provider-client-tls'))).toContain(oldCa);
    // lb-stuck is as its tenant froze it: nothing of ours was deleted or re-created.
    const stuckNow = (await suite.cluster.secret('lb-stuck'))!;
    expect([stuckNow.metadata!.uid, stuckNow.metadata!.resourceVersion, stuckNow.immutable]).toEqual([
      stuckBefore.metadata!.uid,
      stuckBefore.metadata!.resourceVersion,
      true,
    ]);
    expect(bundleSubjects(stuckNow)).not.toContain(newCa);

    // Reported: the gauge, one Warning Event on its Service, one log line however many rounds, the alert.
    expect(await gaugeSeries(metrics)).toEqual([{ namespace: 'lb-stuck', reason: 'immutable', value: 1 }]);
    for (let i = 0; i < 5; i++) await adapter.reconcileNow();
    const lines = logger.lines.filter((l) => l.message.startsWith('namespace lb-stuck is left behind by the CA rotation'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'warn', fields: { namespace: 'lb-stuck', reason: 'immutable', services: 1, sample: ['provider'] } });
    await adapter.flushEvents();
    const events = (await suite.cluster.events('lb-stuck', 'provider')).filter((e) => e.reason === 'LeftBehindByCaRotation');
    expect(events).toEqual([
      {
        reason: 'LeftBehindByCaRotation',
        type: 'Warning',
        count: 1,
        message: expect.stringContaining('Secret external-secrets-provider-tls is marked immutable: true'),
      },
    ]);
    expect(events[0]!.message).toContain('Delete the Secret');
    for (let i = 0; i < 7; i++) await scrapes.scrape();
    const alert = scrapes.expectFiring('EsoCaRotationNamespaceLeftBehind', [{ namespace: 'lb-stuck', reason: 'immutable' }]);
    expect([alert.status, alert.stdout + alert.stderr]).toEqual([0, expect.stringContaining('SUCCESS')]);

    // Its owner deletes the Secret: the controller writes it again at once, with the new CA, and it has caught up.
    await suite.cluster.deleteSecret('lb-stuck');
    await eventually(async () => {
      await adapter.reconcileNow();
      const fresh = await suite.cluster.secret('lb-stuck');
      expect([issuerOf(fresh), bundleSubjects(fresh).includes(newCa), fresh?.immutable ?? false]).toEqual([newCa, true, false]);
    });
    await adapter.reconcileNow();
    expect(await gaugeSeries(metrics)).toEqual([]);
    expect(logger.lines.filter((l) => l.message.startsWith('namespace no longer left behind by the CA rotation'))).toEqual([
      expect.objectContaining({ level: 'info', fields: { namespace: 'lb-stuck' } }),
    ]);
  });
});
