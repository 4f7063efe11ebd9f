// The system the dashboard watches, for real: the controller (in-process, its real /metrics server)
// against a real apiserver, and a provider (startProviderServer from @eso-mtls/grpc, its real
// /metrics) serving from a folder written from the Secret the controller issued, and a second
// replica of it in the pod-certificate layout (credentials.pem and ca.crt, as a podCertificate
// projection writes them). A ScrapeRecorder scrapes all three while the test makes each panel's
// events happen: rotations (initial, forced twice), a refused reload, a rotation failure (a
// standing conflict), and the lag of a provider that has not yet reloaded.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROTATE_ANNOTATION } from '@eso-mtls/core';
import { type ProviderServer, startProviderServer } from '@eso-mtls/grpc';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../../envtest/src/index.js';
import { type RunningController, createLogger, parseControllerConfig, startController } from '../../../packages/controller/src/index.js';
import { ESO_NS, PROVIDER_SECRET, converged, createProviderNamespace } from '@eso-mtls/test-kit/cluster';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { writeAtomically } from '@eso-mtls/test-kit/demo';
import { podCertificateDir } from '@eso-mtls/test-kit/pod-certificates';
import { text } from '@eso-mtls/test-kit/secrets';
import { ScrapeRecorder } from './scrape-recorder.js';

/** The provider the recording runs: its namespace and Service are the dashboard's example selection. */
export const PROVIDER = { namespace: 'team-a', service: 'vault' } as const;
/** A second namespace, whose Secret the test turns foreign mid-recording: a standing conflict, counted as a rotation failure. */
export const CONFLICTED = { namespace: 'team-b', service: 'aws' } as const;
/** Seconds between scrapes: several samples inside every 1m rate window of the queries. */
export const SCRAPE_INTERVAL_MS = 1_000;

