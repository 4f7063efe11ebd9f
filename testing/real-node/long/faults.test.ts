// `npm run test:real-node`: every fault of the real-node suite, with production timings (the
// kubelet's default 1m sync, the chart's default 5m propagation delay), the Helm lifecycle, and the
// delivery and trust-bundle lag on a real kubelet, printed as one JSON line for docs/benchmarks.md.
// Faults, one after another: a leaf rotation, an overlap CA rotation, the leader pod deleted, a
// provider pod deleted, the kubelet restarted, the apiserver restarted. Every failed call of every
// caller must fall in a listed, bounded window. Scale: one node, 2 controller replicas, 4 providers,
// 4 callers; about 25 minutes.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CLIENT_SECRET, ESO_NS, PROVIDER_SECRET, eventually } from '../../../packages/controller/test/support/cluster.js';
import { chartDir } from '../../helm/support/helm.js';
import { type TestCluster, startTestCluster } from '../support/cluster.js';
import { POD_PROVIDER, RELEASE, SECRET_PROVIDERS, World, pemCertificates } from '../support/world.js';

/** A span in which the named callers may fail, and why. */
interface Window {
  readonly cause: string;
  readonly providers: readonly string[];
  readonly start: number;
  end: number;
}

/** The chart's default propagationDelay (5m), which these runs keep. */
const PROPAGATION_DELAY_MS = 5 * 60_000;

/** Time after a fault's recovery that its window stays open: a caller's next handshake and a kube-proxy sync. */
const SETTLE_MS = 5000;

