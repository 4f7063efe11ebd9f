// Two real nodes from the one launcher (issue 36, the part that runs on every change): the control
// plane in namespaces of its own, each node in its own, linked through a bridge in the control
// plane's network namespace. What one node cannot show and costs little here: the chart's two
// replicas spread one per node by the anti-affinity it ships, each kubelet asking for its own pods'
// certificates, and the apiserver refusing a PodCertificateRequest made with one node's
// credentials for a pod on the other (the Node authorizer and NodeRestriction, on which the signer
// relies: docs/pod-certificates.md). ESO's client (pod-certificate mode) calls the provider's
// replicas on both nodes through Service DNS, CoreDNS answering from the control plane. The node
// loss, the drain and the rejoin belong to `npm run test:real-node` (docs/real-node.md).
// Scale: 2 nodes, 2 controller replicas, 1 provider with 2 replicas, 1 ESO client pod.
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { KubernetesObjectApi, type V1Pod } from '@kubernetes/client-node';
import { CA_SECRET, ESO_NS } from '@eso-mtls/test-kit/cluster';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { applyAll, kustomizeBuild, type Manifest } from '@eso-mtls/test-kit/manifests';
import { repoRoot } from '@eso-mtls/test-kit/repo';
import { certificates } from '@eso-mtls/test-kit/secrets';
import { ScrapeRecorder } from '@eso-mtls/test-kit/scrapes';
import { type TestCluster, inside, startTestCluster } from './support/cluster.js';
import { holdPidNamespaces, hostNetworkState, processesInPidNamespace } from './support/host-state.js';
import { ESO_SERVICE_ACCOUNT, clientPod, providerManifests } from './support/workloads.js';
import { POD_PROVIDER, type PodCertificateRequest, World } from './support/world.js';

/** The pod-certificate provider's pods: one per node. */
const PROVIDER_LABELS = { 'app.kubernetes.io/name': 'file-provider' };
const CLIENT = 'eso-client-two-nodes';
/** The chart's default propagationDelay (values.yaml), which this suite keeps: how long a trust bundle may take to reach every pod. */
const PROPAGATION_DELAY_MS = 5 * 60_000;
/** Past the longest `for:` of deploy/prometheus/alerts.yaml (15 m), so any alert the series hold would fire. */
const REPLAYED_MINUTES = 17;

/** A PodCertificateRequest as sent, with the spec fields a node fills in. */
type RequestBody = PodCertificateRequest & { spec: Record<string, unknown> & { nodeName: string; podUID: string } };

