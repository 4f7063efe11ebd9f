// `npm run test:real-node`: a node lost during traffic, on two real nodes (issue 36). The node
// holding the controller's leader is powered off at once (its kubelet, containerd, kube-proxy and
// every pod killed together, as a power cut would), with the node lifecycle controller's default
// timings (NotReady after the node monitor grace period, eviction 300 s after that). ESO's client
// pod on the surviving node calls three providers through Service DNS the whole time: one with a
// replica on each node (and a PodDisruptionBudget), one whose only replica was on the lost node,
// one whose only replica is on the survivor. Measured and bounded: the other controller replica
// takes the Lease within leaseDuration + retryPeriod; every failed call falls in a listed window
// with its cause; then the node comes back, rejoins, and no leaf is re-issued; none of our alerts
// fires through it all (the leader and the survivor's providers scraped, replayed by promtool).
// Then that node is drained (cordoned, its pods evicted through the Eviction API, which honours
// the PodDisruptionBudgets) during an overlap CA rotation: a provider's replica moves to the
// other node and mounts its Secret, the rotation completes, and no call fails.
// Scale: 2 nodes, 2 controller replicas, 4 providers (6 pods), 3 ESO client pods; about 12 minutes.
import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CA_SECRET, CLIENT_SECRET, ESO_NS, PROVIDER_SECRET } from '@eso-mtls/test-kit/cluster';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { applyAll, kustomizeBuild, type Manifest } from '@eso-mtls/test-kit/manifests';
import { repoRoot } from '@eso-mtls/test-kit/repo';
import { type MetricsSource, ScrapeRecorder } from '@eso-mtls/test-kit/scrapes';
import { join } from 'node:path';
import { CoordinationV1Api, PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import { type TestCluster, startTestCluster } from '../support/cluster.js';
import { type FailedCall, clientPod, failedCalls, lastProgress, providerManifests } from '../support/workloads.js';
import { World } from '../support/world.js';

/** The chart's leader election (values.yaml leaderElection), which this run keeps. */
const LEASE_DURATION_MS = 15_000;
const RETRY_PERIOD_MS = 2000;
/** The Lease's acquireTime has microseconds; the kill itself and the clock read around it. */
const OBSERVATION_SLACK_MS = 1000;
/** Time after a window's end that its failures may still show: a caller's next handshake and a kube-proxy sync. */
const SETTLE_MS = 5000;
/**
 * The caller's longest wait before its next connection attempt (cmd/reloading-client: reconnect
 * backoff capped at 5 s, plus grpc-go's 20 % jitter): a provider back is reached within it.
 */
const RECONNECT_MS = 6000;

/** The overlap CA rotation's wait between publishing a CA and signing with it (with the kubelet's syncFrequency at 10 s, as the one-node suite). */
const PROPAGATION_DELAY = '30s';

/** One round of scrapes per this long through the loss and the rejoin; each stands for a minute of the replay, so every `for:` is reached sooner, not later. */
const SCRAPE_EVERY_MS = 30_000;
/** A target on the lost node answers nothing: its series are absent from that round. */
const SCRAPE_TIMEOUT_MS = 5000;
/** Past the longest `for:` of deploy/prometheus/alerts.yaml (15 m): the state at the end, held that long. */
const HELD_MINUTES = 17;

/** A provider with a replica on each node; one whose only replica is on the node that will be lost; one on the survivor. */
const SPREAD = 'provider-spread';
const ON_LOST = 'provider-on-lost';
const ON_SURVIVOR = 'provider-on-survivor';
const PROVIDERS = [SPREAD, ON_LOST, ON_SURVIVOR];
/** Deployed after the rejoin: 2 replicas spread by a preferred anti-affinity (so one may move), and a PodDisruptionBudget. */
const DRAINED = 'provider-drained';
const PROVIDER_LABELS = { 'app.kubernetes.io/name': 'file-provider' };

/** A span in which the named provider's callers may fail, and why. */
interface Window {
  readonly cause: string;
  readonly provider: string;
  readonly start: number;
  end: number;
}

describe('two real nodes: the node holding the leader lost at once during traffic, then back, then drained during a CA rotation', () => {
  let tc: TestCluster;
  let w: World;
  let lost: string;
  let survivor: string;
  let lostAt: number;
  const windows: Window[] = [];
  const measured: Record<string, number> = {};
  const errors: Record<string, Record<string, number>> = {};
  let serialsBefore: Record<string, string>;
  let alerts: { scrapes: ScrapeRecorder; stop(): Promise<void> };

  beforeAll(async () => {
    tc = await startTestCluster({ nodes: 2, syncFrequency: '10s' });
    w = new World(tc);
    await w.install({ modes: ['secret'], propagationDelay: PROPAGATION_DELAY });
    // The leader's node is the one to lose; the providers are placed around it.
    const leader = await w.core.readNamespacedPod({ namespace: ESO_NS, name: (await w.leaseHolder())! });
    lost = leader.spec!.nodeName!;
    survivor = tc.cluster.nodes.map((n) => n.name).find((n) => n !== lost)!;
    const example = kustomizeBuild(join(repoRoot, 'deploy/examples/file-provider'));
    const image = tc.images.byRole['file-provider'].name;
    await applyAll(w.admin, [
      ...placed(providerManifests(example, [SPREAD], image), { replicas: 2 }),
      pdb(SPREAD),
      ...placed(providerManifests(example, [ON_LOST], image), { prefer: lost }),
      ...placed(providerManifests(example, [ON_SURVIVOR], image), { prefer: survivor }),
    ]);
    for (const ns of PROVIDERS) await eventually(() => w.secretExists(ns, PROVIDER_SECRET), 180_000, `${ns}'s provider Secret`);
    await w.deploymentReady(SPREAD, 'file-provider', 2, 240_000);
    for (const ns of [ON_LOST, ON_SURVIVOR]) await w.deploymentReady(ns, 'file-provider', 1, 240_000);
    expect((await pods(w, SPREAD)).map((p) => p.spec!.nodeName).sort()).toEqual([lost, survivor].sort());
    expect((await pods(w, ON_LOST)).map((p) => p.spec!.nodeName)).toEqual([lost]);
    expect((await pods(w, ON_SURVIVOR)).map((p) => p.spec!.nodeName)).toEqual([survivor]);
    // ESO's client on each node; the one on the lost node dies with it (its log with it).
    const clientImage = tc.images.byRole['eso-client'].name;
    for (const node of [lost, survivor]) {
      const pod = clientPod(clientName(node), clientImage, PROVIDERS, 'secret');
      pod.spec!.nodeSelector = { 'kubernetes.io/hostname': node };
      await w.core.createNamespacedPod({ namespace: ESO_NS, body: pod });
    }
    await eventually(async () => (await callerProgress(w, clientName(survivor))).every((c) => c.calls >= 20), 240_000, 'every caller to make 20 calls');
    expect(await survivorFailures(w, survivor)).toEqual([]);
    serialsBefore = await leafSerials(w);
  }, 25 * 60_000);
  afterAll(async () => {
    await alerts?.stop(); // a test that failed before its own stop must not leave the scrapes running
    process.stdout.write(`real-node node loss: ${JSON.stringify({ measured, windows: windows.map((x) => ({ ...x, ms: x.end - x.start })), errors })}\n`);
    // The pods' logs (the controller replicas', the callers'), for reading after the nodes are gone.
    await w?.saveLogs('node-loss').catch(() => undefined);
    w?.helm.remove();
    await tc?.cluster.stop();
  }, 180_000);

  it('the other replica takes the Lease within leaseDuration + retryPeriod of the loss', async () => {
    const leader = await leaderOn(w, lost);
    alerts = await sampleAlerts(w, survivor);
    lostAt = Date.now();
    for (const provider of [SPREAD, ON_LOST]) windows.push({ cause: `node ${lost} lost`, provider, start: lostAt, end: Infinity });
    await tc.cluster.powerOff(lost);
    measured.powerOffMs = Date.now() - lostAt;
    const leases = w.admin.makeApiClient(CoordinationV1Api);
    // The lost leader's last renewal as the apiserver kept it: a power cut stops its renewals at once.
    let lastRenewal = 0;
    await eventually(
      async () => {
        const spec = (await leases.readNamespacedLease({ namespace: ESO_NS, name: 'eso-mtls-controller' })).spec!;
        if (spec.holderIdentity === leader) lastRenewal = Math.max(lastRenewal, new Date(spec.renewTime!).getTime());
        return spec.holderIdentity !== undefined && spec.holderIdentity !== leader;
      },
      120_000,
      'another replica to lead',
    );
    measured.lostLeaderLastRenewalMs = lastRenewal - lostAt;
    // From the loss to the new holder's acquireTime (written by it, on this host's clock): no polling in the figure.
    const lease = await leases.readNamespacedLease({ namespace: ESO_NS, name: 'eso-mtls-controller' });
    measured.takeoverMs = new Date(lease.spec!.acquireTime!).getTime() - lostAt;
    measured.takeoverSeenMs = Date.now() - lostAt;
    expect(measured.takeoverMs).toBeLessThanOrEqual(LEASE_DURATION_MS + RETRY_PERIOD_MS + OBSERVATION_SLACK_MS);
  }, 180_000);

  it(
    'fails calls to the spread provider only until kube-proxy drops the lost endpoint, and to the lost one only until its replacement is Ready',
    async () => {
      // The node lifecycle controller marks the node's pods not Ready once the node is (default grace);
      // the EndpointSlice controller then drops their endpoints, and kube-proxy on the survivor their rules.
      await eventually(
        async () => (await w.core.readNode({ name: lost })).status!.conditions!.find((c) => c.type === 'Ready')!.status !== 'True',
        180_000,
        `node ${lost} NotReady`,
      );
      measured.notReadyMs = Date.now() - lostAt;
      await eventually(async () => !(await readyEndpointOn(w, SPREAD, lost)), 180_000, `${SPREAD}'s endpoint on ${lost} dropped`);
      measured.spreadEndpointDroppedMs = Date.now() - lostAt;
      windows.find((x) => x.provider === SPREAD)!.end = Date.now() + RECONNECT_MS + SETTLE_MS;
      // Eviction of the lost node's pods (tolerationSeconds 300 for node.kubernetes.io/unreachable), then a replacement on the survivor.
      await eventually(
        async () =>
          (await pods(w, ON_LOST)).some((p) => p.spec!.nodeName === survivor && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')),
        15 * 60_000,
        `${ON_LOST}'s replacement Ready on ${survivor}`,
      );
      measured.lostProviderBackMs = Date.now() - lostAt;
      windows.find((x) => x.provider === ON_LOST)!.end = Date.now() + RECONNECT_MS + SETTLE_MS;
      const before = await callerProgress(w, clientName(survivor));
      await eventually(
        async () => (await callerProgress(w, clientName(survivor))).every((c, i) => c.calls >= before[i]!.calls + 40),
        180_000,
        'every caller on the survivor to make 40 more calls',
      );
      const failures = await survivorFailures(w, survivor);
      for (const provider of PROVIDERS) {
        const mine = failures.filter((f) => f.provider.endsWith(`/${provider}`));
        measured[`failed_${provider}`] = mine.length;
        if (mine.length > 0) measured[`lastFailure_${provider}_ms`] = Math.max(...mine.map((f) => f.at)) - lostAt;
        // What the calls failed with, for reading the windows' causes: deadlines, unanswered pings, refused connects.
        errors[provider] = tally(mine.map((f) => f.error));
      }
      const outside = failures.filter((f) => !windows.some((win) => f.provider.endsWith(`/${win.provider}`) && f.at >= win.start && f.at <= win.end));
      expect(outside).toEqual([]);
    },
    20 * 60_000,
  );

  it(
    'rejoins when the node comes back, and nothing is re-issued',
    async () => {
      const on = Date.now();
      await tc.cluster.powerOn(lost);
      await eventually(
        async () => (await w.core.readNode({ name: lost })).status!.conditions!.find((c) => c.type === 'Ready')!.status === 'True',
        300_000,
        `node ${lost} Ready again`,
      );
      measured.rejoinMs = Date.now() - on;
      await w.controllerReady();
      expect(await leafSerials(w)).toEqual(serialsBefore);
    },
    10 * 60_000,
  );

  it(
    'raises none of our alerts through the loss and the rejoin: the runbooks expect none (operations.md, a node lost)',
    async () => {
      await alerts.stop();
      measured.alertRounds = alerts.scrapes.minutes;
      for (let i = 0; i < HELD_MINUTES; i++) await alerts.scrapes.scrape();
      const r = alerts.scrapes.expectNoneFiring();
      expect([r.status, r.stdout + r.stderr]).toEqual([0, expect.stringContaining('SUCCESS')]);
    },
    5 * 60_000,
  );

  it(
    'drains the node during an overlap CA rotation, evicting through the PodDisruptionBudgets: the replicas move, the rotation completes, no call fails',
    async () => {
      // Back on the rejoined node: the spread provider's second replica (Pending while the node was away).
      await w.deploymentReady(SPREAD, 'file-provider', 2, 300_000);
      const example = kustomizeBuild(join(repoRoot, 'deploy/examples/file-provider'));
      await applyAll(w.admin, [...placed(providerManifests(example, [DRAINED], tc.images.byRole['file-provider'].name), { spread: 2 }), pdb(DRAINED)]);
      await eventually(() => w.secretExists(DRAINED, PROVIDER_SECRET), 180_000, `${DRAINED}'s provider Secret`);
      await w.deploymentReady(DRAINED, 'file-provider', 2, 240_000);
      expect((await pods(w, DRAINED)).map((p) => p.spec!.nodeName).sort()).toEqual([lost, survivor].sort());
      const drainedClient = clientPod(`eso-client-${DRAINED}`, tc.images.byRole['eso-client'].name, [DRAINED], 'secret');
      drainedClient.spec!.nodeSelector = { 'kubernetes.io/hostname': survivor };
      await w.core.createNamespacedPod({ namespace: ESO_NS, body: drainedClient });
      await eventually(async () => (await drainedProgress(w)).calls >= 20, 240_000, `the caller of ${DRAINED} to make 20 calls`);
      const before = await callerProgress(w, clientName(survivor));
      const drainedBefore = await drainedProgress(w);

      const rotationAt = Date.now();
      const oldCas = await w.caCertificates();
      await w.requestRotation({ secret: CA_SECRET }, ESO_NS);
      // The overlap: the next CA is published beside the old one, nothing signed by it yet. Drain now.
      await eventually(
        async () => (await w.core.readNamespacedSecret({ namespace: ESO_NS, name: CA_SECRET })).data?.['next.crt'] !== undefined,
        120_000,
        'the next CA prepared (next.crt), published beside the active one',
      );
      measured.drainStartMs = Date.now() - rotationAt;
      const evicted = await drain(w, lost);
      measured.drainMs = Date.now() - rotationAt - measured.drainStartMs;
      measured.evictedPods = evicted.length;
      expect(evicted.some((p) => p.namespace === DRAINED)).toBe(true);
      // The evicted replica's replacement is scheduled on the survivor (the preferred anti-affinity yields) and mounts its Secret.
      await eventually(
        async () => (await pods(w, DRAINED)).filter((p) => p.spec!.nodeName === survivor && ready(p)).length === 2,
        240_000,
        `${DRAINED}'s two replicas Ready on ${survivor}`,
      );
      measured.drainedReplicaBackMs = Date.now() - rotationAt;
      // The rotation goes on: every leaf moves to the next CA.
      const leaves = [...PROVIDERS, DRAINED].map((namespace) => ({ namespace, name: PROVIDER_SECRET })).concat([{ namespace: ESO_NS, name: CLIENT_SECRET }]);
      await eventually(
        async () => (await Promise.all(leaves.map(async (l) => !(await w.leafSignedBy(l.namespace, l.name, oldCas))))).every(Boolean),
        300_000,
        'every leaf issued by the next CA',
      );
      measured.rotationActivatedMs = Date.now() - rotationAt;
      await eventually(
        async () =>
          (await callerProgress(w, clientName(survivor))).every((c, i) => c.calls >= before[i]!.calls + 40) &&
          (await drainedProgress(w)).calls >= drainedBefore.calls + 40,
        180_000,
        'every caller to make 40 more calls',
      );
      const since = (fs: readonly FailedCall[]) => fs.filter((f) => f.at >= rotationAt);
      const failures = [...since(await survivorFailures(w, survivor)), ...since(failedCalls(`eso-client-${DRAINED}/${DRAINED}`, await drainedLog(w)))];
      measured.failedDuringDrain = failures.length;
      expect(failures).toEqual([]);
      await w.core.patchNode({ name: lost, body: { spec: { unschedulable: false } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    },
    20 * 60_000,
  );
});

/**
 * Scrapes, every SCRAPE_EVERY_MS until stopped, whichever replica leads and the providers' replicas
 * on `survivor` (the spread one's and the survivor's own), for a replay through the shipped rules.
 */
async function sampleAlerts(w: World, survivor: string): Promise<{ scrapes: ScrapeRecorder; stop(): Promise<void> }> {
  const answered = (scrape: () => Promise<string>): MetricsSource => ({
    metrics: () => Promise.race([scrape(), new Promise<string>((r) => setTimeout(() => r(''), SCRAPE_TIMEOUT_MS))]).catch(() => ''),
  });
  const providers = (await Promise.all([SPREAD, ON_SURVIVOR].map((ns) => pods(w, ns)))).flat().filter((p) => p.spec!.nodeName === survivor);
  const scrapes = new ScrapeRecorder([
    { source: answered(() => w.scrapeLeader()), target: { job: 'eso-mtls-controller', instance: 'leader' } },
    ...providers.map((p) => ({
      source: answered(() => w.scrapePod(p.metadata!.namespace!, `${p.metadata!.name!}:8081`)),
      target: { job: 'file-provider', instance: `${p.metadata!.name!}:8081` },
    })),
  ]);
  let running = true;
  const loop = (async () => {
    while (running) {
      const next = Date.now() + SCRAPE_EVERY_MS;
      await scrapes.scrape();
      while (running && Date.now() < next) await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return {
    scrapes,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

/**
 * The leader's pod name once it runs on `node`, where the providers were placed around. On a busy
 * machine leadership may have moved since (a renewal that missed renewDeadline): then the leader
 * elsewhere is deleted, and the replica on `node` takes over.
 */
async function leaderOn(w: World, node: string): Promise<string> {
  const onNode = async (): Promise<string | undefined> => {
    const holder = await w.leaseHolder();
    if (holder === undefined) return undefined;
    const pod = await w.core.readNamespacedPod({ namespace: ESO_NS, name: holder }).catch(() => undefined);
    return pod?.spec?.nodeName === node ? holder : undefined;
  };
  const now = await onNode();
  if (now !== undefined) return now;
  const elsewhere = await w.leaseHolder();
  if (elsewhere !== undefined) await w.core.deleteNamespacedPod({ namespace: ESO_NS, name: elsewhere });
  await eventually(async () => (await onNode()) !== undefined, 120_000, `the leader to run on ${node}`);
  await w.controllerReady();
  return (await onNode())!;
}

function clientName(node: string): string {
  return `eso-client-${node}`;
}

/**
 * The example's Deployment with `replicas` one per node (required anti-affinity), `spread`
 * replicas one per node while there is room (preferred anti-affinity, as the chart's), or one
 * replica preferring `prefer` (so it may move).
 */
function placed(manifests: Manifest[], how: { readonly replicas: number } | { readonly spread: number } | { readonly prefer: string }): Manifest[] {
  for (const m of manifests.filter((x) => x.kind === 'Deployment')) {
    const spec = (m as unknown as { spec: { replicas?: number; template: { spec: Record<string, unknown> } } }).spec;
    if ('spread' in how) {
      spec.replicas = how.spread;
      spec.template.spec.affinity = {
        podAntiAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            { weight: 100, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: PROVIDER_LABELS } } },
          ],
        },
      };
    } else if ('replicas' in how) {
      spec.replicas = how.replicas;
      spec.template.spec.affinity = {
        podAntiAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: PROVIDER_LABELS } }],
        },
      };
    } else {
      spec.template.spec.affinity = {
        nodeAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            { weight: 100, preference: { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [how.prefer] }] } },
          ],
        },
      };
    }
  }
  return manifests;
}

