import { afterEach, describe, expect, it } from '@jest/globals';
import { PROVIDER_SECRET_NAME } from '@eso-mtls/core';
import { type KubeConfig, RbacAuthorizationV1Api, type V1ClusterRole } from '@kubernetes/client-node';
import { applyAll, find, kustomizeBuild, kustomizeInstall, serviceAccountKubeConfig } from '@eso-mtls/test-kit/manifests';
import { type AdapterOptions, ProviderCertificateAdapter } from '../src/index.js';
import { TestClock } from '@eso-mtls/test-kit/clock';
import { converge } from '@eso-mtls/test-kit/adapter';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { useControlPlane } from '@eso-mtls/test-kit/installations';
import { RecordingLogger } from '@eso-mtls/test-kit/logger';

// Opt-in pruning of orphaned provider Secrets on the real apiserver, the clock driven by hand.
const suite = useControlPlane();
const HOUR = 3_600_000;
const GRACE = 24 * HOUR;
const MINUTE = 60_000;

interface Pruning {
  readonly adapter: ProviderCertificateAdapter;
  readonly clock: TestClock;
  readonly logger: RecordingLogger;
  /** What onSecretPruned reported. */
  readonly pruned: { namespace: string; result: 'deleted' | 'failed' }[];
}

const running: ProviderCertificateAdapter[] = [];
const services: [string, string][] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((a) => a.stop()));
  await Promise.all(services.splice(0).map(([ns, name]) => suite.cluster.deleteService(ns, name).catch(() => undefined)));
});

/** An adapter of installation `eso` with pruning after {@link GRACE}, converged. */
async function startPruning(eso: string, options: Partial<AdapterOptions> = {}, kubeConfig: KubeConfig = suite.plane.adminKubeConfig): Promise<Pruning> {
  const clock = new TestClock(Date.UTC(2026, 10, 23, 8, 0, 0));
  const logger = new RecordingLogger();
  const pruned: Pruning['pruned'] = [];
  const adapter = await ProviderCertificateAdapter.create({
    kubeConfig,
    debounceMs: 20,
    policy: { esoNamespace: eso },
    now: clock.now,
    logger,
    pruneOrphanedSecretsAfter: GRACE,
    hooks: { onSecretPruned: (namespace, result) => pruned.push({ namespace, result }) },
    ...options,
  });
  running.push(adapter);
  await adapter.start();
  await converge(adapter);
  return { adapter, clock, logger, pruned };
}

/** A namespace with one labelled Service `p` (deleted after the test). */
async function provider(ns: string): Promise<string> {
  await suite.cluster.namespace(ns);
  await suite.cluster.labelledService(ns, 'p');
  services.push([ns, 'p']);
  return ns;
}

/** Waits until the adapter's Service cache agrees with `present` for `ns`, then reconciles once. */
async function seen(run: Pruning, ns: string, present: boolean): Promise<void> {
  await eventually(() => [...run.adapter.informers.services.list()].some((s) => s.metadata?.namespace === ns) === present);
  await run.adapter.reconcileNow();
}

/** A provider namespace served under pruning in `eso`, whose last labelled Service then went, seen by a reconcile. */
async function orphaned(name: string, eso: string): Promise<{ ns: string; run: Pruning }> {
  const ns = await provider(name);
  const run = await startPruning(await suite.cluster.namespace(eso));
  await suite.cluster.deleteService(ns, 'p');
  await seen(run, ns, false);
  return { ns, run };
}

async function uid(ns: string): Promise<string | undefined> {
  return (await suite.cluster.secret(ns))?.metadata?.uid;
}

/** Events on the provider Secret of `ns`. */
async function secretEvents(run: Pruning, ns: string) {
  await run.adapter.flushEvents();
  return suite.cluster.events(ns, PROVIDER_SECRET_NAME);
}

