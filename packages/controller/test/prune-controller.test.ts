import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { METRIC_NAMES } from '@eso-mtls/metrics';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { type RunningController, createLogger, parseControllerConfig, startController } from '../src/index.js';
import { ESO_NS, PROVIDER_SECRET, createProviderNamespace } from '@eso-mtls/test-kit/cluster';
import { eventually } from '@eso-mtls/test-kit/eventually';

// The flag end to end: `--prune-orphaned-secrets-after` reaches the adapter and the metrics, on a
// real apiserver, with the certificate clock moved by hand.
const HOUR = 3_600_000;

describe('eso-mtls controller --prune-orphaned-secrets-after', () => {
  let plane: ControlPlane;
  let admin: KubeConfig;
  let controller: RunningController | undefined;

  beforeAll(async () => {
    plane = await startControlPlane();
    admin = plane.adminKubeConfig;
    await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: ESO_NS } } });
  }, 120_000);
  afterAll(async () => {
    await controller?.stop();
    await plane?.stop();
  });

  it('exports the deletion counter at 0, then counts the deletion of an orphaned Secret after the grace', async () => {
    let t = Date.UTC(2026, 10, 23, 8, 0, 0);
    const parsed = parseControllerConfig(
      ['--kubeconfig', plane.adminKubeconfigPath, '--prune-orphaned-secrets-after=1h', '--metrics-bind-address=127.0.0.1:0', '--health-probe-bind-address=0'],
      {},
    );
    if (parsed.kind !== 'config') throw new Error(parsed.kind === 'error' ? parsed.error.message : parsed.kind);
    controller = await startController(parsed.config, { logger: createLogger('silent'), identity: 'prune-test', now: () => t });
    await controller.synced;
    const scrape = async () => (await fetch(controller!.metricsServer!.url)).text();
    const series = (result: string) => `${METRIC_NAMES.orphanedSecretDeletions}{result="${result}"}`;
    expect(await scrape()).toContain(`${series('deleted')} 0`);
    expect(await scrape()).toContain(`${series('failed')} 0`);

    const core = admin.makeApiClient(CoreV1Api);
    const exists = async () =>
      core.readNamespacedSecret({ namespace: 'team-a', name: PROVIDER_SECRET }).then(
        () => true,
        () => false,
      );
    await createProviderNamespace(admin, 'team-a', ['p']);
    await eventually(exists, 20_000, 'the provider Secret');
    await core.deleteNamespacedService({ namespace: 'team-a', name: 'p' });
    await eventually(() => ![...controller!.adapter.informers.services.list()].some((s) => s.metadata?.namespace === 'team-a'), 20_000, 'the Service gone');
    await controller.adapter.reconcileNow();
    t += HOUR;
    await controller.adapter.reconcileNow();
    expect(await exists()).toBe(false);
    expect(await scrape()).toContain(`${series('deleted')} 1`);
  });
});