/** A provider that must survive a node keeps one replica through voluntary disruptions. */
function pdb(namespace: string): Manifest {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: 'file-provider', namespace },
    spec: { minAvailable: 1, selector: { matchLabels: PROVIDER_LABELS } },
  } as Manifest;
}

async function pods(w: World, namespace: string): Promise<V1Pod[]> {
  return (await w.core.listNamespacedPod({ namespace })).items.filter((p) => p.metadata?.deletionTimestamp === undefined);
}

async function readyEndpointOn(w: World, namespace: string, node: string): Promise<boolean> {
  const slices = await w.objects.list<{ endpoints?: { nodeName?: string; conditions?: { ready?: boolean } }[] } & Manifest>(
    'discovery.k8s.io/v1',
    'EndpointSlice',
    namespace,
  );
  return slices.items.some((s) => (s.endpoints ?? []).some((e) => e.nodeName === node && e.conditions?.ready === true));
}

async function callerProgress(w: World, pod: string): Promise<{ calls: number }[]> {
  return Promise.all(
    PROVIDERS.map(async (p) => lastProgress(await w.core.readNamespacedPodLog({ namespace: ESO_NS, name: pod, container: p }).catch(() => ''))),
  );
}

async function survivorFailures(w: World, survivor: string): Promise<FailedCall[]> {
  const pod = clientName(survivor);
  return (
    await Promise.all(PROVIDERS.map(async (p) => failedCalls(`${pod}/${p}`, await w.core.readNamespacedPodLog({ namespace: ESO_NS, name: pod, container: p }))))
  ).flat();
}

