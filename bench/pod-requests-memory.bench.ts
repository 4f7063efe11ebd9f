/**
 * The controller's memory with many live PodCertificateRequests naming its signer (issue 37, item 2),
 * against the chart's default limit: the shipped entry (`eso-mtls controller` from dist, NODE_OPTIONS
 * as the chart sets them for a 256Mi limit) on a real kube-apiserver with the Node authorizer and
 * NodeRestriction, inside a cgroup v1 memory group limited to 256Mi as in the pod (where the machine
 * has one and we are root; else on the host, and the table says so). Its resident memory (VmRSS,
 * sampled every 250 ms, and the kernel's VmHWM) is read from /proc, and the group's charge and
 * OOM kills from the group: the kernel kills the container when its charge passes the limit.
 *
 * 1. With no controller running, the node makes `requests` requests (pods in ten tenant namespaces,
 *    each with a labelled Service), all pending.
 * 2. The controller starts in both modes and decides them all. Meanwhile a Service is labelled every
 *    `paceMs` in a namespace of its own and timed from the create call to its Secret.
 * 3. The controller restarts with every request still in the API, decided, and runs a minute.
 *
 *   npm run bench -- pod-requests-memory
 *   node --import ./scripts/register-ts.mjs bench/pod-requests-memory.bench.ts [requests]
 */
import 'reflect-metadata';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { PROVIDER_LABEL } from '@eso-mtls/core';
import { KubeRestClient, connectionFromKubeConfig, corePath } from '@eso-mtls/kubernetes';
import { nodeIdentity, startControlPlane } from '../testing/envtest/src/index.js';
import { type KubeletPod, PodCertificateKubelet } from '../testing/kubelet/index.js';
import { pool } from './kubernetes.bench.js';
import { type Spread, spread } from './spread.js';

const SERVER_SIGNER = 'eso-mtls.io/provider-server';
const NODE = 'bench-node';
const ESO = 'external-secrets-system';
const TENANTS = 10;
const PODS_PER_TENANT = 5;
/** The node's create calls in flight while it makes the requests. */
const CONCURRENCY = 16;
const REPO = resolve(import.meta.dirname, '..');
/** The shipped memory limit, and the NODE_OPTIONS the shipped Deployment sets under it (deploy/base, as the chart renders them). */
const LIMIT_BYTES = 256 * 2 ** 20;
const NODE_OPTIONS = /name: NODE_OPTIONS\s+value: (.+)/.exec(readFileSync(resolve(REPO, 'deploy/base/deployment.yaml'), 'utf8'))![1]!.trim();
const MEMORY_CGROUPS = '/sys/fs/cgroup/memory';

/** What {@link runPodRequestsMemoryBenchmark} measures. */
export interface PodRequestsMemoryBenchmark {
  readonly requests: number;
  readonly setupSeconds: number;
  /** Phase 2: start → every request decided. */
  readonly drain: PhaseMemory & { readonly seconds: number; readonly decided: number; readonly notHeldMax: number; readonly exit?: string };
  /** Phase 2: label → Secret while the requests drain. */
  readonly secretMode: Spread;
  /** Phase 3: a minute after a restart with every request decided in the API. */
  readonly restart: PhaseMemory & { readonly exit?: string };
}

/** Resident memory of the controller process over one phase, in bytes. */
export interface PhaseMemory {
  readonly rssMax: number;
  readonly rssLast: number;
  /** The kernel's high-water mark of the process (VmHWM), samples missed included. */
  readonly hwm: number;
  /** In a memory cgroup as in the pod: the most charged to it, and the OOM kills in it; undefined on the host. */
  readonly cgroup?: { readonly maxCharged: number; readonly oomKills: number };
}

/** A cgroup v1 memory group limited to {@link LIMIT_BYTES}, as the pod's container is; undefined where there is none to make. */
function memoryGroup(name: string): string | undefined {
  if (!existsSync(MEMORY_CGROUPS) || process.getuid?.() !== 0) return undefined;
  const dir = `${MEMORY_CGROUPS}/eso-mtls-bench-${name}-${process.pid}`;
  mkdirSync(dir);
  writeFileSync(`${dir}/memory.limit_in_bytes`, String(LIMIT_BYTES));
  return dir;
}

/** The group's peak charge and OOM kills (the kernel's own count, from memory.oom_control). */
function groupMemory(dir: string): { maxCharged: number; oomKills: number } {
  const oom = /^oom_kill (\d+)$/m.exec(readFileSync(`${dir}/memory.oom_control`, 'utf8'));
  return { maxCharged: Number(readFileSync(`${dir}/memory.max_usage_in_bytes`, 'utf8')), oomKills: Number(oom?.[1] ?? 0) };
}

const progress = (what: string): boolean => process.stderr.write(`bench: pod-requests-memory: ${what}\n`);

/** One `eso-mtls controller` process as the image runs it, with its probe and metrics URLs once it serves them. */
class Controller {
  private readonly child: ChildProcess;
  private rssMax = 0;
  private rssLast = 0;
  private readonly sampler: NodeJS.Timeout;
  readonly endpoints: Promise<{ probes: string; metrics: string }>;
  readonly exited: Promise<unknown>;

