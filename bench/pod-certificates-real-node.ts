/**
 * The pod-certificate mode on a real kubelet (issue 24), beside bench/pod-certificates.ts, whose
 * 1,000-pod throughput run stays on the kubelet stand-in. One real node (testing/real-node's
 * cluster: containerd, runc, kubelet v1.37.2, the controllers, CoreDNS); the chart installed from
 * the local controller image with modes `secret,pod-certificate` and 2 replicas, as the real-node
 * suite installs it. Then, in M namespaces shaped like deploy/examples/file-provider-pod-certificates
 * (its Namespace, its labelled Service, its pod template with a pause container in place of the
 * provider): first every Service at once, timed until its provider Secret appears (Secret mode);
 * then lone pods, one at a time, each waited for until Running, so that each request meets an idle
 * signer; then as many pods as the node takes (at most 100), each projecting a `podCertificate`
 * volume the real kubelet fills: its key, its PodCertificateRequest.
 *
 * Every time comes from the apiserver, through watches in this process: request added → Issued,
 * both as the watch sees them (creationTimestamp and the condition's lastTransitionTime are whole
 * seconds); pod create call returned → the watch sees it Running; first pod create sent → last
 * Issued seen. Needs root, as the real-node suite; the cluster is stopped at the end, on failure too.
 *
 *   npm run bench -- pod-certificates-real-node
 *   node --import ./scripts/register-ts.mjs bench/pod-certificates-real-node.ts [pods] [namespaces]
 */