describe('the real node with production timings: every fault, the Helm lifecycle, delivery and lag', () => {
  let tc: TestCluster;
  let w: World;
  const windows: Window[] = [];
  const measured: Record<string, number> = {};

  beforeAll(async () => {
    tc = await startTestCluster();
    w = new World(tc);
    await w.install({ modes: ['secret', 'pod-certificate'] });
    await w.deployProviders();
    await w.startCallers(20);
  }, 20 * 60_000);
  afterAll(async () => {
    process.stdout.write(`real-node measurements: ${JSON.stringify(measured)}\n`);
    w?.helm.remove();
    await tc?.cluster.stop();
  }, 120_000);

  it('delivers a rotated leaf through the real kubelet: Secret write, then the file swap the provider reloads', async () => {
    const serial = async (): Promise<string> =>
      serialOf((await w.core.readNamespacedSecret({ namespace: 'provider-a', name: PROVIDER_SECRET })).data!['tls.crt']!);
    const old = await serial();
    await w.requestRotation({ service: 'file-provider' }, 'provider-a');
    await eventually(async () => (await serial()) !== old, 120_000, "provider-a's new leaf");
    const written = Date.now();
    const fresh = await serial();
    const reloadedAt = await eventually(
      async () => (await providerReload('provider-a', fresh)) !== undefined,
      300_000,
      'provider-a to reload the new leaf',
    ).then(async () => (await providerReload('provider-a', fresh))!);
    measured.leafDeliveryMs = reloadedAt - written;
    expect(measured.leafDeliveryMs).toBeGreaterThanOrEqual(-1000);
  }, 600_000);

  it(
    'rotates the CA with overlap; the trust bundle reaches the pod-certificate provider well within propagationDelay',
    async () => {
      const oldCas = await w.caCertificates();
      const requested = Date.now();
      await w.requestRotation({ secret: 'eso-provider-ca-internal' }, ESO_NS);
      // The next CA is published into every bundle first; the ClusterTrustBundle's update time starts the lag.
      await eventually(
        async () => (await w.trustBundles()).every((b) => pemCertificates(b.spec.trustBundle).length > oldCas.length),
        120_000,
        'the next CA in the ClusterTrustBundles',
      );
      const published = Date.now();
      const before = await providerReloads(POD_PROVIDER);
      await eventually(async () => (await providerReloads(POD_PROVIDER)) > before, 600_000, 'the pod-certificate provider to reload its new trust bundle');
      measured.trustBundleLagMs = Date.now() - published;
      // The deadline it must meet: the CA activates once every bundle has held the next CA for
      // propagationDelay (the chart's default here), so a pod must have it by then.
      expect(measured.trustBundleLagMs).toBeLessThan(PROPAGATION_DELAY_MS);
      await eventually(() => w.secretLeavesMovedFrom(oldCas), 15 * 60_000, 'every Secret-mode leaf issued by the new CA');
      measured.caActivationMs = Date.now() - requested;
    },
    20 * 60_000,
  );

  it('loses no call when the leader pod is deleted; the other replica takes the Lease', async () => {
    const leader = await w.leaseHolder();
    await w.core.deleteNamespacedPod({ namespace: ESO_NS, name: leader! });
    await eventually(async () => ![undefined, leader].includes(await w.leaseHolder()), 120_000, 'another replica to lead');
    await w.controllerReady();
  }, 300_000);

  it('recovers from a provider pod deleted, failing only for that provider while its only pod is replaced', async () => {
    const window: Window = { cause: 'provider pod deleted', providers: ['provider-b'], start: Date.now(), end: Infinity };
    windows.push(window);
    const { readyAt } = await w.replaceProviderPod('provider-b');
    window.end = readyAt + SETTLE_MS;
  }, 400_000);

  it('keeps pods serving through a kubelet restart, which asks for a new pod certificate', async () => {
    const before = (await w.podCertificateRequests(POD_PROVIDER)).length;
    const calls = await w.callers();
    await tc.cluster.restartComponent('kubelet');
    await eventually(
      async () => (await w.podCertificateRequests(POD_PROVIDER)).length > before,
      300_000,
      'the restarted kubelet to request a new pod certificate',
    );
    await w.callersProgressed(calls, 40, 180_000);
  }, 600_000);

  it('keeps pods serving through an apiserver restart', async () => {
    const calls = await w.callers();
    await tc.cluster.controlPlane.stopApiServer();
    await new Promise((r) => setTimeout(r, 10_000));
    await tc.cluster.controlPlane.startApiServer();
    await w.callersProgressed(calls, 40, 180_000);
    await w.controllerReady();
  }, 400_000);

  it('keeps the CA through helm upgrade, uninstall and reinstall, and re-issues no leaf', async () => {
    const ca = await caSecretVersion();
    const leaves = await leafVersions();
    w.helm.upgrade(chartDir, RELEASE, ESO_NS, w.chartValues({ modes: ['secret', 'pod-certificate'], logLevel: 'debug' }));
    await w.controllerReady();
    w.helm.uninstall(RELEASE, ESO_NS);
    await eventually(
      async () => (await w.core.listNamespacedPod({ namespace: ESO_NS, labelSelector: 'app.kubernetes.io/name=eso-mtls-controller' })).items.length === 0,
      180_000,
      'the controller pods gone',
    );
    await w.install({ modes: ['secret', 'pod-certificate'] });
    // A reconcile of the reinstalled controller has looked at every Secret by the time both are Ready and a round has passed.
    await new Promise((r) => setTimeout(r, 30_000));
    expect(await caSecretVersion()).toEqual(ca);
    expect(await leafVersions()).toEqual(leaves);
  }, 900_000);

  it('failed no call outside the listed windows', async () => {
    const failures = await w.failedCalls();
    const outside = failures.filter(
      (f) => !windows.some((win) => win.providers.some((p) => f.provider.endsWith(`/${p}`)) && f.at >= win.start && f.at <= win.end),
    );
    process.stdout.write(
      `real-node failures: ${failures.length} in windows ${JSON.stringify(windows.map((x) => ({ cause: x.cause, ms: x.end - x.start })))}\n`,
    );
    expect(outside).toEqual([]);
  });

  async function caSecretVersion(): Promise<string> {
    const s = await w.core.readNamespacedSecret({ namespace: ESO_NS, name: 'eso-provider-ca-internal' });
    return `${s.metadata!.uid}/${s.metadata!.resourceVersion}`;
  }
  async function leafVersions(): Promise<string[]> {
    const secrets = [...SECRET_PROVIDERS.map((ns) => [ns, PROVIDER_SECRET] as const), [ESO_NS, CLIENT_SECRET] as const];
    return Promise.all(secrets.map(async ([ns, name]) => serialOf((await w.core.readNamespacedSecret({ namespace: ns, name })).data!['tls.crt']!)));
  }
  /** When the provider in `namespace` logged that it serves `serial`, or undefined. */
  async function providerReload(namespace: string, serial: string): Promise<number | undefined> {
    const line = (await providerLog(namespace)).find((l) => l.message === 'certificate reloaded' && String(l.serialNumber).toLowerCase() === serial);
    return line === undefined ? undefined : Date.parse(String(line.time));
  }
  async function providerReloads(namespace: string): Promise<number> {
    return (await providerLog(namespace)).filter((l) => l.message === 'certificate reloaded').length;
  }
  async function providerLog(namespace: string): Promise<Record<string, unknown>[]> {
    const [pod] = (await w.core.listNamespacedPod({ namespace })).items.filter((p) => p.status?.phase === 'Running');
    const log = await w.core.readNamespacedPodLog({ namespace, name: pod!.metadata!.name! });
    return log
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }
});

function serialOf(base64Pem: string): string {
  const [leaf] = pemCertificates(Buffer.from(base64Pem, 'base64').toString('utf8'));
  return leaf!.serialNumber.toLowerCase();
}
