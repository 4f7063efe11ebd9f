/**
 * The pod-certificate mode against a real kube-apiserver with the Node authorizer and
 * NodeRestriction: P pods in N namespaces (one labelled Service per namespace selecting its pods),
 * bound to one node whose kubelet stand-in asks for each pod's server certificate as
 * `system:node:<name>`, with a fresh P-256 key and a stub PKCS#10 request. The adapter runs in this
 * process in pod-certificate mode only (no Secret mode). Measured: request created → the node's
 * watch sees Issued, p50 and p99; requests issued per second of wall time (first create to last
 * Issued); this process's RSS and heap (after a full GC, and the RSS peak while requests were
 * signed), which include the kubelet stand-in's; every leaf checked (the request's key, the
 * Service's name, a CA of the trust bundle); and how long after the last Issued the signer's last
 * Event was done. Then the same live part again on fresh adapters with other settings (the
 * Events' requests in flight and window, 8 decisions in flight). Then one more request per pod,
 * made while no signer runs, and a fresh adapter's start → last Issued (the signer's own rate on a
 * backlog, as after an outage), first with 8 decisions in flight, then 16. Then, in the same run, an adapter in Secret mode: start → a provider Secret with a valid
 * leaf in every one of the same N namespaces, and the ratio of the two.
 *
 *   node --import ./scripts/register-ts.mjs bench/pod-certificates.ts [pods] [namespaces]
 */
