// `eso-mtls controller` with a namespace requirement and a cap on namespaces, as a real process
// (the controller's own entry and wiring) on a real apiserver: its start-up line shows its modes,
// and eso_namespaces_not_served on its own /metrics moves as namespaces are refused and capped.
// Scale: three provider namespaces of one Service each.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { METRIC_NAMES } from '@eso-mtls/metrics';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { ESO_NS, PROVIDER_SECRET, createProviderService } from '@eso-mtls/test-kit/cluster';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { ControllerProcess } from '@eso-mtls/test-kit/controller-process';

const ALLOWED = 'eso-mtls.io/providers-allowed';

describe('eso-mtls controller --require-namespace-label --max-namespaces', () => {
  let plane: ControlPlane;
  let admin: KubeConfig;
  let controller: ControllerProcess;

  beforeAll(async () => {
    plane = await startControlPlane();
    admin = plane.adminKubeConfig;
    await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: ESO_NS } } });
    controller = new ControllerProcess('controller', [
      '--kubeconfig',
      plane.adminKubeconfigPath,
      `--require-namespace-label=${ALLOWED}=true`,
      '--max-namespaces=1',
      '--metrics-bind-address=127.0.0.1:0',
      '--health-probe-bind-address=0',
    ]);
  }, 120_000);
  afterAll(async () => {
    await controller?.kill();
    await plane?.stop();
  });

  it('shows its modes on the start-up line', async () => {
    const line = await controller.waitForLog((l) => l.msg === 'starting eso-mtls controller', 60_000, 'the start-up line');
    expect(line).toMatchObject({
      modes: 'secret',
      caKeys: 'ca-secret',
      requireNamespaceLabel: `${ALLOWED}=true`,
      maxNamespaces: 1,
      maxIssuancesPerReconcile: 1000,
      pruneOrphanedSecretsAfter: 'off',
    });
    expect(line).not.toHaveProperty('podCertificateSigners');
  });

  it('counts a namespace the requirement refuses (not_allowed) and one the cap leaves out (cap) on its /metrics', async () => {
    const { metrics } = await controller.endpoints(60_000);
    await controller.waitForLog((l) => l.msg === 'caches synced', 60_000, 'the caches synced');
    const notServed = async (): Promise<{ cap: number; not_allowed: number }> => {
      const body = await (await fetch(metrics)).text();
      const value = (reason: string): number => {
        const series = `${METRIC_NAMES.namespacesNotServed}{reason="${reason}"} `;
        const line = body.split('\n').find((l) => l.startsWith(series));
        if (line === undefined) throw new Error(`no ${series}in the scrape:\n${body}`);
        return Number(line.slice(series.length));
      };
      return { cap: value('cap'), not_allowed: value('not_allowed') };
    };
    const reaches = (want: { cap: number; not_allowed: number }, what: string) =>
      eventually(async () => JSON.stringify(await notServed()) === JSON.stringify(want), 30_000, what);
    const core = admin.makeApiClient(CoreV1Api);
    const providerNamespace = async (name: string, labels: Record<string, string>): Promise<void> => {
      await core.createNamespace({ body: { metadata: { name, labels } } });
      await createProviderService(admin, name, 'provider');
    };
    expect(await notServed()).toEqual({ cap: 0, not_allowed: 0 });

    // The one namespace the cap admits is served.
    await providerNamespace('ns-first', { [ALLOWED]: 'true' });
    await eventually(
      () =>
        core.readNamespacedSecret({ namespace: 'ns-first', name: PROVIDER_SECRET }).then(
          () => true,
          () => false,
        ),
      30_000,
      'the first namespace served',
    );
    expect(await notServed()).toEqual({ cap: 0, not_allowed: 0 });

    await providerNamespace('ns-unlabelled', {});
    await reaches({ cap: 0, not_allowed: 1 }, 'the unlabelled namespace counted as not_allowed');

    await providerNamespace('ns-second', { [ALLOWED]: 'true' });
    await reaches({ cap: 1, not_allowed: 1 }, 'the namespace beyond the cap counted as cap');

    // Labelled now, the refused namespace is allowed, and the cap leaves it out too.
    await core.patchNamespace({ name: 'ns-unlabelled', body: [{ op: 'add', path: '/metadata/labels', value: { [ALLOWED]: 'true' } }] });
    await reaches({ cap: 2, not_allowed: 0 }, 'the newly allowed namespace counted under cap instead');
  });
});
