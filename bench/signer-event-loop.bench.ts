/**
 * The event loop of the pod signer during a burst of PodCertificateRequests (issue 33, item 5): the
 * kubelet restarts a controller whose `/healthz` does not answer within the probe's timeout, and
 * `/healthz` answers only when the event loop turns. On a real kube-apiserver with the Node
 * authorizer and NodeRestriction, one adapter in both modes (as the chart runs it) in this process,
 * and the kubelet stand-in in a child process (bench/kubelet-burst.child.ts), so that this process's
 * event loop is the adapter's alone. `perf_hooks.monitorEventLoopDelay` measures how late the loop
 * turns, p50 / p99 / max; on a loaded machine that includes the time the process waited for a
 * core. So the main thread's own CPU time between two turns of the loop is measured too (a 1 ms
 * timer reads `process.threadCpuUsage()`): the longest synchronous stretch, whatever the load.
 * Over each phase:
 *
 * - idle: the adapter settled, nothing to do, 5 s (the machine's own noise);
 * - live burst: `requests` requests from one namespace while the signer runs, each decided as its
 *   watch event arrives, until the last one is decided;
 * - backlog: as many made while no signer runs, then a fresh adapter's start (its list of them
 *   all, its first round, the hand-over of the CA) until the last one is decided.
 *
 *   npm run bench -- signer-event-loop
 *   node --import ./scripts/register-ts.mjs bench/signer-event-loop.bench.ts [requests] [pods]
 */
import 'reflect-metadata';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { PROVIDER_LABEL } from '@eso-mtls/core';
import { KubeRestClient, ProviderCertificateAdapter, connectionFromKubeConfig, corePath } from '@eso-mtls/kubernetes';
import { nodeIdentity, startControlPlane } from '../testing/envtest/src/index.js';
import { ESO } from './kubernetes.bench.js';
import { type PodDecisions, countingPodAdapter } from './pod-backlog.bench.js';
import { spread } from './spread.js';

const NODE = 'bench-node';
const NAMESPACE = 'burst';
/** The histogram's sampling timer, in ms: a stall shorter than this may go unseen. */
const RESOLUTION_MS = 5;
const IDLE_MS = 5000;

/** How late the event loop turned over one phase, in ms. */
export interface LoopDelay {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** The main thread's CPU time between two turns of the loop: p99 and max, in ms. */
  readonly cpuPerTurn: { readonly p99: number; readonly max: number };
  /** Seconds the phase took. */
  readonly seconds: number;
}

/** What {@link runSignerEventLoopBenchmark} measures. */
export interface SignerEventLoopBenchmark {
  readonly requests: number;
  readonly pods: number;
  readonly idle: LoopDelay;
  /** Requests made while the signer runs: the first create → the last decided. */
  readonly live: LoopDelay & { readonly issued: number; readonly refused: number };
  /** Requests made while no signer ran: a fresh adapter's start → the last decided. */
  readonly backlog: LoopDelay & { readonly issued: number; readonly refused: number };
  /** The 1-minute load average at the run's start and end. */
  readonly load: { readonly start: number; readonly end: number };
}

const progress = (what: string): boolean => process.stderr.write(`bench: signer-event-loop: ${what}\n`);

/** The kubelet stand-in's child process, driven by JSON lines (see bench/kubelet-burst.child.ts). */
class KubeletChild {
  private readonly replies: ((message: Record<string, unknown>) => void)[] = [];

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    createInterface({ input: child.stdout }).on('line', (line) => this.replies.shift()?.(JSON.parse(line) as Record<string, unknown>));
    child.stderr.pipe(process.stderr);
  }

  /** Starts the child, which registers the node and runs `pods` pods; resolves once they run. */
  static async start(admin: string, node: string, pods: number): Promise<KubeletChild> {
    const args = ['--import', './scripts/register-ts.mjs', 'bench/kubelet-burst.child.ts', admin, node, NODE, NAMESPACE, String(pods)];
    const k = new KubeletChild(spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'] }));
    await k.reply();
    return k;
  }

  /** Makes `n` requests as the node; resolves once every create call returned. */
  async requests(n: number): Promise<void> {
    const reply = this.reply();
    this.child.stdin.write(`requests ${n}\n`);
    await reply;
  }

  async stop(): Promise<void> {
    const reply = this.reply();
    this.child.stdin.write('stop\n');
    await reply;
  }

  private reply(): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      this.replies.push(resolve);
      this.child.once('exit', (code) => reject(new Error(`the kubelet child exited with ${code}`)));
    });
  }
}

/** Measures the loop's delay, and the main thread's CPU time per turn, from now until `until` resolves. */
async function measured(until: () => Promise<void>): Promise<LoopDelay> {
  const histogram: IntervalHistogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  const turns: number[] = [];
  let last = process.threadCpuUsage();
  // A timer runs once per turn at most: the CPU used since the last one is that turn's work.
  const sampler = setInterval(() => {
    const now = process.threadCpuUsage();
    turns.push((now.user - last.user + now.system - last.system) / 1000);
    last = now;
  }, 1);
  const started = performance.now();
  histogram.enable();
  try {
    await until();
  } finally {
    histogram.disable();
    clearInterval(sampler);
  }
  const ms = (ns: number): number => ns / 1e6;
  const { p99, max } = spread(turns);
  return {
    p50: ms(histogram.percentile(50)),
    p99: ms(histogram.percentile(99)),
    max: ms(histogram.max),
    cpuPerTurn: { p99, max },
    seconds: (performance.now() - started) / 1000,
  };
}

