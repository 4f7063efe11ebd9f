// The product as users run it, on a real node: containerd, runc and the kubelet run the pods,
// kube-controller-manager, kube-scheduler, kube-proxy and CoreDNS make Deployments, ServiceAccounts,
// ClusterIPs and `svc` names real. The chart installs the locally built controller image (2
// replicas, modes secret and pod-certificate), the shipped examples deploy three file providers
// whose Secret the kubelet mounts and one whose key the kubelet generates (pod certificate, trust
// from a ClusterTrustBundle projection), and ESO's client (the Go reloading client, its own image)
// calls each of them through Service DNS the whole time, through an overlap CA rotation.
// Every assertion comes from outside the controller: the apiserver, pod logs, the metrics scraped
// from the controller pod, and the host's own network state.
// Scale: one node, 2 controller replicas, 4 providers, 1 ESO client pod (4 callers); about 5 minutes warm.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  type KubeConfig,
  KubernetesObjectApi,
  type KubernetesObject,
  PatchStrategy,
  type V1Pod,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { ROTATE_ANNOTATION } from '@eso-mtls/core';
import { X509Certificate } from 'node:crypto';
import { METRIC_NAMES } from '@eso-mtls/metrics';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Helm, chartDir } from '../helm/support/helm.js';
import { CA_SECRET, CLIENT_SECRET, ESO_NS, PROVIDER_SECRET, eventually } from '../../packages/controller/test/support/cluster.js';
import { applyAll, kustomizeBuild, repoRoot } from '../../packages/controller/test/support/manifests.js';
import { type TestCluster, inside, startTestCluster } from './support/cluster.js';
import { hostNetworkState } from './support/host-state.js';
import { type CallerProgress, clientPod, lastProgress, providerManifests } from './support/workloads.js';

/** Secret-mode providers (the shipped example), and one in pod-certificate mode (its pod-certificate overlay). */
const SECRET_PROVIDERS = ['provider-a', 'provider-b', 'provider-c'] as const;
const POD_PROVIDER = 'provider-pod';
const PROVIDERS = [...SECRET_PROVIDERS, POD_PROVIDER] as const;
/** Short enough for npm test, above the kubelet's 10 s sync (the chart's default is 5m; docs/pod-certificates.md). */
const PROPAGATION_DELAY = '30s';
const RELEASE = 'eso-mtls';