describe('pruning orphaned provider Secrets', () => {
  it('deletes our Secret once its namespace has had no labelled Service for the grace, not a minute before; counts it, with an Event and a log line', async () => {
    const ns = await provider('prune-orphan');
    const run = await startPruning(await suite.cluster.namespace('eso-prune-1'));
    const before = await uid(ns);
    expect(before).toBeDefined();

    await suite.cluster.deleteService(ns, 'p');
    await seen(run, ns, false);
    run.clock.advance(GRACE - MINUTE);
    await run.adapter.reconcileNow();
    expect(await uid(ns)).toBe(before);
    expect(run.pruned).toEqual([]);
    expect(run.adapter.requests.count('delete')).toBe(0);

    run.clock.advance(MINUTE);
    await run.adapter.reconcileNow();
    expect(await uid(ns)).toBeUndefined();
    expect(run.pruned).toEqual([{ namespace: ns, result: 'deleted' }]);
    expect(run.adapter.requests.count('delete', 'secrets')).toBe(1);
    const lines = run.logger.lines.filter((l) => l.message.startsWith('orphaned provider Secret deleted'));
    expect(lines.map((l) => l.fields)).toEqual([{ namespace: ns, secret: PROVIDER_SECRET_NAME, orphanedSince: '2026-11-23T08:00:00.000Z' }]);
    expect(await secretEvents(run, ns)).toEqual([
      expect.objectContaining({ type: 'Normal', reason: 'Pruned', message: expect.stringContaining(`namespace ${ns} has had no Service labelled`) }),
    ]);

    // Gone from the cache with the watch; later rounds neither delete again nor count again.
    await eventually(() => run.adapter.informers.providerSecrets.get(ns, PROVIDER_SECRET_NAME) === undefined);
    run.clock.advance(2 * GRACE);
    await run.adapter.reconcileNow();
    expect(run.pruned).toHaveLength(1);
    expect(run.adapter.requests.count('delete', 'secrets')).toBe(1);
  });

  it('keeps the Secret when a Service comes back or is relabelled within the grace, and measures the grace from the last Service change', async () => {
    const ns = await provider('prune-back');
    const run = await startPruning(await suite.cluster.namespace('eso-prune-2'));
    const before = await uid(ns);

    // A redeploy: the Service deleted and created again 23 hours later.
    await suite.cluster.deleteService(ns, 'p');
    await seen(run, ns, false);
    run.clock.advance(GRACE - HOUR);
    await suite.cluster.labelledService(ns, 'p');
    await seen(run, ns, true);
    // A label briefly removed, 12 hours later put back.
    await suite.cluster.patchService(ns, 'p', (labels) => delete labels['external-secrets.io/provider']);
    await seen(run, ns, false);
    run.clock.advance(GRACE / 2);
    await suite.cluster.patchService(ns, 'p', (labels) => (labels['external-secrets.io/provider'] = 'true'));
    await seen(run, ns, true);
    run.clock.advance(2 * GRACE);
    await run.adapter.reconcileNow();
    expect(await uid(ns)).toBe(before);

    // Gone for good: a full grace from the deletion, not from the first time it went.
    await suite.cluster.deleteService(ns, 'p');
    await seen(run, ns, false);
    run.clock.advance(GRACE - MINUTE);
    await run.adapter.reconcileNow();
    expect(await uid(ns)).toBe(before);
    run.clock.advance(MINUTE);
    await run.adapter.reconcileNow();
    expect(await uid(ns)).toBeUndefined();
    expect(run.pruned).toEqual([{ namespace: ns, result: 'deleted' }]);
  });

  it('restarts the grace for a Service that came and went while this replica did not lead (no reconcile saw it)', async () => {
    const ns = await provider('prune-follower');
    let leading = true;
    const run = await startPruning(await suite.cluster.namespace('eso-prune-6'), { writesAllowed: () => leading });
    const before = await uid(ns);
    await suite.cluster.deleteService(ns, 'p');
    await seen(run, ns, false);
    run.clock.advance(GRACE - HOUR);
    leading = false;
    await suite.cluster.labelledService(ns, 'p');
    await eventually(() => [...run.adapter.informers.services.list()].some((s) => s.metadata?.namespace === ns));
    await suite.cluster.deleteService(ns, 'p');
    await eventually(() => ![...run.adapter.informers.services.list()].some((s) => s.metadata?.namespace === ns));
    // Leading again a day after the first deletion: the grace runs from this first round again.
    leading = true;
    run.clock.advance(HOUR);
    await run.adapter.reconcileNow();
    expect(await uid(ns)).toBe(before);
    run.clock.advance(GRACE - MINUTE);
    await run.adapter.reconcileNow();
    expect(await uid(ns)).toBe(before);
    run.clock.advance(MINUTE);
    await run.adapter.reconcileNow();
    expect(await uid(ns)).toBeUndefined();
  });

  it("never deletes a foreign Secret of that name, nor another installation's", async () => {
    const foreign = await suite.cluster.namespace('prune-foreign');
    const other = await suite.cluster.namespace('prune-other');
    await suite.cluster.core.createNamespacedSecret({
      namespace: foreign,
      body: { metadata: { name: PROVIDER_SECRET_NAME }, type: 'Opaque', stringData: { 'tls.key': 'a tenant key' } },
    });
    await suite.cluster.core.createNamespacedSecret({
      namespace: other,
      body: {
        metadata: {
          name: PROVIDER_SECRET_NAME,
          labels: { 'app.kubernetes.io/managed-by': 'eso-mtls', 'app.kubernetes.io/component': 'provider-tls' },
          annotations: { 'eso-mtls.io/installation': 'another-eso/eso-provider-ca-internal' },
        },
        type: 'kubernetes.io/tls',
        stringData: { 'tls.crt': 'x', 'tls.key': 'y' },
      },
    });
    const uids = [await uid(foreign), await uid(other)];
    const run = await startPruning(await suite.cluster.namespace('eso-prune-3'));
    for (let i = 0; i < 3; i++) {
      run.clock.advance(GRACE);
      await run.adapter.reconcileNow();
    }
    expect([await uid(foreign), await uid(other)]).toEqual(uids);
    expect(run.adapter.requests.count('delete')).toBe(0);
    expect(run.pruned).toEqual([]);
  });

  it('sends the DELETE with preconditions: a managed Secret changed after it was observed is refused with 409 and kept', async () => {
    const { ns, run } = await orphaned('prune-changed', 'eso-prune-4');
    // The cache lags the apiserver (a watch behind, as any watch can be): freeze it, then change
    // the Secret, still labelled and annotated as ours.
    await run.adapter.informers.providerSecrets.stop();
    const observed = run.adapter.informers.providerSecrets.get(ns, PROVIDER_SECRET_NAME)!;
    await suite.cluster.overwriteSecretData(ns, PROVIDER_SECRET_NAME, (data) => (data['note'] = 'edited by hand'));
    const changed = (await suite.cluster.secret(ns))!;
    expect(changed.metadata?.resourceVersion).not.toBe(observed.metadata?.resourceVersion);
    expect(changed.metadata?.labels?.['app.kubernetes.io/managed-by']).toBe('eso-mtls');

    run.clock.advance(GRACE);
    await run.adapter.reconcileNow();
    expect(run.adapter.requests.count('delete', 'secrets')).toBe(1);
    const refused = run.logger.lines.filter((l) => l.message.startsWith('orphaned Secret changed or went since it was observed'));
    expect(refused.map((l) => [l.fields.namespace, l.fields.code])).toEqual([[ns, 409]]);
    expect((await suite.cluster.secret(ns))?.metadata?.resourceVersion).toBe(changed.metadata?.resourceVersion);
    expect(run.pruned).toEqual([]);
  });

  it('starts the grace again when the Secret changes while its namespace is orphaned', async () => {
    const { ns, run } = await orphaned('prune-edited', 'eso-prune-5');
    run.clock.advance(GRACE - HOUR);
    await suite.cluster.overwriteSecretData(ns, PROVIDER_SECRET_NAME, (data) => (data['note'] = 'edited by hand'));
    const edited = (await suite.cluster.secret(ns))!.metadata!.resourceVersion;
    await eventually(() => run.adapter.informers.providerSecrets.get(ns, PROVIDER_SECRET_NAME)?.metadata?.resourceVersion === edited);
    await run.adapter.reconcileNow();
    run.clock.advance(GRACE - MINUTE);
    await run.adapter.reconcileNow();
    expect((await suite.cluster.secret(ns))?.metadata?.resourceVersion).toBe(edited);
    run.clock.advance(MINUTE);
    await run.adapter.reconcileNow();
    expect(await uid(ns)).toBeUndefined();
    expect(run.pruned).toEqual([{ namespace: ns, result: 'deleted' }]);
  });

  it('is refused in pod-certificate-only mode, which never reads provider Secrets', async () => {
    await expect(
      ProviderCertificateAdapter.create({
        kubeConfig: suite.plane.adminKubeConfig,
        secretMode: false,
        podCertificates: { serverSignerName: 'eso-mtls.io/provider-server', clientSignerName: 'eso-mtls.io/eso-client', maxValidity: 24 * HOUR },
        pruneOrphanedSecretsAfter: GRACE,
      }),
    ).rejects.toThrow('pruneOrphanedSecretsAfter=86400000: needs the Secret mode');
    await expect(ProviderCertificateAdapter.create({ kubeConfig: suite.plane.adminKubeConfig, pruneOrphanedSecretsAfter: MINUTE })).rejects.toThrow(
      'at least 3600000 (1 hour)',
    );
  });
});