/** Each provider's and ESO's client's leaf serial. */
async function leafSerials(w: World): Promise<Record<string, string>> {
  const serial = async (namespace: string, name: string): Promise<string> =>
    new X509Certificate(Buffer.from((await w.core.readNamespacedSecret({ namespace, name })).data!['tls.crt']!, 'base64')).serialNumber;
  const entries = await Promise.all([
    ...PROVIDERS.map(async (ns) => [ns, await serial(ns, PROVIDER_SECRET)] as const),
    (async () => [ESO_NS, await serial(ESO_NS, CLIENT_SECRET)] as const)(),
  ]);
  return Object.fromEntries(entries);
}

/** How many times each error was seen, its addresses and ports masked so that one cause is one key. */
function tally(messages: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const m of messages) {
    const key = m.replace(/\d+\.\d+\.\d+\.\d+(:\d+)?/g, '<addr>').slice(0, 200);
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

function ready(p: V1Pod): boolean {
  return p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

async function drainedLog(w: World): Promise<string> {
  return w.core.readNamespacedPodLog({ namespace: ESO_NS, name: `eso-client-${DRAINED}`, container: DRAINED }).catch(() => '');
}

async function drainedProgress(w: World): Promise<{ calls: number }> {
  return lastProgress(await drainedLog(w));
}

/**
 * What `kubectl drain` does: cordons `node`, then evicts each of its pods through the Eviction API,
 * which refuses (429) while a PodDisruptionBudget allows no disruption: such a pod is asked again
 * until it is allowed. Resolves with the pods evicted, once each is gone.
 */
async function drain(w: World, node: string): Promise<{ namespace: string; name: string }[]> {
  await w.core.patchNode({ name: node, body: { spec: { unschedulable: true } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  const onNode = (await w.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` })).items.filter(
    (p) => p.metadata?.deletionTimestamp === undefined && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed',
  );
  const evicted = onNode.map((p) => ({ namespace: p.metadata!.namespace!, name: p.metadata!.name! }));
  for (const pod of evicted) {
    await eventually(
      async () => {
        try {
          await w.core.createNamespacedPodEviction({ ...pod, body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: pod } });
          return true;
        } catch (e) {
          if ((e as { code?: number }).code === 429) return false;
          throw e;
        }
      },
      300_000,
      `the eviction of ${pod.namespace}/${pod.name} allowed`,
    );
  }
  for (const pod of evicted) {
    await eventually(
      async () => (await w.core.readNamespacedPod(pod).catch(() => undefined))?.metadata?.uid === undefined,
      180_000,
      `${pod.namespace}/${pod.name} gone`,
    );
  }
  return evicted;
}