import 'reflect-metadata';
import { X509Certificate } from 'node:crypto';
import { loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { PROVIDER_LABEL } from '@eso-mtls/core';
import { type AdapterOptions, KubeRestClient, type PodStage, ProviderCertificateAdapter, connectionFromKubeConfig, corePath } from '@eso-mtls/kubernetes';
import type { V1Secret } from '@kubernetes/client-node';
import { nodeIdentity, startControlPlane } from '../testing/envtest/src/index.js';
import { type KubeletPod, PodCertificateKubelet } from '../testing/kubelet/index.js';
import { ADAPTER_LOGGER, ESO, pool, providerSecretInformer } from './kubernetes.bench.js';
import { type Spread, percentile, sorted, spread } from './spread.js';

const SERVER_SIGNER = 'eso-mtls.io/provider-server';
const CLIENT_SIGNER = 'eso-mtls.io/eso-client';
const POD_CERTIFICATES = { serverSignerName: SERVER_SIGNER, clientSignerName: CLIENT_SIGNER, maxValidity: 86_400_000 };
const TRUST_SELECTOR = { matchLabels: { 'eso-mtls.io/trust-bundle': 'true' } };
const NODE = 'bench-node';
/** Pods and namespaces created, requests created: this many in flight (the kubelet client's socket pool). */
const CONCURRENCY = 16;
const GIVE_UP_MS = 15 * 60_000;
/** The backlog adapter's reconcile interval: long enough that its drain ends first, so the probes see the recount alone. */
const RECOUNT_INTERVAL_MS = 45_000;

/** What {@link runPodCertificateBenchmark} measures. Times in milliseconds unless named seconds. */
export interface PodCertificateBenchmark {
  readonly pods: number;
  readonly namespaces: number;
  readonly setupSeconds: number;
  /** Adapter start → its first reconcile with nothing to write (CA and trust bundles in place). */
  readonly adapterReadySeconds: number;
  readonly issued: number;
  /** Requests that ended Denied or Failed, by "condition reason". */
  readonly refused: Record<string, number>;
  /** Issued leaves that did not hold the request's key, a CA of the trust bundle's, or the Service's name. */
  readonly invalidLeaves: number;
  /** The kubelet's part: the create call (key generation, stub request, POST), p50 and p99. */
  readonly createP50: number;
  readonly createP99: number;
  /** Create call returned → the node's watch saw Issued. */
  readonly issueP50: number;
  readonly issueP99: number;
  readonly issueMax: number;
  /** First create sent → last Issued seen; last create returned → last Issued seen. */
  readonly wallSeconds: number;
  readonly drainSeconds: number;
  readonly requestsPerSecond: number;
  /** The adapter's reconcile rounds from the first create until it settled again (the last one wrote nothing). */
  readonly rounds: number;
  /** This process's CPU over the same window (the adapter and the kubelet stand-in). */
  readonly cpuSeconds: number;
  /** RSS and V8 heap in MB after a full GC: before the adapter, with it started and settled, and after every request was issued. */
  readonly memory: Record<'beforeAdapter' | 'adapterSettled' | 'afterIssued', { readonly rss: number; readonly heap: number }>;
  /** The RSS peak sampled (every 100 ms) while requests were created and signed. */
  readonly peakRssMb: number;
  /** The adapter's requests from the first create to the last Issued, by "verb resource". */
  readonly adapterRequests: Record<string, number>;
  /** Each request's time in the signer, by stage (queue wait, pod read, sign, status write). */
  readonly stages: Stages;
  /** Pod reads answered by the metadata-only cache, and by a GET. */
  readonly podReads: { readonly cache: number; readonly api: number };
  /** {@link issueAll}'s Event figures, for the live part. */
  readonly events: EventTrail;
  /**
   * The live part again, in the same run, on a fresh adapter each: other settings of the pod
   * signer's Events, 8 decisions in flight against 16, and the defaults once more (the drift of
   * the run: etcd holds more each time).
   */
  readonly passes: readonly LivePass[];
  /** The 1-minute load average at the run's start (before the control plane) and end. */
  readonly load: { readonly start: number; readonly end: number };
  /** One more request per pod, created while no signer ran, then a fresh adapter: start → last Issued seen, and the drain alone. */
  readonly backlog: Backlog;
  /** A backlog made the same way just before, drained by an adapter with writeConcurrency 8 (8 decisions in flight, as beside the Secret mode) instead of 16. */
  readonly backlogAt8: Backlog;
  /**
   * The apiserver's own rate for status writes, with no signer: one more request per pod, made
   * with no signer running, then a Denied status PUT by the bench on each (no chain for the
   * apiserver to check, so an upper bound for Issued writes): half with the signer's 8 in flight,
   * half with 16.
   */
  readonly statusWriteLimit: { readonly at8: number; readonly at16: number };
  /** The signer's stale-names recount over the pods it issued to (one metadata GET each, in turn), its duration and its count. */
  readonly staleRecount: { readonly seconds: number; readonly trackedPods: number; readonly stale: number };
  /** {@link probeRecount}'s figures. */
  readonly recountProbe: RecountProbe;
  /** Secret mode over the same namespaces: adapter start → every provider Secret holds a valid leaf. */
  readonly secretModeSeconds: number;
  readonly secretModeRssMb: number;
}

const mb = (bytes: number): number => bytes / 2 ** 20;

/** The signer's stages, p50 / p99 / max each. */
type Stages = Record<PodStage, Spread>;
const STAGES: readonly PodStage[] = ['queueWait', 'podRead', 'sign', 'statusWrite'];
const stagesOf = (adapter: ProviderCertificateAdapter): Stages =>
  Object.fromEntries(STAGES.map((stage) => [stage, spread(adapter.podSigner!.stages.of(stage))])) as Stages;

/** Events the adapter had sent (created or patched) when the last certificate was issued, in all, and when the last finished. */
interface EventTrail {
  readonly atLastIssued: number;
  readonly total: number;
  /** The last Event request of the pod signer finished, ms after the last Issued was seen. */
  readonly trailMs: number;
}

/** One live pass: 1,000 requests while the signer runs, on an adapter with `options`. */
interface LivePass {
  readonly label: string;
  readonly issued: number;
  /** Request created → Issued seen. */
  readonly issue: Spread;
  readonly statusWrite: Spread;
  readonly wallSeconds: number;
  readonly events: EventTrail;
}

/** A backlog drained by a fresh adapter (see {@link drainBacklog}). */
interface Backlog {
  readonly seconds: number;
  readonly issued: number;
  readonly refused: Record<string, number>;
  readonly invalidLeaves: number;
  /** The drain alone: the first decision → the last Issued seen (the adapter's start and first reconcile left out). */
  readonly drainSeconds: number;
  readonly stages: Stages;
}

/** A full collection: with --expose-gc its gc(), else V8's flag set at run time (the same function). */
function collectGarbage(): void {
  if (typeof globalThis.gc !== 'function') {
    setFlagsFromString('--expose-gc');
    globalThis.gc = runInNewContext('gc') as typeof globalThis.gc;
  }
  globalThis.gc!();
}

/** This process's RSS and V8 heap used, in MB, after a full collection. */
function afterGc(): { rss: number; heap: number } {
  collectGarbage();
  const { rss, heapUsed } = process.memoryUsage();
  return { rss: mb(rss), heap: mb(heapUsed) };
}

/** True when the first certificate of `chain` holds `publicKey`, names `dnsName`, and one of `cas` signed it. */
function validLeaf(chain: string, publicKey: X509Certificate['publicKey'], dnsName: string, cas: readonly X509Certificate[]): boolean {
  const first = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/.exec(chain)?.[0];
  if (!first) return false;
  const leaf = new X509Certificate(first);
  const der = (k: typeof publicKey): Buffer => k.export({ type: 'spki', format: 'der' });
  return (
    der(leaf.publicKey).equals(der(publicKey)) && leaf.checkHost(dnsName) !== undefined && cas.some((ca) => leaf.checkIssued(ca) && leaf.verify(ca.publicKey))
  );
}

/** The CAs in a PEM bundle. */
const certificatesIn = (pem: string): X509Certificate[] =>
  (pem.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? []).map((p) => new X509Certificate(p));

/** Creates the ESO namespace, then per namespace a labelled headless Service selecting `app: provider`, and its pods on the kubelet's node. */
async function createPods(
  admin: KubeRestClient,
  kubelet: PodCertificateKubelet,
  namespaces: readonly string[],
  pods: number,
  step: Step,
): Promise<KubeletPod[]> {
  await admin.create(corePath('namespaces'), { metadata: { name: ESO } });
  await pool(namespaces, CONCURRENCY, async (ns) => {
    await admin.create(corePath('namespaces'), { metadata: { name: ns } });
    await admin.create(corePath('services', ns), {
      metadata: { name: 'provider', labels: { [PROVIDER_LABEL]: 'true' } },
      spec: { clusterIP: 'None', selector: { app: 'provider' }, ports: [{ port: 8443 }] },
    });
  });
  const specs = Array.from({ length: pods }, (_, i) => ({
    namespace: namespaces[i % namespaces.length]!,
    name: `provider-${Math.floor(i / namespaces.length)}`,
  }));
  const running: KubeletPod[] = [];
  await pool(specs, CONCURRENCY, async ({ namespace, name }) => {
    running.push(
      await kubelet.runPod({
        namespace,
        name,
        serviceAccountName: 'provider',
        labels: { app: 'provider' },
        podCertificate: { signerName: SERVER_SIGNER, keyType: 'ECDSAP256', maxExpirationSeconds: 86_400 },
        clusterTrustBundle: { signerName: CLIENT_SIGNER, labelSelector: TRUST_SELECTOR },
      }),
    );
    step.done++;
  });
  return running;
}

/** Resolves once every namespace of `namespaces` has a provider Secret whose leaf its own bundle verifies for `provider.<ns>.svc`. */
async function providerSecretsValid(admin: KubeRestClient, namespaces: readonly string[]): Promise<() => Promise<void>> {
  const wanted = new Set(namespaces);
  const valid = new Set<string>();
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  const decode = (s: V1Secret, key: string): string => Buffer.from(s.data?.[key] ?? '', 'base64').toString();
  const watcher = providerSecretInformer(admin);
  watcher.onChange(({ type, object }) => {
    const ns = object.metadata?.namespace ?? '';
    if (type === 'DELETED' || !wanted.has(ns) || !decode(object, 'tls.crt')) return;
    const leaf = new X509Certificate(decode(object, 'tls.crt'));
    if (certificatesIn(decode(object, 'ca.crt')).some((ca) => leaf.checkIssued(ca) && leaf.verify(ca.publicKey)) && leaf.checkHost(`provider.${ns}.svc`))
      valid.add(ns);
    if (valid.size === wanted.size) done();
  });
  watcher.start();
  await watcher.synced;
  return async () => {
    await all;
    await watcher.stop();
  };
}

type KubeletRequest = Awaited<ReturnType<PodCertificateKubelet['requestCertificate']>>;
type RequestOutcome = Awaited<ReturnType<PodCertificateKubelet['waitForOutcome']>>;

/** A request the kubelet created, when its create call returned, and how long the call took. */
interface Created {
  readonly request: KubeletRequest;
  readonly at: number;
  readonly callMs: number;
}

/** One request per pod, CONCURRENCY create calls in flight; `onCreated` as each call returns. */
async function requestAll(kubelet: PodCertificateKubelet, pods: readonly KubeletPod[], onCreated: (c: Created) => void = () => undefined): Promise<Created[]> {
  const created: Created[] = [];
  await pool(pods, CONCURRENCY, async (pod) => {
    const sent = performance.now();
    const request = await kubelet.requestCertificate(pod);
    const at = performance.now();
    created.push({ request, at, callMs: at - sent });
    onCreated(created.at(-1)!);
  });
  return created;
}

/** Status writes per second: a Denied status PUT on each of `requests`, `inFlight` at a time. */
async function statusWriteRate(admin: KubeRestClient, requests: readonly Created[], inFlight: number, step: Step): Promise<number> {
  const lastTransitionTime = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const start = performance.now();
  await pool(requests, inFlight, async ({ request: { request } }) => {
    const { namespace, name } = request.metadata as { namespace: string; name: string };
    const condition = { type: 'Denied', status: 'True', reason: 'BenchLimit', message: 'the bench measures status writes', lastTransitionTime };
    await admin.replace(`/apis/certificates.k8s.io/v1/namespaces/${namespace}/podcertificaterequests/${name}/status`, {
      ...request,
      status: { conditions: [condition] },
    });
    step.done++;
  });
  return requests.length / ((performance.now() - start) / 1000);
}

type Outcome = { request: KubeletRequest; outcome: RequestOutcome; sinceCreate: number };

/**
 * One request per pod while `adapter` signs; resolves at the last Issued seen, then waits for the
 * pod signer's Events (the batches it still coalesces included) and times how far they trailed.
 * `atLastIssued` runs at the last Issued, before the Events are awaited.
 */
async function issueAll(
  node: PodCertificateKubelet,
  pods: readonly KubeletPod[],
  adapter: ProviderCertificateAdapter,
  step: Step,
  atLastIssued: () => void = () => undefined,
): Promise<{ created: Created[]; outcomes: Outcome[]; t0: number; end: number; events: EventTrail }> {
  const eventsSent = (): number => adapter.eventStats.created + adapter.eventStats.patched;
  const eventsBefore = eventsSent();
  const settled: Promise<Outcome>[] = [];
  const t0 = performance.now();
  const created = await requestAll(node, pods, ({ request, at }) =>
    settled.push(
      node.waitForOutcome(request).then((outcome) => {
        step.done++;
        return { request, outcome, sinceCreate: performance.now() - at };
      }),
    ),
  );
  const outcomes = await Promise.all(settled);
  const end = performance.now();
  const sentAtLastIssued = eventsSent() - eventsBefore;
  atLastIssued();
  await adapter.podEventsSent();
  const trailMs = performance.now() - end;
  return { created, outcomes, t0, end, events: { atLastIssued: sentAtLastIssued, total: eventsSent() - eventsBefore, trailMs } };
}

/**
 * `backlog` (requests made while no signer ran) drained by `adapter`, fresh: its start → the last
 * Issued seen, and the drain alone (its first decision → the last Issued). Leaves it running.
 */
async function drainBacklog(
  node: PodCertificateKubelet,
  backlog: readonly Created[],
  adapter: ProviderCertificateAdapter,
  started: number,
  cas: readonly X509Certificate[],
  step: Step,
): Promise<Backlog> {
  let firstDecision = NaN;
  const signer = adapter.podSigner!;
  const decide = signer.decide.bind(signer);
  signer.decide = (...args) => {
    if (Number.isNaN(firstDecision)) firstDecision = performance.now();
    return decide(...args);
  };
  await adapter.start();
  const drained = await Promise.all(backlog.map(async ({ request }) => ({ request, outcome: await node.waitForOutcome(request).finally(() => step.done++) })));
  const end = performance.now();
  return { ...tally(drained, cas), seconds: (end - started) / 1000, drainSeconds: (end - firstDecision) / 1000, stages: stagesOf(adapter) };
}

/** How the requests ended: issued, refused by "condition reason: message", and issued leaves failing {@link validLeaf}. */
function tally(outcomes: readonly { request: KubeletRequest; outcome: RequestOutcome }[], cas: readonly X509Certificate[]) {
  const refused: Record<string, number> = {};
  let issued = 0;
  let invalidLeaves = 0;
  for (const { request, outcome } of outcomes) {
    if (outcome.condition !== 'Issued') {
      const key = `${outcome.condition} ${outcome.reason}: ${outcome.message}`;
      refused[key] = (refused[key] ?? 0) + 1;
      continue;
    }
    issued++;
    if (!validLeaf(outcome.certificateChain, request.key.publicKey, `provider.${request.request.metadata.namespace}.svc`, cas)) invalidLeaves++;
  }
  return { issued, refused, invalidLeaves };
}

const progress = (what: string): boolean => process.stderr.write(`bench: pod-certificates: ${what}\n`);

/** What the run is doing, and how many of it are done: printed every 10 s, and when the run gives up. */
interface Step {
  name: string;
  done: number;
}

/** Names the next step (and prints it). */
function begin(step: Step, name: string): void {
  progress(name);
  step.name = name;
  step.done = 0;
}

/** Request (create call included) → Issued, one probe at a time, before and during the stale-names recount. */
interface RecountProbe {
  /** Seconds from the adapter's start until the recount's result appeared; NaN if it never did. */
  readonly recountDoneAt: number;
  /** Probes that started more than 2 s before the slowest one, p50 in ms; undefined when none did. */
  readonly quietP50: number | undefined;
  /** Every probe, a lone request each: create call returned → Issued seen, and the same with the create call. */
  readonly lone: Spread;
  readonly loneWithCreate: Spread;
  /** The slowest probe: when it started (s after the adapter's start) and how long it waited (ms). */
  readonly slowest: { readonly at: number; readonly ms: number };
  readonly probes: number;
  /** Probes that ended Denied or Failed (none should). */
  readonly refused: number;
}

/**
 * Once per reconcile interval the signer recounts the pods serving stale names in the background,
 * with one metadata GET per pod it issued to, in turn. One request every second, each a lone
 * request timed until Issued, from the signer's idle after the backlog until 3 s after the next
 * recount's result appears (at most three intervals after the adapter's start).
 */
async function probeRecount(
  node: PodCertificateKubelet,
  pods: readonly KubeletPod[],
  adapter: ProviderCertificateAdapter,
  adapterStart: number,
  step: Step,
): Promise<RecountProbe> {
  const signer = adapter.podSigner!;
  // Past the backlog's drain, and any recount it started.
  await adapter.podSigningIdle();
  await signer.settled();
  const before = signer.staleNamesByNamespace();
  let recountDoneAt = NaN;
  const watch = setInterval(() => {
    if (Number.isNaN(recountDoneAt) && signer.staleNamesByNamespace() !== before) recountDoneAt = performance.now();
  }, 20);
  const probes: { at: number; ms: number; sinceCreate: number }[] = [];
  let refused = 0;
  const over = (): boolean => performance.now() > (Number.isNaN(recountDoneAt) ? adapterStart + 3 * RECOUNT_INTERVAL_MS : recountDoneAt + 3000);
  for (let i = 0; !over(); i++) {
    const sent = performance.now();
    const request = await node.requestCertificate(pods[i % pods.length]!);
    const created = performance.now();
    if ((await node.waitForOutcome(request)).condition !== 'Issued') refused++;
    probes.push({ at: (sent - adapterStart) / 1000, ms: performance.now() - sent, sinceCreate: performance.now() - created });
    step.done++;
    await new Promise((r) => setTimeout(r, Math.max(0, 1000 - (performance.now() - sent))));
  }
  clearInterval(watch);
  const slowest = probes.reduce((a, b) => (b.ms > a.ms ? b : a), { at: NaN, ms: 0, sinceCreate: 0 });
  // No probe before the slowest (it was the first): no p50 to give, rather than NaN.
  const quiet = sorted(probes.filter((p) => p.at < slowest.at - 2).map((p) => p.ms));
  return {
    recountDoneAt: (recountDoneAt - adapterStart) / 1000,
    quietP50: quiet.length > 0 ? percentile(quiet, 0.5) : undefined,
    lone: spread(probes.map((p) => p.sinceCreate)),
    loneWithCreate: spread(probes.map((p) => p.ms)),
    slowest: { at: slowest.at, ms: slowest.ms },
    probes: probes.length,
    refused,
  };
}

/**
 * One run: P pods in N namespaces; every server certificate requested while the signer runs;
 * then one more request per pod made while it is stopped, drained by a fresh adapter; then the
 * Secret mode over the same namespaces.
 */
export async function runPodCertificateBenchmark(pods = 1000, namespaceCount = 100): Promise<PodCertificateBenchmark> {
  const loadStart = loadavg()[0]!;
  const step: Step = { name: 'setup: pods running', done: 0 };
  const reporter = setInterval(() => progress(`${step.name}: ${step.done} done`), 10_000);
  const giveUp = setTimeout(() => {
    progress(`gave up after ${GIVE_UP_MS / 60_000} minutes at ${step.name}: ${step.done} done`);
    process.exit(1);
  }, GIVE_UP_MS);
  const plane = await startControlPlane({ nodeAuthorization: true, identities: [nodeIdentity(NODE), { name: 'bench-adapter', groups: ['system:masters'] }] });
  const adapter = (mode: 'pod-certificate' | 'secret', reconcileInterval?: number, extra: Partial<AdapterOptions> = {}): Promise<ProviderCertificateAdapter> =>
    ProviderCertificateAdapter.create({
      kubeConfig: plane.kubeconfigFor('bench-adapter'),
      policy: { esoNamespace: ESO, ...(reconcileInterval ? { reconcileInterval } : {}) },
      logger: ADAPTER_LOGGER,
      ...(mode === 'pod-certificate' ? { secretMode: false, podCertificates: POD_CERTIFICATES } : {}),
      ...extra,
    });
  let kubelet: PodCertificateKubelet | undefined;
  try {
    const setupStart = performance.now();
    const admin = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig), { maxSockets: CONCURRENCY });
    kubelet = await PodCertificateKubelet.register({ admin: plane.adminKubeConfig, node: plane.kubeconfigFor(`system:node:${NODE}`), nodeName: NODE });
    const node = kubelet;
    const namespaces = Array.from({ length: namespaceCount }, (_, i) => `bench-${i}`);
    const running = await createPods(admin, node, namespaces, pods, step);
    const setupSeconds = (performance.now() - setupStart) / 1000;
    const beforeAdapter = afterGc();

    begin(step, 'pod-certificate adapter starting');
    const adapterStart = performance.now();
    const signer = await adapter('pod-certificate');
    await signer.start();
    await signer.whenSettled();
    const adapterReadySeconds = (performance.now() - adapterStart) / 1000;
    const adapterSettled = afterGc();
    const requestsBefore = signer.requests.snapshot();
    const roundsBefore = signer.rounds;
    signer.podSigner!.stages.clear();
    const readsBefore = { ...signer.podSigner!.pods.stats };

    // Live: the signer runs while the kubelet creates the requests.
    let peak = mb(process.memoryUsage().rss);
    const sampler = setInterval(() => (peak = Math.max(peak, mb(process.memoryUsage().rss))), 100);
    begin(step, 'live: requests issued');
    const cpu = process.cpuUsage();
    let used!: NodeJS.CpuUsage;
    let stages!: Stages;
    let podReads!: PodCertificateBenchmark['podReads'];
    let adapterRequests!: Record<string, number>;
    const { created, outcomes, t0, end, events } = await issueAll(node, running, signer, step, () => {
      stages = stagesOf(signer);
      const reads = signer.podSigner!.pods.stats;
      podReads = { cache: reads.cache - readsBefore.cache, api: reads.api - readsBefore.api };
      used = process.cpuUsage(cpu);
      clearInterval(sampler);
      adapterRequests = signer.requests.since(requestsBefore);
    });
    peak = Math.max(peak, mb(process.memoryUsage().rss));
    const afterIssued = afterGc();
    // The signer works beside the rounds: none need run, so wait for the signer, not for a round.
    await signer.podSigningIdle();
    const rounds = signer.rounds - roundsBefore;
    await signer.stop();
    const cas = (await node.trustBundles(SERVER_SIGNER, TRUST_SELECTOR)).flatMap((b) => certificatesIn(b.spec.trustBundle));

    // The live part again, a fresh adapter each, same run: what the Events' settings and the decisions in flight change.
    // Each setting of the Events twice, interleaved, so that a change of the machine's load shows as a spread, not as a difference.
    const fourEvents = { label: 'Events: 4 in flight (as the shared recorder had), 100 ms window', options: { podEvents: { concurrency: 4 } } };
    const eightEvents = { label: 'Events: 8 in flight, 100 ms window', options: { podEvents: { concurrency: 8 } } };
    const defaults = { label: 'the defaults: 16 decisions, Events 16 in flight, 100 ms window', options: {} };
    const variants: readonly { label: string; options: Partial<AdapterOptions> }[] = [
      fourEvents,
      defaults,
      eightEvents,
      { label: 'Events: 16 in flight, 1 s window', options: { podEvents: { windowMs: 1000 } } },
      { label: 'writeConcurrency 8: 8 decisions in flight (Events as the defaults)', options: { writeConcurrency: 8 } },
      fourEvents,
      defaults,
      eightEvents,
    ];
    const passes: LivePass[] = [];
    for (const { label, options } of variants) {
      begin(step, `live again, ${label}: requests issued`);
      const pass = await adapter('pod-certificate', undefined, options);
      await pass.start();
      await pass.whenSettled();
      pass.podSigner!.stages.clear();
      const run = await issueAll(node, running, pass, step);
      await pass.podSigningIdle();
      await pass.stop();
      const issuedOnes = run.outcomes.filter((o) => o.outcome.condition === 'Issued');
      passes.push({
        label,
        issued: issuedOnes.length,
        issue: spread(issuedOnes.map((o) => o.sinceCreate)),
        statusWrite: spread(pass.podSigner!.stages.of('statusWrite')),
        wallSeconds: (run.end - run.t0) / 1000,
        events: run.events,
      });
    }

    // Backlog: one more request per pod (as at refresh) while no signer runs; a fresh adapter drains them.
    // First with 8 decisions in flight, then, as the adapter decides alone, with 16.
    begin(step, 'backlog at 8 in flight: requests created with no signer running');
    const backlog8 = await requestAll(node, running, () => step.done++);
    begin(step, 'backlog at 8 in flight: requests issued by a fresh adapter');
    const backlog8Start = performance.now();
    const drainer8 = await adapter('pod-certificate', RECOUNT_INTERVAL_MS, { writeConcurrency: 8 });
    const backlogAt8 = await drainBacklog(node, backlog8, drainer8, backlog8Start, cas, step);
    await drainer8.stop();
    begin(step, 'backlog: requests created with no signer running');
    const backlog = await requestAll(node, running, () => step.done++);
    begin(step, 'backlog: requests issued by a fresh adapter');
    const backlogStart = performance.now();
    const restarted = await adapter('pod-certificate', RECOUNT_INTERVAL_MS);
    const backlogAt16 = await drainBacklog(node, backlog, restarted, backlogStart, cas, step);
    restarted.podSigner!.stages.clear();
    begin(step, 'probes across the stale-names recount');
    const recountProbe = await probeRecount(node, running, restarted, backlogStart, step);
    // The same recount alone (forced: its interval has not come round again).
    const recountStart = performance.now();
    restarted.podSigner!.refreshStaleNames(Date.now() + restarted.installation.policy.reconcileInterval);
    await restarted.podSigner!.settled();
    const staleRecount = {
      seconds: (performance.now() - recountStart) / 1000,
      trackedPods: restarted.podSigner!.issued.size,
      stale: [...restarted.podSigner!.staleNamesByNamespace().values()].reduce((a, b) => a + b, 0),
    };
    await restarted.stop();
    begin(step, 'apiserver limit: requests created with no signer running');
    const unsigned = await requestAll(node, running, () => step.done++);
    begin(step, 'apiserver limit: Denied status writes alone');
    const statusWriteLimit = {
      at8: await statusWriteRate(admin, unsigned.slice(0, unsigned.length / 2), 8, step),
      at16: await statusWriteRate(admin, unsigned.slice(unsigned.length / 2), 16, step),
    };
    begin(step, 'Secret mode: adapter start → every provider Secret valid');

    const live = tally(outcomes, cas);
    const latencies = sorted(outcomes.filter((o) => o.outcome.condition === 'Issued').map((o) => o.sinceCreate));
    const calls = sorted(created.map((c) => c.callMs));

    // The Secret mode, same run, same namespaces: a third adapter from start to every Secret valid.
    const secretsValid = await providerSecretsValid(admin, namespaces);
    const secretStart = performance.now();
    const secretAdapter = await adapter('secret');
    await secretAdapter.start();
    await secretsValid();
    const secretModeSeconds = (performance.now() - secretStart) / 1000;
    const secretModeRssMb = afterGc().rss;
    await secretAdapter.stop();
    admin.close();

    const wallSeconds = (end - t0) / 1000;
    return {
      pods,
      namespaces: namespaceCount,
      setupSeconds,
      adapterReadySeconds,
      ...live,
      createP50: percentile(calls, 0.5),
      createP99: percentile(calls, 0.99),
      issueP50: percentile(latencies, 0.5),
      issueP99: percentile(latencies, 0.99),
      issueMax: latencies.at(-1) ?? NaN,
      wallSeconds,
      drainSeconds: (end - Math.max(...created.map((c) => c.at))) / 1000,
      requestsPerSecond: live.issued / wallSeconds,
      rounds,
      cpuSeconds: (used.user + used.system) / 1e6,
      memory: { beforeAdapter, adapterSettled, afterIssued },
      peakRssMb: peak,
      adapterRequests,
      stages,
      podReads,
      events,
      passes,
      backlog: backlogAt16,
      backlogAt8,
      staleRecount,
      recountProbe,
      statusWriteLimit,
      secretModeSeconds,
      secretModeRssMb,
      load: { start: loadStart, end: loadavg()[0]! },
    };
  } finally {
    clearTimeout(giveUp);
    clearInterval(reporter);
    await kubelet?.stop();
    await plane.stop();
  }
}