describe('two real nodes: the chart spread one replica per node, and pod certificates under the Node authorizer', () => {
  const hostBefore = hostNetworkState();
  let tc: TestCluster;
  let w: World;
  let startedMs: number;

  beforeAll(async () => {
    const began = Date.now();
    tc = await startTestCluster({ nodes: 2, syncFrequency: '10s' });
    startedMs = Date.now() - began;
    process.stderr.write(
      `real-node: two nodes Ready in ${(startedMs / 1000).toFixed(0)} s; per node ${JSON.stringify(tc.cluster.nodes.map((n) => ({ node: n.name, ...n.startTimings })))}\n`,
    );
    w = new World(tc);
  }, 15 * 60_000);
  afterAll(async () => {
    await w?.saveLogs('two-nodes').catch(() => undefined);
    w?.helm.remove();
    await tc?.cluster.stop();
  }, 180_000);

  it('runs the control plane and each node in namespaces of their own, linked only inside them: the host keeps its routes, rules and kernel settings', async () => {
    const [a, b] = tc.cluster.nodes as [(typeof tc.cluster.nodes)[0], (typeof tc.cluster.nodes)[0]];
    for (const [node, other] of [
      [a, b],
      [b, a],
    ] as const) {
      expect(inside(node, ['ip', '-4', '-br', 'addr', 'show', 'eth0'])).toContain(`${node.addresses.ip}/24`);
      expect(inside(node, ['ip', 'route'])).toContain(`${other.addresses.podCidr} via ${other.addresses.ip} dev eth0`);
      expect(inside(node, ['iptables-save', '-t', 'nat'])).toContain('KUBE-SERVICES');
      // Fixed MACs: a node powered off or on changes no neighbour the others have cached. The
      // control plane's address is the bridge's own MAC, not its lowest port's (which leaves with a node).
      expect(inside(node, ['ip', '-o', 'link', 'show', 'eth0'])).toContain(`link/ether ${node.addresses.mac} `);
      expect(inside(node, ['ip', 'neigh', 'show', '10.200.0.1'])).toContain('lladdr 02:00:0a:c8:00:01 ');
      // Nested: the node's PID 1 is PID 1 of its own namespace, inside the control plane's, inside the host's.
      expect(nsPids(node.sandboxPid)).toEqual([node.sandboxPid, expect.any(Number), 1]);
    }
    expect(nsPids(tc.cluster.sandboxPid)).toEqual([tc.cluster.sandboxPid, 1]);
    const nodes = (await w.core.listNode()).items.map((n) => ({
      name: n.metadata!.name,
      ip: n.status!.addresses!.find((x) => x.type === 'InternalIP')!.address,
      ready: n.status!.conditions!.find((c) => c.type === 'Ready')!.status,
    }));
    expect(nodes).toEqual([
      { name: a.name, ip: a.addresses.ip, ready: 'True' },
      { name: b.name, ip: b.addresses.ip, ready: 'True' },
    ]);
    expect(hostNetworkState()).toEqual(hostBefore);
  });

  it('installs the chart once both nodes are Ready: its 2 replicas land one per node, by the preferred anti-affinity it ships', async () => {
    await w.install({ modes: ['secret', 'pod-certificate'] });
    const deployment = await w.apps.readNamespacedDeployment({ namespace: ESO_NS, name: 'eso-mtls-controller' });
    // What ships: preferred (a one-node cluster still runs both), by hostname, no spread constraint.
    const affinity = deployment.spec!.template.spec!.affinity!;
    expect(affinity.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution).toBeUndefined();
    expect(affinity.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.map((t) => t.podAffinityTerm.topologyKey)).toEqual([
      'kubernetes.io/hostname',
    ]);
    expect(deployment.spec!.template.spec!.topologySpreadConstraints).toBeUndefined();
    const pods = (await w.core.listNamespacedPod({ namespace: ESO_NS, labelSelector: 'app.kubernetes.io/name=eso-mtls-controller' })).items;
    expect(pods.map((p) => p.spec!.nodeName).sort()).toEqual(tc.cluster.nodes.map((n) => n.name).sort());
  }, 300_000);

  it("gives each kubelet its own pods' certificates: a provider replica on each node, and ESO's client calling both through Service DNS", async () => {
    await applyAll(
      w.admin,
      onePerNode(
        providerManifests(
          kustomizeBuild(join(repoRoot, 'deploy/examples/file-provider-pod-certificates')),
          [POD_PROVIDER],
          tc.images.byRole['file-provider'].name,
        ),
      ),
    );
    await w.deploymentReady(POD_PROVIDER, 'file-provider', 2, 240_000);
    const pods = await providerPods(w);
    expect(pods.map((p) => p.spec!.nodeName).sort()).toEqual(tc.cluster.nodes.map((n) => n.name).sort());
    // Each pod's Issued request names the node the pod runs on: NodeRestriction lets a node ask only for its own pods.
    const requests = await w.podCertificateRequests(POD_PROVIDER);
    for (const pod of pods) {
      const issued = requests.filter((r) => (r as RequestBody).spec.podUID === pod.metadata!.uid && (r.status?.certificateChain ?? '') !== '');
      expect(issued.length).toBeGreaterThan(0);
      expect(issued.map((r) => (r as RequestBody).spec.nodeName)).toEqual(issued.map(() => pod.spec!.nodeName));
    }
    // ESO's client with its own pod certificate, through cluster DNS and kube-proxy to the replicas on both nodes.
    await w.core.createNamespacedServiceAccount({ namespace: ESO_NS, body: { metadata: { name: ESO_SERVICE_ACCOUNT } } });
    await w.core.createNamespacedPod({ namespace: ESO_NS, body: clientPod(CLIENT, tc.images.byRole['eso-client'].name, [POD_PROVIDER], 'pod-certificate') });
    const calls = async (): Promise<{ calls: number; failed: number }> => {
      const log = await w.core.readNamespacedPodLog({ namespace: ESO_NS, name: CLIENT, container: POD_PROVIDER }).catch(() => '');
      const last = log
        .split('\n')
        .filter((l) => l.startsWith('{"event":"progress"'))
        .at(-1);
      return last === undefined ? { calls: 0, failed: 0 } : (JSON.parse(last) as { calls: number; failed: number });
    };
    await eventually(async () => (await calls()).calls >= 100, 240_000, "ESO's client to make 100 calls");
    expect((await calls()).failed).toBe(0);
  }, 600_000);

  it('fires no alert on the healthy cluster: both controller replicas and both provider replicas scraped, replayed through the shipped rules past their longest `for:`', async () => {
    const controllers = (await w.core.listNamespacedPod({ namespace: ESO_NS, labelSelector: 'app.kubernetes.io/name=eso-mtls-controller' })).items;
    const scraped = (namespace: string, job: string, instance: string) => ({
      source: { metrics: () => w.scrapePod(namespace, instance) },
      target: { job, instance },
    });
    const targets = [
      ...controllers.map((p) => scraped(ESO_NS, 'eso-mtls-controller', `${p.metadata!.name!}:8080`)),
      ...(await providerPods(w)).map((p) => scraped(POD_PROVIDER, 'file-provider', `${p.metadata!.name!}:8081`)),
    ];
    expect(targets).toHaveLength(4);
    // One scrape of every target per replayed minute: the series as they are now, held for REPLAYED_MINUTES.
    const scrapes = new ScrapeRecorder(targets);
    for (let i = 0; i < REPLAYED_MINUTES; i++) await scrapes.scrape();
    const r = scrapes.expectNoneFiring();
    expect([r.status, r.stdout + r.stderr]).toEqual([0, expect.stringContaining('SUCCESS')]);
  }, 300_000);

  it(
    "publishes a CA rotation's next CA to the pods on both nodes within propagationDelay: each kubelet projects it into its replica's ca.crt",
    async () => {
      const pods = await providerPods(w);
      const caFile = (pod: V1Pod): string => {
        const node = tc.cluster.nodes.find((n) => n.name === pod.spec!.nodeName)!;
        // The example's projected volume, as the kubelet of the pod's node wrote it (a tmpfs inside the node's namespaces).
        return inside(node, [
          'cat',
          join(node.kubeletRoot, 'pods', pod.metadata!.uid!, 'volumes', 'kubernetes.io~projected', 'provider-credentials', 'ca.crt'),
        ]);
      };
      const fingerprints = (pem: string): string[] => certificates(pem).map((c) => c.fingerprint256);
      const before = pods.map((p) => fingerprints(caFile(p)));
      for (const cas of before) expect(cas).toHaveLength(1);
      await w.requestRotation({ secret: CA_SECRET }, ESO_NS);
      // The next CA, prepared and published beside the active one in the trust bundles; nothing signed by it yet.
      const next = await eventually(
        async () => (await w.core.readNamespacedSecret({ namespace: ESO_NS, name: CA_SECRET })).data?.['next.crt'] ?? false,
        120_000,
        'next.crt',
      );
      const nextCa = fingerprints(Buffer.from(next, 'base64').toString())[0]!;
      const publishedAt = Date.now();
      const delivered: Record<string, number> = {};
      await Promise.all(
        pods.map(async (pod, i) => {
          await eventually(
            () => fingerprints(caFile(pod)).includes(nextCa),
            PROPAGATION_DELAY_MS,
            `the next CA in ${pod.metadata!.name}'s ca.crt on ${pod.spec!.nodeName}`,
          );
          delivered[pod.spec!.nodeName!] = Date.now() - publishedAt;
          // Beside the CA in force, which the rotation keeps until every leaf has moved.
          expect(fingerprints(caFile(pod)).sort()).toEqual([...before[i]!, nextCa].sort());
        }),
      );
      process.stdout.write(`two-nodes: the next CA in each node's provider replica's ca.crt, ms after it was published: ${JSON.stringify(delivered)}\n`);
    },
    PROPAGATION_DELAY_MS + 180_000,
  );

  it("has the apiserver refuse a PodCertificateRequest made with one node's credentials for a pod on the other, and the other node's own request issued", async () => {
    const [a, b] = tc.cluster.nodes as [(typeof tc.cluster.nodes)[0], (typeof tc.cluster.nodes)[0]];
    const onB = (await providerPods(w)).find((p) => p.spec!.nodeName === b.name)!;
    // The request node B's kubelet made for its pod, and was issued: its spec is what a node sends.
    const mine = (await w.podCertificateRequests(POD_PROVIDER)).find(
      (r) => (r as RequestBody).spec.podUID === onB.metadata!.uid && (r.status?.certificateChain ?? '') !== '',
    ) as RequestBody;
    expect(mine.spec.nodeName).toBe(b.name);
    const nodeA = await w.core.readNode({ name: a.name });
    const asNode = (name: string): KubernetesObjectApi => KubernetesObjectApi.makeApiClient(tc.cluster.controlPlane.kubeconfigFor(`system:node:${name}`));
    const send = async (node: string, spec: Record<string, unknown>): Promise<{ code: number; message: string }> => {
      const body = {
        apiVersion: 'certificates.k8s.io/v1',
        kind: 'PodCertificateRequest',
        metadata: { namespace: POD_PROVIDER, generateName: 'cross-node-', ownerReferences: mine.metadata!.ownerReferences },
        spec,
      };
      try {
        await asNode(node).create(body);
        return { code: 201, message: '' };
      } catch (e) {
        const err = e as { code?: number; body?: unknown };
        return { code: err.code ?? 0, message: typeof err.body === 'string' ? (JSON.parse(err.body) as { message: string }).message : String(e) };
      }
    };
    // Node A's credentials, naming itself, for the pod on node B; then naming node B (a lie).
    const honest = await send(a.name, { ...mine.spec, nodeName: a.name, nodeUID: nodeA.metadata!.uid });
    const lying = await send(a.name, mine.spec);
    process.stderr.write(`real-node: cross-node requests refused: ${JSON.stringify({ honest, lying })}\n`);
    expect(honest).toEqual({ code: 403, message: expect.stringContaining(a.name) });
    expect(lying).toEqual({ code: 403, message: expect.stringContaining(a.name) });
    // The same request with node B's own credentials is admitted, and the signer issues it.
    expect(await send(b.name, mine.spec)).toEqual({ code: 201, message: '' });
    await eventually(
      async () =>
        (await w.podCertificateRequests(POD_PROVIDER)).some((r) => r.metadata!.name!.startsWith('cross-node-') && (r.status?.certificateChain ?? '') !== ''),
      120_000,
      "node B's own request to be issued",
    );
    const crossNode = (await w.podCertificateRequests(POD_PROVIDER)).filter((r) => r.metadata!.name!.startsWith('cross-node-'));
    expect(crossNode.map((r) => (r as RequestBody).spec.nodeName)).toEqual([b.name]);
  }, 300_000);

  it("stops leaving nothing: no process of the control plane's or any node's namespaces, no cgroup of its run, the host as it was", async () => {
    const held = holdPidNamespaces([tc.cluster.sandboxPid, ...tc.cluster.nodes.map((n) => n.sandboxPid)]);
    try {
      expect(new Set(held.namespaces).size).toBe(3);
      await tc.cluster.stop();
      for (const ns of held.namespaces) expect(processesInPidNamespace(ns)).toEqual([]);
    } finally {
      held.release();
    }
    expect(readdirSync('/sys/fs/cgroup').filter((h) => existsSync(`/sys/fs/cgroup/${h}${tc.cluster.cgroupRoot}`))).toEqual([]);
    expect(hostNetworkState()).toEqual(hostBefore);
  }, 180_000);
});

/** The host PID of a process and its PID in each nested PID namespace, outermost first (/proc/PID/status NSpid). */
function nsPids(pid: number): number[] {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('NSpid:'));
  return (line ?? '').split(/\s+/).slice(1).filter(Boolean).map(Number);
}

/** The example provider's Deployment with 2 replicas that must run on different nodes (a test's placement, not the example's). */
function onePerNode(manifests: Manifest[]): Manifest[] {
  for (const m of manifests.filter((x) => x.kind === 'Deployment')) {
    const spec = (m as unknown as { spec: { replicas?: number; template: { spec: Record<string, unknown> } } }).spec;
    spec.replicas = 2;
    spec.template.spec.affinity = {
      podAntiAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: PROVIDER_LABELS } }],
      },
    };
  }
  return manifests;
}

async function providerPods(w: World): Promise<V1Pod[]> {
  return (await w.core.listNamespacedPod({ namespace: POD_PROVIDER })).items.filter((p) => p.metadata?.deletionTimestamp === undefined);
}