  private readonly group: string | undefined;
  /** How the process ended, once it has (an OOM kill reads SIGKILL). */
  exit: string | undefined;
  private hwm = 0;

  constructor(kubeconfig: string, phase: string) {
    const command = [
      process.execPath,
      resolve(REPO, 'packages/controller/bin/eso-mtls.js'),
      'controller',
      `--kubeconfig=${kubeconfig}`,
      `--namespace=${ESO}`,
      '--modes=secret,pod-certificate',
      '--health-probe-bind-address=127.0.0.1:0',
      '--metrics-bind-address=127.0.0.1:0',
    ];
    this.group = memoryGroup(phase);
    // In the group from its first instruction: the shell joins it, then becomes the controller.
    const [file, ...args] = this.group ? ['sh', '-c', `echo $$ > ${this.group}/cgroup.procs && exec "$@"`, 'sh', ...command] : command;
    this.child = spawn(file!, args, {
      cwd: REPO,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_OPTIONS },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    this.exited = new Promise((r) =>
      this.child.once('exit', (code, signal) => {
        this.exit = signal ?? `exit code ${code}`;
        r(undefined);
      }),
    );
    this.endpoints = new Promise((resolveEndpoints, reject) => {
      createInterface({ input: this.child.stdout! }).on('line', (line) => {
        let log: Record<string, unknown>;
        try {
          log = JSON.parse(line) as Record<string, unknown>;
        } catch {
          return;
        }
        if (log['msg'] === 'serving probes and metrics') resolveEndpoints({ probes: String(log['probes']), metrics: String(log['metrics']) });
        else if (log['level'] === 'error' || log['level'] === 50) process.stderr.write(`controller: ${line}\n`);
      });
      void this.exited.then(() => reject(new Error('the controller exited before serving its endpoints')));
    });
    this.sampler = setInterval(() => this.sample(), 250);
  }

  /** VmRSS and VmHWM of the process, in bytes. */
  private status(): { rss: number; hwm: number } {
    const text = readFileSync(`/proc/${this.child.pid}/status`, 'utf8');
    const kib = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024;
    return { rss: kib('VmRSS'), hwm: kib('VmHWM') };
  }

  private sample(): void {
    try {
      const { rss, hwm } = this.status();
      this.rssLast = rss;
      this.rssMax = Math.max(this.rssMax, rss);
      this.hwm = hwm;
    } catch {
      // exited: the last sample stands
    }
  }

  memory(): PhaseMemory {
    this.sample();
    return { rssMax: this.rssMax, rssLast: this.rssLast, hwm: this.hwm, ...(this.group ? { cgroup: groupMemory(this.group) } : {}) };
  }

  async stop(): Promise<void> {
    clearInterval(this.sampler);
    this.child.kill('SIGTERM');
    await this.exited;
    if (this.group) rmdirSync(this.group);
  }
}

/** The sum of a metric's samples in a Prometheus exposition, optionally of the series matching `labels`. */
async function scrape(url: string, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(url, { signal: AbortSignal.timeout(10_000) })).text();
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(name) && line.includes(labels) && !line.startsWith('#')) sum += Number(line.split(' ').at(-1));
  return sum;
}