/** Idle, a live burst, and a backlog of `requests` requests from `pods` pods of one namespace; see the file's comment. */
export async function runSignerEventLoopBenchmark(requests = 4000, pods = 20): Promise<SignerEventLoopBenchmark> {
  const loadStart = loadavg()[0]!;
  const plane = await startControlPlane({ nodeAuthorization: true, identities: [nodeIdentity(NODE), { name: 'bench-adapter', groups: ['system:masters'] }] });
  const decisions: PodDecisions = { issued: 0, refused: 0, onDecided: () => undefined };
  const decided = (n: number): Promise<void> =>
    new Promise((resolve) => {
      decisions.issued = decisions.refused = 0;
      decisions.onDecided = () => {
        if (decisions.issued + decisions.refused >= n) resolve();
      };
    });
  const adapter = (): Promise<ProviderCertificateAdapter> => countingPodAdapter(plane.kubeconfigFor('bench-adapter'), decisions);
  const admin = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig));
  let kubelet: KubeletChild | undefined;
  try {
    await admin.create(corePath('namespaces'), { metadata: { name: ESO } });
    await admin.create(corePath('namespaces'), { metadata: { name: NAMESPACE } });
    await admin.create(corePath('services', NAMESPACE), {
      metadata: { name: 'provider', labels: { [PROVIDER_LABEL]: 'true' } },
      spec: { clusterIP: 'None', selector: { app: 'provider' }, ports: [{ port: 8443 }] },
    });
    const nodeKubeconfig = join(plane.dir, 'kubeconfig-bench-node.yaml');
    writeFileSync(nodeKubeconfig, plane.kubeconfigFor(`system:node:${NODE}`).exportConfig(), { mode: 0o600 });
    progress(`kubelet stand-in: ${pods} pods`);
    kubelet = await KubeletChild.start(plane.adminKubeconfigPath, nodeKubeconfig, pods);
    const node = kubelet;

    progress('idle: adapter settled');
    const running = await adapter();
    await running.start();
    await running.whenSettled();
    const idle = await measured(() => new Promise((r) => setTimeout(r, IDLE_MS)));

    progress(`live burst: ${requests} requests while the signer runs`);
    const liveDone = decided(requests);
    const live = await measured(async () => {
      await node.requests(requests);
      await liveDone;
    });
    const liveCounts = { issued: decisions.issued, refused: decisions.refused };
    await running.stop();

    progress(`backlog: ${requests} requests made with no signer running`);
    await node.requests(requests);
    progress('backlog: a fresh adapter drains them');
    const backlogDone = decided(requests);
    let drainer: ProviderCertificateAdapter | undefined;
    const backlog = await measured(async () => {
      drainer = await adapter();
      await drainer.start();
      await backlogDone;
    });
    const backlogCounts = { issued: decisions.issued, refused: decisions.refused };
    await drainer?.stop();
    return {
      requests,
      pods,
      idle,
      live: { ...live, ...liveCounts },
      backlog: { ...backlog, ...backlogCounts },
      load: { start: loadStart, end: loadavg()[0]! },
    };
  } finally {
    await kubelet?.stop().catch(() => undefined);
    admin.close();
    await plane.stop();
  }
}

/** The figures as a markdown table. */
export function formatSignerEventLoopBenchmark(r: SignerEventLoopBenchmark): string {
  const delay = (d: LoopDelay): string =>
    `${d.p50.toFixed(1)} / ${d.p99.toFixed(1)} / ${d.max.toFixed(1)} ms | ${d.cpuPerTurn.p99.toFixed(1)} / ${d.cpuPerTurn.max.toFixed(1)} ms`;
  return [
    `| the adapter, ${r.requests} requests from ${r.pods} pods of one namespace | event-loop delay p50 / p99 / max | CPU per turn p99 / max | phase | decided |`,
    '|---|---:|---:|---:|---:|',
    `| idle, adapter settled | ${delay(r.idle)} | ${r.idle.seconds.toFixed(1)} s | |`,
    `| live burst: first create → last decided | ${delay(r.live)} | ${r.live.seconds.toFixed(1)} s | ${r.live.issued} issued, ${r.live.refused} refused |`,
    `| backlog: fresh adapter start → last decided | ${delay(r.backlog)} | ${r.backlog.seconds.toFixed(1)} s | ${r.backlog.issued} issued, ${r.backlog.refused} refused |`,
    `| 1-minute load average at the start / end | ${r.load.start.toFixed(1)} / ${r.load.end.toFixed(1)} | | | |`,
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [requests, pods] = process.argv.slice(2).map(Number);
  console.log(formatSignerEventLoopBenchmark(await runSignerEventLoopBenchmark(requests || undefined, pods || undefined)));
}