/** The figures as markdown tables. */
export function formatPodCertificateBenchmark(r: PodCertificateBenchmark): string {
  const ms = (v: number): string => `${v.toFixed(0)} ms`;
  const spreadMs = (s: Spread): string => `${s.p50.toFixed(1)} / ${s.p99.toFixed(1)} / ${s.max.toFixed(1)} ms`;
  const stageRows = (label: string, stages: Stages): string[] =>
    STAGES.map((stage) => `| ${label}: ${stage}, p50 / p99 / max (${stages[stage].n} requests) | ${spreadMs(stages[stage])} |`);
  const refusals = (counts: Record<string, number>): string[] => Object.entries(counts).map(([why, n]) => `${n} x ${why}`);
  const refused = refusals(r.refused);
  const backlogRefused = refusals(r.backlog.refused);
  const { beforeAdapter, adapterSettled, afterIssued } = r.memory;
  const requests = Object.entries(r.adapterRequests).map(([what, n]) => `${what} ${n}`);
  return [
    `| pod-certificate mode, ${r.pods} pods in ${r.namespaces} namespaces, one node | |`,
    '|---|---:|',
    `| requests issued | ${r.issued} of ${r.pods}${refused.length ? ` (refused: ${refused.join('; ')})` : ''} |`,
    `| issued leaves failing the check (key, name, CA) | ${r.invalidLeaves} |`,
    `| request created → Issued seen by the node, p50 / p99 / max | ${ms(r.issueP50)} / ${ms(r.issueP99)} / ${ms(r.issueMax)} |`,
    `| the kubelet's create call (key, stub request, POST), p50 / p99 | ${ms(r.createP50)} / ${ms(r.createP99)} |`,
    `| first create → last Issued (last create → last Issued) | ${r.wallSeconds.toFixed(2)} s (${r.drainSeconds.toFixed(2)} s) |`,
    `| requests issued per second | ${r.requestsPerSecond.toFixed(0)} |`,
    `| adapter reconcile rounds, first create → settled again | ${r.rounds} |`,
    `| bench process CPU over that window (adapter + kubelet stand-in) | ${r.cpuSeconds.toFixed(2)} s |`,
    `| adapter requests over that window | ${requests.join(', ')} |`,
    `| pod reads from the metadata-only cache / by GET | ${r.podReads.cache} / ${r.podReads.api} |`,
    `| Events sent when the last certificate was issued / in all; the last one done, after the last Issued | ${r.events.atLastIssued} / ${r.events.total}; ${ms(r.events.trailMs)} |`,
    ...stageRows('live, in the signer', r.stages),
    `| RSS after GC: before the adapter / adapter settled / all issued | ${beforeAdapter.rss.toFixed(0)} / ${adapterSettled.rss.toFixed(0)} / ${afterIssued.rss.toFixed(0)} MB |`,
    `| V8 heap after GC: before the adapter / adapter settled / all issued | ${beforeAdapter.heap.toFixed(0)} / ${adapterSettled.heap.toFixed(0)} / ${afterIssued.heap.toFixed(0)} MB |`,
    `| RSS peak while signing (sampled every 100 ms) | ${r.peakRssMb.toFixed(0)} MB |`,
    `| adapter start → settled (CA and trust bundles) | ${r.adapterReadySeconds.toFixed(2)} s |`,
    `| backlog: ${r.pods} requests made with no signer running, fresh adapter start → last Issued | ${r.backlog.seconds.toFixed(2)} s (${(r.backlog.issued / r.backlog.seconds).toFixed(0)}/s; ${r.backlog.issued} issued, ${r.backlog.invalidLeaves} failing the check${backlogRefused.length ? `; refused: ${backlogRefused.join('; ')}` : ''}) |`,
    `| backlog: the drain alone, first decision → last Issued | ${r.backlog.drainSeconds.toFixed(2)} s (${(r.backlog.issued / r.backlog.drainSeconds).toFixed(0)}/s) |`,
    `| the same drain with 8 decisions in flight (writeConcurrency 8), just before: drain alone; start → last Issued | ${r.backlogAt8.drainSeconds.toFixed(2)} s (${(r.backlogAt8.issued / r.backlogAt8.drainSeconds).toFixed(0)}/s, ${r.backlogAt8.issued} issued, ${r.backlogAt8.invalidLeaves} failing); ${r.backlogAt8.seconds.toFixed(2)} s |`,
    `| drain rate, 16 against 8 in flight | ${(r.backlogAt8.drainSeconds / r.backlog.drainSeconds).toFixed(2)} |`,
    `| backlog at 8 in flight, in the signer: status write, p50 / p99 / max | ${spreadMs(r.backlogAt8.stages.statusWrite)} |`,
    ...stageRows('backlog, in the signer', r.backlog.stages),
    `| stale-names recount (in the background, once per reconcile interval): ${r.staleRecount.trackedPods} tracked pods | ${r.staleRecount.seconds.toFixed(2)} s (${r.staleRecount.stale} stale) |`,
    `| a lone request (one a second, signer idle): create call returned → Issued seen, p50 / p99 / max | ${spreadMs(r.recountProbe.lone)} (${r.recountProbe.lone.n} probes) |`,
    `| the same, the kubelet's create call included | ${spreadMs(r.recountProbe.loneWithCreate)} |`,
    `| probes across the adapter's recount: p50 before the slowest / slowest | ${r.recountProbe.quietP50 === undefined ? 'no probe before it' : ms(r.recountProbe.quietP50)} / ${ms(r.recountProbe.slowest.ms)} (started ${r.recountProbe.slowest.at.toFixed(1)} s after the adapter; recount's result at ${r.recountProbe.recountDoneAt.toFixed(1)} s; ${r.recountProbe.probes} probes, ${r.recountProbe.refused} refused) |`,
    `| the apiserver's own rate for status writes (Denied, no signer), 8 / 16 in flight | ${r.statusWriteLimit.at8.toFixed(0)} / ${r.statusWriteLimit.at16.toFixed(0)} per second |`,
    `| Secret mode, same ${r.namespaces} namespaces: start → every provider Secret valid | ${r.secretModeSeconds.toFixed(2)} s |`,
    `| ratio pod-certificate wall / Secret-mode convergence | ${(r.wallSeconds / r.secretModeSeconds).toFixed(2)} |`,
    `| RSS after GC, Secret mode converged (same process) | ${r.secretModeRssMb.toFixed(0)} MB |`,
    `| setup (namespaces, Services, pods) | ${r.setupSeconds.toFixed(1)} s |`,
    `| 1-minute load average at the run's start / end | ${r.load.start.toFixed(1)} / ${r.load.end.toFixed(1)} |`,
    '',
    `| the live part again, same run, a fresh adapter each (in this order) | request → Issued p50 / p99 | status write p50 / p99 | Events at the last Issued / all | last Event done after the last Issued | first create → last Issued |`,
    '|---|---:|---:|---:|---:|---:|',
    ...r.passes.map(
      (p) =>
        `| ${p.label}${p.issued === r.pods ? '' : ` (${p.issued} issued)`} | ${ms(p.issue.p50)} / ${ms(p.issue.p99)} | ${ms(p.statusWrite.p50)} / ${ms(p.statusWrite.p99)} | ${p.events.atLastIssued} / ${p.events.total} | ${ms(p.events.trailMs)} | ${p.wallSeconds.toFixed(2)} s |`,
    ),
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [pods, namespaces] = process.argv.slice(2).map(Number);
  console.log(formatPodCertificateBenchmark(await runPodCertificateBenchmark(pods || undefined, namespaces || undefined)));
}
