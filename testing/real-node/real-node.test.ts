// The product as users run it, on a real node: containerd, runc and the kubelet run the pods,
// kube-controller-manager, kube-scheduler, kube-proxy and CoreDNS make Deployments, ServiceAccounts,
// ClusterIPs and `svc` names real. The chart installs the locally built controller image (2
// replicas, modes secret and pod-certificate); the shipped examples deploy three file providers
// whose Secret the kubelet mounts and one whose key the kubelet generates (a pod certificate, with
// trust from a ClusterTrustBundle projection); ESO's client (the Go reloading client, its own
// image) calls each through Service DNS the whole time, through an overlap CA rotation.
// Every assertion comes from outside the controller: the apiserver, pod logs, the metrics scraped
// from the controller pod through the apiserver, and the host's own network state.
// Scale: one node, 2 controller replicas, 4 providers, 1 ESO client pod (4 callers). The rest of
// the faults, with production timings, run under `npm run test:real-node` (testing/real-node/long).
import { existsSync, readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { METRIC_NAMES } from '@eso-mtls/metrics';
import { ESO_NS, eventually } from '../../packages/controller/test/support/cluster.js';
import { type TestCluster, inside, startTestCluster } from './support/cluster.js';
import { hostNetworkState } from './support/host-state.js';
import { POD_PROVIDER, PROVIDERS, World, gauge, pemCertificates } from './support/world.js';

/** Short enough for npm test, above the kubelet's 10 s sync here (the chart's default is 5m; docs/pod-certificates.md). */
const PROPAGATION_DELAY = '30s';

describe('the chart, the images and the example providers on a real node', () => {
  const hostBefore = hostNetworkState();
  let tc: TestCluster;
  let w: World;

  beforeAll(async () => {
    tc = await startTestCluster({ syncFrequency: '10s' });
    w = new World(tc);
  }, 15 * 60_000);
  afterAll(async () => {
    w?.helm.remove();
    await tc?.cluster.stop();
  }, 120_000);

  it('runs the whole cluster inside namespaces of its own: the host keeps its routes, rules and kernel settings', () => {
    expect(inside(tc.cluster, ['ip', '-4', '-br', 'addr', 'show', 'eth0'])).toContain('10.200.0.2/24');
    expect(inside(tc.cluster, ['cat', '/proc/sys/net/ipv4/ip_forward']).trim()).toBe('1');
    expect(inside(tc.cluster, ['iptables-save', '-t', 'nat'])).toContain('KUBE-SERVICES');
    expect(hostNetworkState()).toEqual(hostBefore);
  });

  it('resolves a Service name through CoreDNS and reaches the apiserver through its ClusterIP, from a pod', async () => {
    const script = [
      "const dns = require('node:dns').promises; const tls = require('node:tls');",
      "dns.lookup('kubernetes.default.svc.cluster.local').then(({ address }) => {",
      "  const s = tls.connect({ host: 'kubernetes.default.svc', port: 443, rejectUnauthorized: false }, () => { console.log(JSON.stringify({ address, tls: s.getProtocol() })); s.end(); });",
      "  s.on('error', (e) => { console.error(e.message); process.exit(1); });",
      '}, (e) => { console.error(e.message); process.exit(1); });',
    ].join('\n');
    await w.core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name: 'dns-probe' },
        spec: {
          restartPolicy: 'Never',
          containers: [{ name: 'probe', image: tc.images.byRole.controller.name, imagePullPolicy: 'Never', command: ['/nodejs/bin/node', '-e', script] }],
        },
      },
    });
    await eventually(
      async () => (await w.core.readNamespacedPod({ namespace: 'default', name: 'dns-probe' })).status?.phase === 'Succeeded',
      120_000,
      'the DNS probe pod to succeed',
    );
    const log = await w.core.readNamespacedPodLog({ namespace: 'default', name: 'dns-probe' });
    expect(JSON.parse(log.trim())).toEqual({ address: '10.96.0.1', tls: 'TLSv1.3' });
  }, 180_000);

  it('installs with Helm from the local image: both replicas Ready, one leader holding the Lease', async () => {
    await w.install({ modes: ['secret', 'pod-certificate'], propagationDelay: PROPAGATION_DELAY, floodControl: { maxNamespaces: PROVIDERS.length } });
    const pods = (await w.core.listNamespacedPod({ namespace: ESO_NS, labelSelector: 'app.kubernetes.io/name=eso-mtls-controller' })).items;
    expect(pods.map((p) => p.metadata!.name)).toContain(await w.leaseHolder());
  }, 300_000);

  it('serves four providers, Secret and pod-certificate mode, which ESO reaches through Service DNS with no failed call', async () => {
    await w.deployProviders();
    // The pod-certificate provider serves a key the kubelet made: its request was Issued. (In the
    // migration mode the controller also writes its namespace's Secret, which that pod does not mount.)
    expect((await w.podCertificateRequests(POD_PROVIDER)).some((r) => (r.status?.certificateChain ?? '') !== '')).toBe(true);
    await w.startCallers(20);
    expect(await w.failedCalls()).toEqual([]);
  }, 420_000);

  it("exports every gauge from the controller pod's /metrics, and eso_namespaces_not_served counts a namespace past the cap", async () => {
    const metrics = await w.scrapeLeader();
    // The gauges the controller's metrics source feeds (ControllerMetrics), each with at least one series.
    for (const name of [
      METRIC_NAMES.providerCertificateExpiry,
      METRIC_NAMES.clientCertificateExpiry,
      METRIC_NAMES.caCertificateExpiry,
      METRIC_NAMES.namespacesNotServed,
    ]) {
      expect(metrics).toMatch(new RegExp(`^${name}[{ ]`, 'm'));
    }
    expect(gauge(metrics, `${METRIC_NAMES.namespacesNotServed}{reason="cap"}`)).toBe(0);
    await w.core.createNamespace({ body: { metadata: { name: 'provider-d' } } });
    await w.core.createNamespacedService({
      namespace: 'provider-d',
      body: {
        metadata: { name: 'file-provider', labels: { 'external-secrets.io/provider': 'true' } },
        spec: { ports: [{ port: 8443 }], selector: { app: 'none' } },
      },
    });
    await eventually(
      async () => gauge(await w.scrapeLeader(), `${METRIC_NAMES.namespacesNotServed}{reason="cap"}`) === 1,
      120_000,
      'the cap to leave provider-d out',
    );
  }, 180_000);

  it('does not start a pod no labelled Service selects: the kubelet asks, and its request is Denied NoProviderService', async () => {
    await w.core.createNamespacedPod({
      namespace: 'provider-a',
      body: {
        metadata: { name: 'unselected', labels: { app: 'not-a-provider' } },
        spec: {
          automountServiceAccountToken: false,
          // The example's namespace enforces the restricted Pod Security Standard.
          securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'c',
              image: tc.images.byRole.pause.name,
              imagePullPolicy: 'Never',
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
              volumeMounts: [{ name: 'credentials', mountPath: '/certs' }],
            },
          ],
          volumes: [
            {
              name: 'credentials',
              projected: {
                sources: [{ podCertificate: { signerName: 'eso-mtls.io/provider-server', keyType: 'ECDSAP256', credentialBundlePath: 'credentials.pem' } }],
              },
            },
          ],
        },
      },
    });
    const denied = async (): Promise<string | undefined> => {
      const requests = await w.podCertificateRequests('provider-a');
      const conditions = requests.filter((r) => r.spec?.podName === 'unselected').flatMap((r) => r.status?.conditions ?? []);
      return conditions.find((c) => c.type === 'Denied')?.reason;
    };
    await eventually(async () => (await denied()) !== undefined, 120_000, "the unselected pod's request to be decided");
    expect(await denied()).toBe('NoProviderService');
    const pod = await w.core.readNamespacedPod({ namespace: 'provider-a', name: 'unselected' });
    expect(pod.status?.containerStatuses?.some((c) => c.state?.running) ?? false).toBe(false);
    await w.core.deleteNamespacedPod({ namespace: 'provider-a', name: 'unselected' });
  }, 180_000);

  it('rotates the CA with overlap in both modes, with no failed call: Secret-mode leaves move to the new CA, every bundle holds both', async () => {
    const before = await w.callers();
    const oldCas = await w.caCertificates();
    await w.requestRotation({ secret: 'eso-provider-ca-internal' }, ESO_NS);
    // Past propagationDelay (30 s) the next CA signs; every Secret-mode leaf and ESO's client move to it.
    await eventually(() => w.secretLeavesMovedFrom(oldCas), 300_000, 'every Secret-mode leaf issued by the new CA');
    const bundles = await w.trustBundles();
    expect(bundles.length).toBeGreaterThan(0);
    for (const b of bundles) expect(pemCertificates(b.spec.trustBundle).length).toBeGreaterThanOrEqual(2);
    await w.callersProgressed(before, 40, 180_000);
    expect(await w.failedCalls()).toEqual([]);
  }, 600_000);

  it('keeps serving when a provider pod is deleted: its replacement mounts the same Secret and the callers recover', async () => {
    const before = await w.callers();
    const { deletedAt, readyAt } = await w.replaceProviderPod('provider-a');
    await w.callersProgressed(before, 20, 120_000);
    // Only the callers of provider-a may fail, and only while its only pod was replaced.
    const outside = (await w.failedCalls()).filter((f) => !f.provider.endsWith('/provider-a') || f.at < deletedAt || f.at > readyAt + 5000);
    expect(outside).toEqual([]);
  }, 360_000);

  it('stops leaving nothing: no process of its namespaces, no cgroup of its run, the host as it was', async () => {
    const pid = tc.cluster.sandboxPid;
    await tc.cluster.stop();
    expect(() => process.kill(pid, 0)).toThrow();
    expect(readdirSync('/sys/fs/cgroup').filter((h) => existsSync(`/sys/fs/cgroup/${h}${tc.cluster.cgroupRoot}`))).toEqual([]);
    expect(hostNetworkState()).toEqual(hostBefore);
  }, 120_000);
});