describe('the chart, the images and the example provider on a real node', () => {
  const hostBefore = hostNetworkState();
  let tc: TestCluster;
  let admin: KubeConfig;
  let core: CoreV1Api;
  let helm: Helm;
  let objects: KubernetesObjectApi;

  beforeAll(async () => {
    tc = await startTestCluster({ syncFrequency: '10s' });
    admin = tc.cluster.controlPlane.kubeconfigFor('admin');
    core = admin.makeApiClient(CoreV1Api);
    objects = KubernetesObjectApi.makeApiClient(admin);
    const kubeconfig = join(tc.cluster.controlPlane.dir, 'admin-kubeconfig.json');
    writeFileSync(kubeconfig, admin.exportConfig(), { mode: 0o600 });
    helm = new Helm(kubeconfig);
  }, 15 * 60_000);
  afterAll(async () => {
    helm?.remove();
    await tc?.cluster.stop();
  }, 120_000);

  it('runs the whole cluster inside namespaces of its own: the host keeps its routes, rules and kernel settings', () => {
    expect(inside(tc.cluster, ['ip', '-4', '-br', 'addr', 'show', 'eth0'])).toContain('10.200.0.2/24');
    expect(inside(tc.cluster, ['cat', '/proc/sys/net/ipv4/ip_forward']).trim()).toBe('1');
    expect(inside(tc.cluster, ['iptables-save', '-t', 'nat'])).toContain('KUBE-SERVICES');
    expect(hostNetworkState()).toEqual(hostBefore);
  });

  it('resolves a Service name through CoreDNS and reaches the apiserver through its ClusterIP, from a pod', async () => {
    const controllerImage = tc.images.byRole.controller.name;
    const script = [
      "const dns = require('node:dns').promises; const tls = require('node:tls');",
      "dns.lookup('kubernetes.default.svc.cluster.local').then(({ address }) => {",
      "  const s = tls.connect({ host: 'kubernetes.default.svc', port: 443, rejectUnauthorized: false }, () => { console.log(JSON.stringify({ address, tls: s.getProtocol() })); s.end(); });",
      "  s.on('error', (e) => { console.error(e.message); process.exit(1); });",
      '}, (e) => { console.error(e.message); process.exit(1); });',
    ].join('\n');
    await core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name: 'dns-probe' },
        spec: {
          restartPolicy: 'Never',
          containers: [{ name: 'probe', image: controllerImage, imagePullPolicy: 'Never', command: ['/nodejs/bin/node', '-e', script] }],
        },
      },
    });
    await eventually(
      async () => (await core.readNamespacedPod({ namespace: 'default', name: 'dns-probe' })).status?.phase === 'Succeeded',
      120_000,
      'the DNS probe pod to succeed',
    );
    const log = await core.readNamespacedPodLog({ namespace: 'default', name: 'dns-probe' });
    expect(JSON.parse(log.trim())).toEqual({ address: '10.96.0.1', tls: 'TLSv1.3' });
  }, 180_000);

  it('installs with Helm from the local image: both replicas Ready, one leader holding the Lease', async () => {
    const [repository, tag] = splitImage(tc.images.byRole.controller.name);
    helm.install(chartDir, RELEASE, ESO_NS, {
      image: { repository, tag, pullPolicy: 'Never' },
      replicaCount: 2,
      modes: ['secret', 'pod-certificate'],
      propagationDelay: PROPAGATION_DELAY,
      floodControl: { maxNamespaces: PROVIDERS.length },
    });
    const apps = admin.makeApiClient(AppsV1Api);
    await eventually(
      async () => (await apps.readNamespacedDeployment({ namespace: ESO_NS, name: 'eso-mtls-controller' })).status?.readyReplicas === 2,
      240_000,
      'both controller replicas Ready',
    );
    const lease = await admin.makeApiClient(CoordinationV1Api).readNamespacedLease({ namespace: ESO_NS, name: 'eso-mtls-controller' });
    const pods = await controllerPods();
    expect(pods.map((p) => p.metadata!.name)).toContain(lease.spec?.holderIdentity);
    await eventually(() => secretExists(ESO_NS, CLIENT_SECRET), 60_000, "ESO's client Secret");
  }, 300_000);

  it('serves four providers of the example image, Secret and pod-certificate mode, which ESO reaches through Service DNS with no failed call', async () => {
    const image = tc.images.byRole['file-provider'].name;
    await applyAll(admin, [
      ...providerManifests(kustomizeBuild(join(repoRoot, 'deploy/examples/file-provider')), SECRET_PROVIDERS, image),
      ...providerManifests(kustomizeBuild(join(repoRoot, 'deploy/examples/file-provider-pod-certificates')), [POD_PROVIDER], image),
    ]);
    const apps = admin.makeApiClient(AppsV1Api);
    for (const ns of SECRET_PROVIDERS) await eventually(() => secretExists(ns, PROVIDER_SECRET), 60_000, `${ns}'s provider Secret`);
    for (const ns of PROVIDERS) {
      await eventually(
        async () => (await apps.readNamespacedDeployment({ namespace: ns, name: 'file-provider' })).status?.readyReplicas === 1,
        180_000,
        `${ns}'s provider Ready`,
      );
    }
    // The pod-certificate provider's key was made by the kubelet: no Secret, an issued request.
    expect(await secretExists(POD_PROVIDER, PROVIDER_SECRET)).toBe(false);
    expect((await podCertificateRequests(POD_PROVIDER)).some((r) => (r.status?.certificateChain ?? '') !== '')).toBe(true);
    await core.createNamespacedPod({ namespace: ESO_NS, body: clientPod(tc.images.byRole['eso-client'].name, PROVIDERS) });
    await eventually(async () => (await callers()).every((c) => c.calls >= 20), 180_000, 'every caller to make 20 calls');
    for (const c of await callers())
      expect({ provider: c.provider, failed: c.failed, failures: c.failures }).toEqual({ provider: c.provider, failed: 0, failures: [] });
  }, 420_000);

  it("exports every gauge from the controller pod's /metrics, and eso_namespaces_not_served counts a namespace past the cap", async () => {
    const metrics = await scrapeLeader();
    // The gauges the controller's metrics source feeds (ControllerMetrics), each with at least one series.
    for (const name of [
      METRIC_NAMES.providerCertificateExpiry,
      METRIC_NAMES.clientCertificateExpiry,
      METRIC_NAMES.caCertificateExpiry,
      METRIC_NAMES.namespacesNotServed,
    ])
      expect(metrics).toMatch(new RegExp(`^${name}[{ ]`, 'm'));
    expect(gauge(metrics, `${METRIC_NAMES.namespacesNotServed}{reason="cap"}`)).toBe(0);
    await core.createNamespace({ body: { metadata: { name: 'provider-d' } } });
    await core.createNamespacedService({
      namespace: 'provider-d',
      body: {
        metadata: { name: 'file-provider', labels: { 'external-secrets.io/provider': 'true' } },
        spec: { ports: [{ port: 8443 }], selector: { app: 'none' } },
      },
    });
    await eventually(
      async () => gauge(await scrapeLeader(), `${METRIC_NAMES.namespacesNotServed}{reason="cap"}`) === 1,
      120_000,
      'the cap to leave provider-d out',
    );
  }, 180_000);

  it('rotates the CA with overlap in both modes, with no failed call: Secret-mode leaves move to the new CA, every bundle holds both', async () => {
    const before = await callers();
    const oldCas = caCertificates((await core.readNamespacedSecret({ namespace: ESO_NS, name: CA_SECRET })).data!['ca.crt']!);
    await core.patchNamespacedSecret(
      { namespace: ESO_NS, name: CA_SECRET, body: { metadata: { annotations: { [ROTATE_ANNOTATION]: `real-node-${Date.now()}` } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const issuedByNewCa = async (namespace: string, name: string): Promise<boolean> => {
      const secret = await core.readNamespacedSecret({ namespace, name });
      const leaf = new X509Certificate(Buffer.from(secret.data!['tls.crt']!, 'base64'));
      return !oldCas.some((ca) => leaf.checkIssued(ca) && leaf.verify(ca.publicKey));
    };
    // Past propagationDelay (30 s) the next CA signs; every Secret-mode leaf and ESO's client move to it.
    await eventually(
      async () =>
        (await Promise.all([...SECRET_PROVIDERS.map((ns) => issuedByNewCa(ns, PROVIDER_SECRET)), issuedByNewCa(ESO_NS, CLIENT_SECRET)])).every(Boolean),
      300_000,
      'every leaf issued by the new CA',
    );
    const bundles = await objects.list<TrustBundle>(
      'certificates.k8s.io/v1',
      'ClusterTrustBundle',
      undefined,
      undefined,
      undefined,
      undefined,
      'eso-mtls.io/trust-bundle=true',
    );
    expect(bundles.items.length).toBeGreaterThan(0);
    for (const b of bundles.items) expect(caCertificates(Buffer.from(b.spec.trustBundle).toString('base64')).length).toBeGreaterThanOrEqual(2);
    const progressed = (c: CallerProgress): boolean => c.calls >= before.find((b) => b.provider === c.provider)!.calls + 40;
    await eventually(async () => (await callers()).every(progressed), 180_000, 'every caller to make 40 more calls after the rotation');
    for (const c of await callers())
      expect({ provider: c.provider, failed: c.failed, failures: c.failures }).toEqual({ provider: c.provider, failed: 0, failures: [] });
  }, 600_000);

  it('keeps serving when a provider pod is deleted: its replacement mounts the same Secret and the callers recover', async () => {
    const before = await callers();
    const [victim] = (await core.listNamespacedPod({ namespace: 'provider-a' })).items;
    await core.deleteNamespacedPod({ namespace: 'provider-a', name: victim!.metadata!.name! });
    const apps = admin.makeApiClient(AppsV1Api);
    await eventually(
      async () => {
        const pods = (await core.listNamespacedPod({ namespace: 'provider-a' })).items;
        return (
          pods.length === 1 &&
          pods[0]!.metadata!.name !== victim!.metadata!.name &&
          (await apps.readNamespacedDeployment({ namespace: 'provider-a', name: 'file-provider' })).status?.readyReplicas === 1
        );
      },
      180_000,
      'the replacement provider pod Ready',
    );
    const progressed = (c: CallerProgress): boolean => c.calls >= before.find((b) => b.provider === c.provider)!.calls + 20;
    await eventually(async () => (await callers()).every(progressed), 120_000, 'every caller to make 20 more calls');
    // The other providers never failed; provider-a's failures, if any, fall in the window while its only pod was replaced.
    for (const c of await callers()) if (c.provider !== 'provider-a') expect(c.failed).toBe(0);
  }, 360_000);

  it('stops leaving nothing: no process of its namespaces, no cgroup, the host as it was', async () => {
    const pid = tc.cluster.sandboxPid;
    await tc.cluster.stop();
    expect(() => process.kill(pid, 0)).toThrow();
    expect(hostNetworkState()).toEqual(hostBefore);
  }, 120_000);

  async function controllerPods(): Promise<V1Pod[]> {
    return (await core.listNamespacedPod({ namespace: ESO_NS, labelSelector: 'app.kubernetes.io/name=eso-mtls' })).items;
  }
  async function secretExists(namespace: string, name: string): Promise<boolean> {
    return core.readNamespacedSecret({ namespace, name }).then(
      () => true,
      () => false,
    );
  }
  async function callers(): Promise<CallerProgress[]> {
    return Promise.all(
      PROVIDERS.map(async (p) => ({ ...lastProgress(await core.readNamespacedPodLog({ namespace: ESO_NS, name: 'eso-client', container: p })), provider: p })),
    );
  }
  async function podCertificateRequests(namespace: string): Promise<PodCertificateRequest[]> {
    return (await objects.list<PodCertificateRequest>('certificates.k8s.io/v1', 'PodCertificateRequest', namespace)).items;
  }
  async function scrapeLeader(): Promise<string> {
    const lease = await admin.makeApiClient(CoordinationV1Api).readNamespacedLease({ namespace: ESO_NS, name: 'eso-mtls-controller' });
    return core.connectGetNamespacedPodProxyWithPath({ namespace: ESO_NS, name: `${lease.spec!.holderIdentity}:8080`, path: 'metrics' });
  }
});

/** The parts of certificates.k8s.io/v1 objects read here (the client library has no types for them yet). */
type TrustBundle = KubernetesObject & { spec: { trustBundle: string } };
type PodCertificateRequest = KubernetesObject & { status?: { certificateChain?: string } };

/** The certificates of a base64 PEM bundle. */
function caCertificates(base64: string): X509Certificate[] {
  const pem = Buffer.from(base64, 'base64').toString('utf8');
  return (pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map((b) => new X509Certificate(b));
}

function splitImage(name: string): [string, string] {
  const at = name.lastIndexOf(':');
  return [name.slice(0, at), name.slice(at + 1)];
}

function gauge(scrape: string, series: string): number {
  const line = scrape.split('\n').find((l) => l.startsWith(`${series} `));
  if (line === undefined) throw new Error(`no ${series} in the scrape`);
  return Number(line.slice(series.length + 1));
}