/** What the recording saw, and where. */
export interface Recording {
  readonly openMetrics: string;
  readonly bodies: readonly string[];
  /** Unix seconds of the first and last scrape. */
  readonly start: number;
  readonly end: number;
  readonly scrapes: number;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function providerFiles(core: CoreV1Api, namespace: string): Promise<Record<string, string>> {
  const secret = await core.readNamespacedSecret({ namespace, name: PROVIDER_SECRET });
  return { 'ca.crt': text(secret, 'ca.crt'), 'tls.crt': text(secret, 'tls.crt'), 'tls.key': text(secret, 'tls.key') };
}

async function metricValue(url: string, prefix: string): Promise<number> {
  const body = await (await fetch(url)).text();
  return body
    .split('\n')
    .filter((l) => l.startsWith(prefix))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

/**
 * Runs the whole scenario and returns the recording. Every wait has a deadline and says what it
 * waited for; nothing is timed for speed.
 */
export async function recordSystem(): Promise<Recording> {
  let plane: ControlPlane | undefined;
  let controller: RunningController | undefined;
  let provider: ProviderServer | undefined;
  let podProvider: ProviderServer | undefined;
  const certDir = mkdtempSync(join(tmpdir(), 'eso-mtls-dashboard-provider-'));
  let podCertDir: string | undefined;
  try {
    plane = await startControlPlane();
    const admin: KubeConfig = plane.adminKubeConfig;
    const core = admin.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: ESO_NS } } });
    const expected = new Map<string, string[]>([
      [PROVIDER.namespace, [PROVIDER.service]],
      [CONFLICTED.namespace, [CONFLICTED.service]],
    ]);
    for (const [ns, services] of expected) await createProviderNamespace(admin, ns, services);

    const parsed = parseControllerConfig(
      ['--kubeconfig', plane.adminKubeconfigPath, '--metrics-bind-address=127.0.0.1:0', '--health-probe-bind-address=0', '--log-level=silent'],
      {},
    );
    if (parsed.kind !== 'config') throw new Error(`controller flags: ${JSON.stringify(parsed)}`);
    controller = await startController(parsed.config, { logger: createLogger('silent'), identity: 'dashboard-test' });
    await controller.synced;
    await eventually(() => converged(admin, expected), 60_000, 'the controller to issue every certificate');

    await writeAtomically(certDir, await providerFiles(core, PROVIDER.namespace));
    provider = await startProviderServer({
      implementation: { getSecret: () => ({ value: Buffer.from('unused') }) },
      certDir,
      host: '127.0.0.1',
      port: 0,
      healthPort: 0,
      metrics: PROVIDER,
      log: false,
    });
    const providerMetrics = `http://127.0.0.1:${provider.healthPort}/metrics`;
    // The same certificate in the pod-certificate layout: what the pod-certificate panel reads.
    const issued = await providerFiles(core, PROVIDER.namespace);
    podCertDir = await podCertificateDir({ cert: issued['tls.crt']!, key: issued['tls.key']! }, issued['ca.crt']!);
    podProvider = await startProviderServer({
      implementation: { getSecret: () => ({ value: Buffer.from('unused') }) },
      certDir: podCertDir,
      certLayout: 'pod-certificate',
      host: '127.0.0.1',
      port: 0,
      healthPort: 0,
      metrics: PROVIDER,
      log: false,
    });
    const recorder = new ScrapeRecorder([
      { url: controller.metricsServer!.url, job: 'eso-mtls-controller', instance: 'eso-mtls-controller-0:8080' },
      { url: providerMetrics, job: 'providers', instance: `${PROVIDER.service}-0:8081` },
      { url: `http://127.0.0.1:${podProvider.healthPort}/metrics`, job: 'providers', instance: `${PROVIDER.service}-1:8081` },
    ]);
    recorder.start(SCRAPE_INTERVAL_MS);
    await pause(3 * SCRAPE_INTERVAL_MS);

    const controllerMetrics = controller.metricsServer!.url;
    const forced = (n: number) =>
      `eso_provider_certificate_rotation_total{namespace="${PROVIDER.namespace}",service="${PROVIDER.service}",reason="forced"} ${n}`;
    // Two forced rotations: the first creates the reason's series at 1 (increase() cannot see a
    // series' first sample), the second shows as an increase. After each, the provider serves the
    // old certificate for a few scrapes (the lag panel), then its folder is updated (a hot reload).
    for (const round of [1, 2]) {
      await core.patchNamespacedService(
        {
          namespace: PROVIDER.namespace,
          name: PROVIDER.service,
          body: [{ op: 'add', path: `/metadata/annotations`, value: { [ROTATE_ANNOTATION]: `dashboard-${round}` } }],
        },
        undefined,
      );
      await eventually(async () => (await (await fetch(controllerMetrics)).text()).includes(forced(round)), 30_000, `forced rotation ${round} to be counted`);
      await pause(3 * SCRAPE_INTERVAL_MS);
      const reloads = await metricValue(providerMetrics, 'eso_provider_certificate_hot_reload_total');
      await writeAtomically(certDir, await providerFiles(core, PROVIDER.namespace));
      await eventually(
        async () => (await metricValue(providerMetrics, 'eso_provider_certificate_hot_reload_total')) > reloads,
        30_000,
        `the provider to reload after rotation ${round}`,
      );
      await pause(2 * SCRAPE_INTERVAL_MS);
    }

    // A refused reload: a key that does not match the certificate. The provider keeps its pair.
    const good = await providerFiles(core, PROVIDER.namespace);
    const other = await providerFiles(core, CONFLICTED.namespace);
    await writeAtomically(certDir, { ...good, 'tls.key': other['tls.key']! });
    await eventually(
      async () => (await metricValue(providerMetrics, 'eso_provider_certificate_hot_reload_failures_total')) > 0,
      30_000,
      'the provider to refuse the mismatched pair',
    );
    await writeAtomically(certDir, good);

    // A standing conflict: team-b's Secret now claims another installation, so the controller
    // leaves it alone and counts a rotation failure for Service aws.
    const secret = await core.readNamespacedSecret({ namespace: CONFLICTED.namespace, name: PROVIDER_SECRET });
    secret.metadata!.annotations = { ...secret.metadata!.annotations, 'eso-mtls.io/installation': 'elsewhere/another-ca' };
    await core.replaceNamespacedSecret({ namespace: CONFLICTED.namespace, name: PROVIDER_SECRET, body: secret });
    controller.adapter.requestReconcile();
    await eventually(
      async () => (await metricValue(controllerMetrics, `eso_provider_certificate_rotation_failures_total{namespace="${CONFLICTED.namespace}"`)) > 0,
      30_000,
      'the conflict to be counted as a rotation failure',
    );
    await pause(3 * SCRAPE_INTERVAL_MS);
    await recorder.stop();
    const { first, last } = recorder.span;
    return { openMetrics: recorder.openMetrics(), bodies: recorder.bodies, start: first / 1000, end: last / 1000, scrapes: recorder.count };
  } finally {
    await provider?.close();
    await podProvider?.close();
    await controller?.stop();
    await plane?.stop();
    rmSync(certDir, { recursive: true, force: true });
    if (podCertDir) rmSync(podCertDir, { recursive: true, force: true });
  }
}