describe('pruning under the shipped RBAC', () => {
  it('cannot delete without the pruning overlay (403: counted, logged as an error, Warning Event), and can with it', async () => {
    const eso = 'external-secrets-system';
    await applyAll(suite.plane.adminKubeConfig, kustomizeInstall('deploy/base'));
    const { kc } = await serviceAccountKubeConfig(suite.plane.adminKubeConfig, suite.plane.url, suite.plane.caPem, eso, 'eso-mtls-controller');
    const ns = await provider('prune-rbac');
    const run = await startPruning(eso, {}, kc);
    const before = await uid(ns);
    expect(before).toBeDefined();

    await suite.cluster.deleteService(ns, 'p');
    await seen(run, ns, false);
    run.clock.advance(GRACE);
    await run.adapter.reconcileNow();
    expect(await uid(ns)).toBe(before);
    expect(run.pruned).toEqual([{ namespace: ns, result: 'failed' }]);
    const errors = run.logger.lines.filter((l) => l.level === 'error' && l.message.startsWith('deleting an orphaned provider Secret failed'));
    expect(errors.map((l) => [l.fields.namespace, l.fields.code])).toEqual([[ns, 403]]);
    expect(errors[0]!.message).toContain('deploy/overlays/prune-orphaned-secrets');
    expect(await secretEvents(run, ns)).toEqual([expect.objectContaining({ type: 'Warning', reason: 'PruneFailed', message: expect.stringContaining('403') })]);

    // Retried once per reconcile interval, not on every round.
    await run.adapter.reconcileNow();
    expect(run.pruned).toHaveLength(1);

    // The overlay's ClusterRole adds delete on that one Secret name; nothing else changes.
    const withPruning = find<V1ClusterRole>(kustomizeBuild('deploy/overlays/prune-orphaned-secrets'), 'ClusterRole', 'eso-mtls-controller');
    const rbac = suite.plane.adminKubeConfig.makeApiClient(RbacAuthorizationV1Api);
    const current = await rbac.readClusterRole({ name: 'eso-mtls-controller' });
    await rbac.replaceClusterRole({
      name: 'eso-mtls-controller',
      body: { ...withPruning, metadata: { ...withPruning.metadata, resourceVersion: current.metadata?.resourceVersion } },
    });
    await eventually(async () => {
      run.clock.advance(10 * MINUTE);
      await run.adapter.reconcileNow();
      return (await uid(ns)) === undefined;
    });
    expect(run.pruned.at(-1)).toEqual({ namespace: ns, result: 'deleted' });
  });
});