/** See the file's comment. */
export async function runPodRequestsMemoryBenchmark(requests = 100_000, paceMs = 5_000): Promise<PodRequestsMemoryBenchmark> {
  const plane = await startControlPlane({
    nodeAuthorization: true,
    identities: [nodeIdentity(NODE), { name: 'bench-controller', groups: ['system:masters'] }],
  });
  const admin = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig), { maxSockets: CONCURRENCY });
  const kubeconfig = plane.identity('bench-controller').kubeconfigPath;
  let controller: Controller | undefined;
  try {
    const labelled = async (namespace: string): Promise<void> => {
      await admin.create(corePath('namespaces'), { metadata: { name: namespace } });
      await admin.create(corePath('services', namespace), {
        metadata: { name: 'provider', labels: { [PROVIDER_LABEL]: 'true' } },
        spec: { clusterIP: 'None', selector: { app: 'provider' }, ports: [{ port: 8443 }] },
      });
    };
    await admin.create(corePath('namespaces'), { metadata: { name: ESO } });
    const kubelet = await PodCertificateKubelet.register({ admin: plane.adminKubeConfig, node: plane.kubeconfigFor(`system:node:${NODE}`), nodeName: NODE });
    const setupStart = performance.now();
    try {
      const pods: KubeletPod[] = [];
      for (let t = 0; t < TENANTS; t++) {
        await labelled(`tenant-${t}`);
        for (let p = 0; p < PODS_PER_TENANT; p++)
          pods.push(
            await kubelet.runPod({
              namespace: `tenant-${t}`,
              name: `provider-${p}`,
              serviceAccountName: 'provider',
              labels: { app: 'provider' },
              podCertificate: { signerName: SERVER_SIGNER, keyType: 'ECDSAP256', maxExpirationSeconds: 86_400 },
            }),
          );
      }
      progress(`${requests} requests made as the node, no controller running`);
      let made = 0;
      await pool(
        Array.from({ length: requests }, (_, i) => pods[i % pods.length]!),
        CONCURRENCY,
        async (pod) => {
          await kubelet.requestCertificate(pod);
          if (++made % 10_000 === 0) progress(`${made} made`);
        },
      );
    } finally {
      await kubelet.stop();
    }
    const setupSeconds = (performance.now() - setupStart) / 1000;

    progress('the controller decides them; a Service labelled every few seconds meanwhile');
    controller = new Controller(kubeconfig, 'drain');
    const started = performance.now();
    const { metrics } = await controller.endpoints;
    let decided = 0;
    let notHeldMax = 0;
    const secretWaits: Promise<number>[] = [];
    for (let i = 0; decided < requests && controller.exit === undefined; i++) {
      const tick = performance.now();
      if (i % Math.max(1, Math.round(paceMs / 1000)) === 0) secretWaits.push(timeSecret(admin, labelled, `probe-${secretWaits.length}`));
      // A status write that did not land is counted as failed, and retried: not a decision.
      try {
        decided =
          (await scrape(metrics, 'eso_pod_certificate_requests_total', 'signer="server"')) -
          (await scrape(metrics, 'eso_pod_certificate_requests_total', 'reason="StatusWriteFailed"'));
        notHeldMax = Math.max(notHeldMax, await scrape(metrics, 'eso_pod_certificate_requests_not_held'));
      } catch (e) {
        if (controller.exit === undefined) throw e;
      }
      await new Promise((r) => setTimeout(r, Math.max(0, 1000 - (performance.now() - tick))));
    }
    const drainSeconds = (performance.now() - started) / 1000;
    const drain = { ...controller.memory(), seconds: drainSeconds, decided, notHeldMax, ...(controller.exit ? { exit: controller.exit } : {}) };
    // A controller killed on the way serves no more Secrets: their waits are not awaited then.
    const secretMode = spread(controller.exit ? [] : await Promise.all(secretWaits));
    await controller.stop();

    progress('restart with every request decided in the API');
    controller = new Controller(kubeconfig, 'restart');
    // Killed before it serves (the OOM kill the issue saw 10 s into a restart) is a result, not an error.
    await controller.endpoints.catch(() => undefined);
    await Promise.race([new Promise((r) => setTimeout(r, 60_000)), controller.exited]);
    const restart = { ...controller.memory(), ...(controller.exit ? { exit: controller.exit } : {}) };
    return { requests, setupSeconds, drain, secretMode, restart };
  } finally {
    await controller?.stop();
    admin.close();
    await plane.stop();
  }
}

/** Labels a Service in a namespace of its own; resolves with ms from the create call to its Secret holding a certificate. */
async function timeSecret(admin: KubeRestClient, labelled: (namespace: string) => Promise<void>, namespace: string): Promise<number> {
  const sent = performance.now();
  await labelled(namespace);
  for (;;) {
    const secret = await admin.get<{ data?: Record<string, string> }>(corePath('secrets', namespace, 'external-secrets-provider-tls')).catch(() => undefined);
    if (secret?.data?.['tls.crt']) return performance.now() - sent;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The figures as a markdown table. */
export function formatPodRequestsMemoryBenchmark(r: PodRequestsMemoryBenchmark): string {
  const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
  const of = (m: PhaseMemory): string =>
    `RSS ${mib(m.rssMax)} max sampled, ${mib(m.hwm)} high-water, ${mib(m.rssLast)} at the end; ` +
    (m.cgroup
      ? `charged to its 256Mi cgroup at most ${mib(m.cgroup.maxCharged)} (${((100 * m.cgroup.maxCharged) / LIMIT_BYTES).toFixed(0)}% of the limit), ${m.cgroup.oomKills} OOM kills`
      : 'on the host, in no memory cgroup');
  const ms = (l: Spread): string => `${l.p50.toFixed(0)} / ${l.p99.toFixed(0)} / ${l.max.toFixed(0)} ms (${l.n} Services)`;
  return [
    `| ${r.requests.toLocaleString('en-US')} live PodCertificateRequests, the controller under the chart's ${mib(LIMIT_BYTES)} limit (${NODE_OPTIONS}) | |`,
    '|---|---:|',
    `| made as the node, all pending, no controller running | ${r.setupSeconds.toFixed(0)} s |`,
    `| start → every request decided | ${r.drain.seconds.toFixed(0)} s (${r.drain.decided} decided; most not held at once ${r.drain.notHeldMax}) |`,
    `| memory while deciding them | ${of(r.drain)}${r.drain.exit ? `; **the controller ended: ${r.drain.exit}**` : ''} |`,
    `| label → Secret meanwhile, p50 / p99 / max | ${ms(r.secretMode)} |`,
    `| memory, a minute after a restart with all ${r.requests.toLocaleString('en-US')} decided in the API | ${of(r.restart)}${r.restart.exit ? `; **the controller ended: ${r.restart.exit}**` : ''} |`,
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [requests] = process.argv.slice(2).map(Number);
  console.log(formatPodRequestsMemoryBenchmark(await runPodRequestsMemoryBenchmark(requests || undefined)));
}