import 'reflect-metadata';
import { X509Certificate } from 'node:crypto';
import { loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import { Informer, KubeRestClient, type ListPage, certificatesPath, connectionFromKubeConfig, corePath, terminalCondition } from '@eso-mtls/kubernetes';
import type { V1Pod } from '@kubernetes/client-node';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { type Manifest, kustomizeBuild } from '@eso-mtls/test-kit/manifests';
import { NODE_NAME } from '@eso-mtls/devtools/cluster';
import { stubRequestPublicKey } from '../packages/core/src/pod/stub-request.js';
import { type TestCluster, startTestCluster } from '../testing/real-node/support/cluster.js';
import { World, pemCertificates } from '../testing/real-node/support/world.js';
import { pool, providerSecretInformer } from './kubernetes.bench.js';
import { type Spread, spread } from './spread.js';

const SERVER_SIGNER = 'eso-mtls.io/provider-server';
const EXAMPLE = 'deploy/examples/file-provider-pod-certificates';
/** At most this many pods: about what one node takes (the kubelet's default maxPods is 110). */
const MAX_PODS = 100;
/** Lone pods made one at a time before the burst, each request timed with the signer idle. */
const LONE_PODS = 8;
/** The names of the lone pods start so; the burst's are `pod-N`. */
const LONE_PREFIX = 'lone-';
/** A lone pod's wait for Running: a sandbox on a quiet node takes seconds. */
const LONE_WAIT_MS = 3 * 60_000;
/** Pod create calls in flight. */
const CONCURRENCY = 16;
/** The whole run, cluster start included, before it stops the cluster and gives up. */
const GIVE_UP_MS = 45 * 60_000;
/**
 * Waits for each phase: every Secret; every pod Running with its request decided. On a loaded
 * 2-core machine 100 pod sandboxes took 11 minutes; past this wait the figures cover the pods
 * Running by then, and say so.
 */
const SECRETS_WAIT_MS = 5 * 60_000;
const PODS_WAIT_MS = 25 * 60_000;

/** What {@link runRealNodePodCertificateBenchmark} measures. Times in milliseconds unless named seconds. */
export interface RealNodePodCertificateBenchmark {
  /** "real kubelet v1.37.2, containerd v2.4.2", as the Node reports them. */
  readonly kubelet: string;
  readonly pods: number;
  readonly namespaces: number;
  /** The node's allocatable pods, and the pods already on it (the controller's replicas) when the bench's began. */
  readonly nodeAllocatablePods: number;
  readonly podsAlreadyOnNode: number;
  /** The 1-minute load average before the cluster started, before the pods, and at the end. */
  readonly load: { readonly start: number; readonly beforePods: number; readonly end: number };
  readonly clusterStartSeconds: number;
  readonly installSeconds: number;
  /** Secret mode: each labelled Service's create call returned → its provider Secret seen; first create sent → last Secret seen. */
  readonly secretMode: { readonly perService: Spread; readonly convergeSeconds: number };
  /** The bench's pods' requests: added → Issued as the watch saw them. */
  readonly issue: Spread;
  /**
   * The lone pods' requests, each made with the signer idle: added → Issued as the watch saw them;
   * and the pod's create call returned → its request Issued (the kubelet's part before it asks included).
   */
  readonly lone: { readonly issue: Spread; readonly fromCreate: Spread };
  /** Pod create call returned → the watch saw it Running. */
  readonly podStart: Spread;
  /** The pod's request Issued → the pod Running, both as the watches saw them: the kubelet's part after issuance. */
  readonly issuedToRunning: Spread;
  /** The kubelet's FailedMount Events on the bench's pods (their counts summed), the pods with one, and the commonest message. */
  readonly failedMounts: { readonly events: number; readonly pods: number; readonly message: string };
  /** First pod create sent → last request Issued seen; → last pod Running seen. */
  readonly issuedWallSeconds: number;
  readonly runningWallSeconds: number;
  /** First pod create sent → the last request added (the kubelet's pace of making them). */
  readonly requestsMadeSeconds: number;
  /** Pods Running when the wait for them ended ({@link pods} unless it ran out). */
  readonly running: number;
  readonly requests: number;
  readonly issued: number;
  /** Requests that ended Denied or Failed, by "condition reason". */
  readonly refused: Record<string, number>;
  /** Issued leaves not holding the request's key, naming the Service, or signed by a CA of the server signer's trust bundles. */
  readonly invalidLeaves: number;
}

/** A request as read here: the key the kubelet made, and the chain it got. */
type PodCertificateRequest = Manifest & {
  metadata: { name: string; namespace: string; uid: string };
  spec: { signerName: string; podName: string; stubPKCS10Request: string };
  status?: { certificateChain?: string; conditions?: { type?: string; reason?: string; message?: string }[] };
};

const progress = (what: string): boolean => process.stderr.write(`bench: pod-certificates-real-node: ${what}\n`);

/** The example's Namespace, Service and pod template, built by kustomize as users build it. */
function exampleShapes(): { readonly namespace: Manifest; readonly service: Manifest; readonly template: V1Pod } {
  const manifests = kustomizeBuild(EXAMPLE);
  const of = (kind: string): Manifest => {
    const m = manifests.find((x) => x.kind === kind);
    if (m === undefined) throw new Error(`${EXAMPLE} has no ${kind} any more: update bench/pod-certificates-real-node.ts`);
    return m;
  };
  return { namespace: of('Namespace'), service: of('Service'), template: (of('Deployment') as unknown as { spec: { template: V1Pod } }).spec.template };
}

/**
 * A pod of the example's template, its provider container replaced by the pause image (nothing
 * pulled) that mounts the same projected volume. Its resource requests go too: 100 pods at the
 * provider's 20m would ask for the node's whole CPU.
 */
function pausePod(template: V1Pod, name: string, image: string): V1Pod {
  const spec = template.spec!;
  const provider = spec.containers[0]!;
  const volume = spec.volumes!.find((v) => v.projected?.sources?.some((s) => 'podCertificate' in s));
  if (volume === undefined) throw new Error(`${EXAMPLE}'s pod template projects no podCertificate volume any more: update bench/pod-certificates-real-node.ts`);
  const mount = provider.volumeMounts!.find((m) => m.name === volume.name)!;
  return {
    metadata: { name, labels: template.metadata!.labels },
    spec: {
      automountServiceAccountToken: spec.automountServiceAccountToken,
      securityContext: spec.securityContext,
      containers: [{ name: 'pause', image, imagePullPolicy: 'Never', securityContext: provider.securityContext, volumeMounts: [mount] }],
      volumes: [volume],
    },
  };
}

/** True when the chain's leaf holds the request's key, names `dnsName`, and one of `cas` signed it. */
function validLeaf(request: PodCertificateRequest, dnsName: string, cas: readonly X509Certificate[]): boolean {
  const [leaf] = pemCertificates(request.status?.certificateChain ?? '');
  if (leaf === undefined) return false;
  const spki = leaf.publicKey.export({ type: 'spki', format: 'der' });
  return (
    spki.equals(stubRequestPublicKey(Buffer.from(request.spec.stubPKCS10Request, 'base64'))) &&
    leaf.checkHost(dnsName) !== undefined &&
    cas.some((ca) => leaf.checkIssued(ca) && leaf.verify(ca.publicKey))
  );
}

/** A list+watch of `path` (selected), calling `seen` with each object as the watch delivers it. */
async function watchAll<T extends Manifest>(
  api: KubeRestClient,
  resource: string,
  path: string,
  selector: { readonly labelSelector?: string; readonly fieldSelector?: string },
  seen: (object: T) => void,
): Promise<Informer<T>> {
  const informer = new Informer<T>(
    { description: `bench: ${resource}`, resource, list: (page) => api.get<ListPage<T>>(path, { ...selector, ...page }), watchPath: path, ...selector },
    { watch: api, counter: api.counter },
  );
  informer.onChange((e) => e.type !== 'DELETED' && seen(e.object));
  informer.start();
  await informer.synced;
  return informer;
}

/** The kubelet's FailedMount Events in `namespaces`: a mount tried before its certificate was issued, then retried with backoff. */
async function failedMountEvents(world: World, namespaces: readonly string[]): Promise<RealNodePodCertificateBenchmark['failedMounts']> {
  const events = (await Promise.all(namespaces.map((namespace) => world.core.listNamespacedEvent({ namespace, fieldSelector: 'reason=FailedMount' })))).flatMap(
    (l) => l.items,
  );
  const byMessage = new Map<string, number>();
  // The message names the pod's key; the rest of it is what the kubelet met.
  for (const e of events) {
    const message = (e.message ?? '').replace(/key=\{[^}]*\}/, 'key={...}');
    byMessage.set(message, (byMessage.get(message) ?? 0) + (e.count ?? 1));
  }
  const [message = ''] = [...byMessage].sort((a, b) => b[1] - a[1]).map(([m]) => m);
  return {
    events: events.reduce((n, e) => n + (e.count ?? 1), 0),
    pods: new Set(events.map((e) => `${e.involvedObject.namespace}/${e.involvedObject.name}`)).size,
    message,
  };
}

/** One run: the cluster, the chart, M namespaces' Services (Secret mode), then the pods (pod-certificate mode). */
export async function runRealNodePodCertificateBenchmark(maxPods = MAX_PODS, namespaceCount = 10): Promise<RealNodePodCertificateBenchmark> {
  let tc: TestCluster | undefined;
  let w: World | undefined;
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      w?.helm.remove();
      await tc?.cluster.stop();
    })());
  const abandon = (why: string): void => {
    progress(`${why}: stopping the cluster`);
    void stop().finally(() => process.exit(1));
  };
  const giveUp = setTimeout(() => abandon(`gave up after ${GIVE_UP_MS / 60_000} minutes`), GIVE_UP_MS);
  const onSignal = (signal: NodeJS.Signals): void => abandon(signal);
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
  const loadStart = loadavg()[0]!;
  try {
    progress('starting the real cluster');
    let t = performance.now();
    tc = await startTestCluster();
    const clusterStartSeconds = (performance.now() - t) / 1000;
    const world = (w = new World(tc));
    progress('helm install, modes secret and pod-certificate');
    t = performance.now();
    await world.install({ modes: ['secret', 'pod-certificate'] });
    const installSeconds = (performance.now() - t) / 1000;

    const node = await world.core.readNode({ name: NODE_NAME });
    const info = node.status!.nodeInfo!;
    const kubelet = `real kubelet ${info.kubeletVersion}, ${info.containerRuntimeVersion.replace('://', ' ')}`;
    const nodeAllocatablePods = Number(node.status!.allocatable!.pods);
    const onNode = (await world.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${NODE_NAME}` })).items;
    const podsAlreadyOnNode = onNode.filter((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed').length;
    const pods = Math.min(maxPods, nodeAllocatablePods - podsAlreadyOnNode - LONE_PODS);
    const namespaces = Array.from({ length: namespaceCount }, (_, i) => `bench-pc-${i}`);
    const example = exampleShapes();
    const inNamespace = (m: Manifest, ns: string): Manifest => {
      const copy = structuredClone(m);
      Object.assign(copy.metadata!, m.kind === 'Namespace' ? { name: ns } : { namespace: ns });
      return copy;
    };
    const api = new KubeRestClient(await connectionFromKubeConfig(world.admin), { maxSockets: CONCURRENCY });

    // Secret mode: every Service at once, each timed from its create call to its Secret.
    progress(`Secret mode: ${namespaceCount} labelled Services`);
    for (const ns of namespaces) await api.create(corePath('namespaces'), inNamespace(example.namespace, ns));
    const serviceCreated = new Map<string, number>();
    const secretSeen = new Map<string, number>();
    const secrets = providerSecretInformer(api);
    secrets.onChange(({ type, object }) => {
      const ns = object.metadata?.namespace ?? '';
      if (type !== 'DELETED' && object.data?.['tls.crt'] && !secretSeen.has(ns)) secretSeen.set(ns, performance.now());
    });
    secrets.start();
    await secrets.synced;
    const secretsStart = performance.now();
    await Promise.all(
      namespaces.map(async (ns) => {
        await api.create(corePath('services', ns), inNamespace(example.service, ns));
        serviceCreated.set(ns, performance.now());
      }),
    );
    await eventually(() => namespaces.every((ns) => secretSeen.has(ns)), SECRETS_WAIT_MS, `a provider Secret in each of ${namespaceCount} namespaces`);
    await secrets.stop();
    const secretMode = {
      perService: spread(namespaces.map((ns) => secretSeen.get(ns)! - serviceCreated.get(ns)!)),
      convergeSeconds: (Math.max(...secretSeen.values()) - secretsStart) / 1000,
    };
    // Pods need their namespace's default ServiceAccount (kube-controller-manager makes it).
    await eventually(
      async () => (await Promise.all(namespaces.map((ns) => world.core.listNamespacedServiceAccount({ namespace: ns })))).every((l) => l.items.length > 0),
      60_000,
      "each bench namespace's default ServiceAccount",
    );

    // Pod-certificate mode: the pods, each timed to Running; their requests, each added → Issued.
    // The lone pods' requests are kept apart from the burst's.
    const ours = new Set(namespaces);
    type Seen = { readonly added: Map<string, number>; readonly decided: Map<string, { at: number; request: PodCertificateRequest }> };
    const burst: Seen = { added: new Map(), decided: new Map() };
    const lone: Seen = { added: new Map(), decided: new Map() };
    const { added: requestAdded, decided: requestDecided } = burst;
    const requests = await watchAll<PodCertificateRequest>(
      api,
      'podcertificaterequests',
      certificatesPath('podcertificaterequests'),
      { fieldSelector: `spec.signerName=${SERVER_SIGNER}` },
      (r) => {
        if (!ours.has(r.metadata.namespace)) return;
        const now = performance.now();
        const { added, decided } = r.spec.podName.startsWith(LONE_PREFIX) ? lone : burst;
        if (!added.has(r.metadata.uid)) added.set(r.metadata.uid, now);
        if (terminalCondition(r) !== undefined && !decided.has(r.metadata.uid)) decided.set(r.metadata.uid, { at: now, request: r });
      },
    );
    const key = (o: { metadata?: { namespace?: string; name?: string } }): string => `${o.metadata!.namespace}/${o.metadata!.name}`;
    const podCreated = new Map<string, number>();
    const podRunning = new Map<string, number>();
    const loneRunning = new Map<string, number>();
    const podWatch = await watchAll<V1Pod & Manifest>(
      api,
      'pods',
      corePath('pods'),
      {
        labelSelector: Object.entries(example.template.metadata!.labels!)
          .map(([k, v]) => `${k}=${v}`)
          .join(','),
      },
      (p) => {
        if (!ours.has(p.metadata!.namespace!) || p.status?.phase !== 'Running') return;
        const running = p.metadata!.name!.startsWith(LONE_PREFIX) ? loneRunning : podRunning;
        if (!running.has(key(p))) running.set(key(p), performance.now());
      },
    );
    progress(`pod-certificate mode: ${LONE_PODS} lone pods, one at a time`);
    const loneIssue: number[] = [];
    const loneFromCreate: number[] = [];
    for (let i = 0; i < LONE_PODS; i++) {
      const ns = namespaces[i % namespaceCount]!;
      const name = `${LONE_PREFIX}${i}`;
      await api.create(corePath('pods', ns), pausePod(example.template, name, tc.images.byRole.pause.name));
      const created = performance.now();
      const decision = (): { at: number; request: PodCertificateRequest } | undefined =>
        [...lone.decided.values()].find(({ request: r }) => r.metadata.namespace === ns && r.spec.podName === name);
      await eventually(
        () => decision() !== undefined && loneRunning.has(`${ns}/${name}`),
        LONE_WAIT_MS,
        `lone pod ${ns}/${name} Running with its request decided`,
      );
      const { at, request } = decision()!;
      if (terminalCondition(request)!.type === 'Issued') {
        loneIssue.push(at - lone.added.get(request.metadata.uid)!);
        loneFromCreate.push(at - created);
      }
    }
    const specs = Array.from({ length: pods }, (_, i) => ({ ns: namespaces[i % namespaceCount]!, name: `pod-${Math.floor(i / namespaceCount)}` }));
    const loadBeforePods = loadavg()[0]!;
    progress(`pod-certificate mode: ${pods} pods (the node allows ${nodeAllocatablePods}, ${podsAlreadyOnNode} already on it)`);
    const reporter = setInterval(() => progress(`${podCreated.size} created, ${requestDecided.size} requests decided, ${podRunning.size} Running`), 10_000);
    const podsStart = performance.now();
    try {
      await pool(specs, CONCURRENCY, async ({ ns, name }) => {
        await api.create(corePath('pods', ns), pausePod(example.template, name, tc!.images.byRole.pause.name));
        podCreated.set(`${ns}/${name}`, performance.now());
      });
      const decidedPods = (): Set<string> => new Set([...requestDecided.values()].map(({ request: r }) => `${r.metadata.namespace}/${r.spec.podName}`));
      const everyPod = (): boolean => podRunning.size === pods && decidedPods().size === pods;
      await eventually(everyPod, PODS_WAIT_MS, `${pods} pods Running with their requests decided`).catch((e: unknown) => {
        if (decidedPods().size < pods) throw e;
        progress(`${podRunning.size} of ${pods} pods Running after ${PODS_WAIT_MS / 60_000} minutes: the figures cover those`);
      });
    } finally {
      clearInterval(reporter);
      await requests.stop();
      await podWatch.stop();
    }

    const cas = (await world.trustBundles())
      .filter((b) => (b.spec as { signerName?: string }).signerName === SERVER_SIGNER)
      .flatMap((b) => pemCertificates(b.spec.trustBundle));
    const refused: Record<string, number> = {};
    const issuedAt: number[] = [];
    const issueMs: number[] = [];
    let invalidLeaves = 0;
    for (const [uid, { at, request }] of requestDecided) {
      const condition = terminalCondition(request)!;
      if (condition.type !== 'Issued') {
        const why = `${condition.type} ${condition.reason}: ${condition.message}`;
        refused[why] = (refused[why] ?? 0) + 1;
        continue;
      }
      issuedAt.push(at);
      issueMs.push(at - requestAdded.get(uid)!);
      if (!validLeaf(request, `${example.service.metadata!.name}.${request.metadata.namespace}.svc`, cas)) invalidLeaves++;
    }
    const issuedPod = new Map<string, number>();
    for (const { at, request } of requestDecided.values()) {
      const pod = `${request.metadata.namespace}/${request.spec.podName}`;
      if (terminalCondition(request)!.type === 'Issued') issuedPod.set(pod, Math.min(at, issuedPod.get(pod) ?? Infinity));
    }
    const failedMounts = await failedMountEvents(world, namespaces);
    api.close();
    return {
      kubelet,
      pods,
      namespaces: namespaceCount,
      nodeAllocatablePods,
      podsAlreadyOnNode,
      load: { start: loadStart, beforePods: loadBeforePods, end: loadavg()[0]! },
      clusterStartSeconds,
      installSeconds,
      secretMode,
      issue: spread(issueMs),
      lone: { issue: spread(loneIssue), fromCreate: spread(loneFromCreate) },
      podStart: spread([...podRunning].map(([k, at]) => at - podCreated.get(k)!)),
      issuedToRunning: spread([...podRunning].filter(([k]) => issuedPod.has(k)).map(([k, at]) => at - issuedPod.get(k)!)),
      failedMounts,
      issuedWallSeconds: (Math.max(...issuedAt) - podsStart) / 1000,
      runningWallSeconds: (Math.max(...podRunning.values()) - podsStart) / 1000,
      requestsMadeSeconds: (Math.max(...requestAdded.values()) - podsStart) / 1000,
      running: podRunning.size,
      requests: requestAdded.size,
      issued: issuedAt.length,
      refused,
      invalidLeaves,
    };
  } finally {
    clearTimeout(giveUp);
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
    progress('stopping the cluster');
    await stop();
  }
}

/** The figures as a markdown table, labelled with the kubelet they came from. */
export function formatRealNodePodCertificateBenchmark(r: RealNodePodCertificateBenchmark): string {
  const s = (v: number): string => `${(v / 1000).toFixed(2)} s`;
  const p = (x: Spread): string => `${s(x.p50)} / ${s(x.p99)} / ${s(x.max)} (n = ${x.n})`;
  const ms = (x: Spread): string => `${x.p50.toFixed(1)} / ${x.p99.toFixed(1)} / ${x.max.toFixed(1)} ms`;
  const refused = Object.entries(r.refused).map(([why, n]) => `${n} x ${why}`);
  return [
    `| ${r.kubelet}: ${r.pods} pods created together in ${r.namespaces} namespaces, one node | |`,
    '|---|---:|',
    `| node: allocatable pods / already on it (the controller's replicas) | ${r.nodeAllocatablePods} / ${r.podsAlreadyOnNode} |`,
    `| requests made by the kubelet / Issued / leaves failing the check (key, name, CA) | ${r.requests} / ${r.issued} / ${r.invalidLeaves}${refused.length ? ` (refused: ${refused.join('; ')})` : ''} |`,
    `| request added → Issued, as the watch saw them, p50 / p99 / max | ${p(r.issue)} |`,
    `| ${r.lone.issue.n} lone pods, one at a time (signer idle): request added → Issued, p50 / p99 / max | ${ms(r.lone.issue)} |`,
    `| the same, from the lone pod's create call returned (the kubelet's part before it asks included) | ${ms(r.lone.fromCreate)} |`,
    `| pod create returned → Running seen, p50 / p99 / max | ${p(r.podStart)} |`,
    `| the pod's request Issued → the pod Running (the kubelet's part after issuance), p50 / p99 / max | ${p(r.issuedToRunning)} |`,
    `| the kubelet's FailedMount Events before the mount succeeded: events / pods | ${r.failedMounts.events} / ${r.failedMounts.pods}${r.failedMounts.message ? ` (commonest: "${r.failedMounts.message}")` : ''} |`,
    `| first pod create → last request made by the kubelet / → last Issued | ${r.requestsMadeSeconds.toFixed(2)} s / ${r.issuedWallSeconds.toFixed(2)} s |`,
    `| first pod create → last pod Running | ${r.runningWallSeconds.toFixed(2)} s${r.running < r.pods ? ` (only ${r.running} of ${r.pods} Running when the wait ended)` : ''} |`,
    `| Secret mode, same ${r.namespaces} namespaces: Service create → provider Secret seen, p50 / p99 / max | ${p(r.secretMode.perService)} |`,
    `| Secret mode: first Service create → last Secret seen | ${r.secretMode.convergeSeconds.toFixed(2)} s |`,
    `| ratio pod-certificate (first create → last Issued) / Secret mode | ${(r.issuedWallSeconds / r.secretMode.convergeSeconds).toFixed(1)} |`,
    `| cluster start (startTestCluster) / helm install → both replicas Ready | ${r.clusterStartSeconds.toFixed(1)} s / ${r.installSeconds.toFixed(1)} s |`,
    `| 1-minute load average: start / before the pods / end | ${r.load.start.toFixed(1)} / ${r.load.beforePods.toFixed(1)} / ${r.load.end.toFixed(1)} |`,
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [pods, namespaces] = process.argv.slice(2).map(Number);
  console.log(formatRealNodePodCertificateBenchmark(await runRealNodePodCertificateBenchmark(pods || undefined, namespaces || undefined)));
}
