/**
 * The Kubernetes adapter against a real kube-apiserver: N labelled Services in N namespaces →
 * time until every provider Secret holds a valid leaf, API requests by verb (the adapter's own
 * counter and the apiserver's audit log), Secret writes per namespace, a resync with nothing due,
 * the adapter process's CPU and RSS, and where its memory is after a full GC (V8 heap spaces,
 * external memory, RSS by mapping; with --heap-snapshot, the heap by constructor and retainer);
 * against a plain client-node loop creating N Secrets and N Events at the adapter's concurrency,
 * as the apiserver's own limit (up to 10,000 Services).
 *
 *   node --import ./scripts/register-ts.mjs bench/kubernetes.bench.ts [services] [--heap-snapshot] [--no-raw-loops]
 */
import 'reflect-metadata';
import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { PROVIDER_LABEL, PROVIDER_SECRET_NAME } from '@eso-mtls/core';
import { Informer, KubeApiError, KubeRestClient, type ListPage, type Logger, connectionFromKubeConfig, corePath } from '@eso-mtls/kubernetes';
import { type CoreV1Event, CoreV1Api, type V1Secret } from '@kubernetes/client-node';
import { type AuditEvent, startControlPlane } from '../testing/envtest/src/index.js';

const CONCURRENCY = 16; // the adapter's default write concurrency
export const ESO = 'external-secrets-system';
/** The adapters' warnings and errors, on stderr: a refusal or a failed round shows in the run's output. */
export const ADAPTER_LOGGER: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: (fields, message) => process.stderr.write(`adapter warn: ${message} ${JSON.stringify(fields)}\n`),
  error: (fields, message) => process.stderr.write(`adapter error: ${message} ${JSON.stringify(fields)}\n`),
};

/** What {@link runKubernetesBenchmark} measures. */
export interface KubernetesBenchmark {
  readonly services: number;
  readonly setupSeconds: number;
  /** Adapter start (lists, watches) until every provider Secret held a leaf signed by the CA. */
  readonly convergeSeconds: number;
  /** The adapter's own request counter after convergence, by "verb resource". */
  readonly adapterRequests: Record<string, number>;
  /** The apiserver's audit log for the adapter's identity, by "verb resource". */
  readonly auditRequests: Record<string, number>;
  /** Secret writes (create + update) per provider namespace: min and max; and in the ESO namespace. */
  readonly writesPerProviderNamespace: { readonly min: number; readonly max: number };
  readonly esoNamespaceWrites: number;
  readonly eventsCreated: number;
  /** A reconcile with nothing due, after convergence. */
  readonly resync: { readonly written: number; readonly requests: Record<string, number>; readonly cpuMs: number; readonly wallMs: number };
  readonly adapterRssMb: number;
  /** After a full garbage collection: RSS, heap used, and external (Buffers) memory. */
  readonly afterGc: { readonly rssMb: number; readonly heapMb: number; readonly externalMb: number };
  /** RSS of the same process with everything loaded, before start (Node, client-node, our code). */
  readonly idleRssMb: number;
  readonly adapterHeapMb: number;
  readonly adapterCpuSeconds: number;
  /** The high-water mark of the adapter's RSS until convergence. */
  readonly adapterMaxRssMb: number;
  /** Where the adapter's memory is after convergence and a full GC. */
  readonly memory: MemoryBreakdown;
  readonly heapSnapshot: HeapSnapshotSummary | undefined;
  /**
   * Up to {@link RAW_LOOP_MAX_SERVICES}: a plain client-node loop (its default agent: a TLS
   * handshake per request) creating N Secrets and N Events, and the same requests over the
   * adapter's own transport (KubeRestClient: node:https, one keep-alive pool).
   */
  readonly raw: { readonly plainSeconds: number; readonly keepAliveSeconds: number } | undefined;
}

/** Above this, the raw loops (minutes at 50,000) are skipped. */
const RAW_LOOP_MAX_SERVICES = 10_000;

/** Runs `task` over `items` with at most `limit` in flight. */
export async function pool<T>(items: readonly T[], limit: number, task: (item: T, index: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const i = next++;
        await task(items[i]!, i);
      }
    }),
  );
}

/** The adapter in a process of its own (bench/kubernetes-adapter.child.mjs), so its memory is its own. */
export class AdapterProcess {
  private readonly replies: ((value: Record<string, unknown>) => void)[] = [];
  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    createInterface({ input: child.stdout }).on('line', (line) => this.replies.shift()?.(JSON.parse(line)));
  }

  /** Builds core and kubernetes to dist/ and starts the child on them, with optional policy overrides. */
  static async start(kubeconfigPath: string, policy: Record<string, number> = {}): Promise<{ process: AdapterProcess; idleRssBytes: number }> {
    const root = fileURLToPath(new URL('..', import.meta.url));
    execFileSync('npm', ['run', 'build', '-w', '@eso-mtls/core', '-w', '@eso-mtls/kubernetes'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
    // ESO_MTLS_BENCH_NODE_FLAGS: extra Node flags for the adapter process, e.g. --max-semi-space-size=1.
    const flags = (process.env.ESO_MTLS_BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
    const child = spawn(process.execPath, [...flags, '--expose-gc', 'bench/kubernetes-adapter.child.mjs', kubeconfigPath, ESO, JSON.stringify(policy)], {
      cwd: root,
    });
    child.stderr.pipe(process.stderr);
    const p = new AdapterProcess(child);
    const ready = await p.next();
    return { process: p, idleRssBytes: ready.rssBytes as number };
  }

  next(): Promise<Record<string, unknown>> {
    return new Promise((r) => this.replies.push(r));
  }

  close(): void {
    this.child.stdin.end();
  }

  async ask(command: string): Promise<Record<string, unknown>> {
    const reply = this.next();
    this.child.stdin.write(command + '\n');
    return reply;
  }
}

/** One identity's requests in the apiserver's audit log. */
export interface AuditTally {
  /** Requests by "verb resource", each counted once. */
  readonly requests: Record<string, number>;
  /** Successful Secret writes (create, update, patch) by namespace. */
  readonly secretWrites: Map<string, number>;
}

/**
 * Streams the audit log (at 50,000 Services it outgrows a string) and tallies `user`'s requests
 * received at or after `since`.
 */
export async function tallyAudit(path: string, user: string, since = 0): Promise<AuditTally> {
  const counts: Record<string, number> = {};
  const secretWrites = new Map<string, number>();
  const seen = new Set<string>();
  const needle = `"username":"${user}"`;
  for await (const line of createInterface({ input: createReadStream(path) })) {
    if (!line.includes(needle)) continue;
    const e = JSON.parse(line) as AuditEvent;
    if (e.user.username !== user || !e.objectRef?.resource || Date.parse(e.requestReceivedTimestamp) < since) continue;
    // A watch is logged at ResponseStarted and again at ResponseComplete: count each request once.
    if (!seen.has(e.auditID)) {
      seen.add(e.auditID);
      const key = `${e.verb} ${e.objectRef.resource}`;
      counts[key] = (counts[key] ?? 0) + 1;
    }
    const write = e.objectRef.resource === 'secrets' && ['create', 'update', 'patch'].includes(e.verb);
    if (write && e.stage === 'ResponseComplete' && (e.responseStatus?.code ?? 0) < 300) {
      const ns = e.objectRef.namespace ?? '';
      secretWrites.set(ns, (secretWrites.get(ns) ?? 0) + 1);
    }
  }
  return { requests: Object.fromEntries(Object.entries(counts).sort()), secretWrites };
}

/**
 * Creates an object; an existing one counts as created. A busy apiserver sometimes closes a
 * keep-alive connection under a request (ECONNRESET), which at 50,000 namespaces ended a
 * 20-minute setup: such a request is sent again, up to five times.
 */
async function ensureCreated(admin: KubeRestClient, path: string, body: unknown): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await admin.create(path, body);
      return;
    } catch (e) {
      if (e instanceof KubeApiError && e.code === 409) return;
      if (attempt === 5 || (e as NodeJS.ErrnoException).code !== 'ECONNRESET') throw e;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

/** Creates the ESO namespace, then N namespaces each with one labelled Service `provider`. */
export async function createProviderNamespaces(admin: KubeRestClient, namespaces: readonly string[]): Promise<void> {
  await ensureCreated(admin, corePath('namespaces'), { metadata: { name: ESO } });
  await pool(namespaces, CONCURRENCY, async (ns) => {
    await ensureCreated(admin, corePath('namespaces'), { metadata: { name: ns } });
    await ensureCreated(admin, corePath('services', ns), {
      metadata: { name: 'provider', labels: { [PROVIDER_LABEL]: 'true' } },
      // Headless: no ClusterIP to allocate, which slows setup down as a /16 range fills (50,000 Services).
      spec: { clusterIP: 'None', ports: [{ port: 8443 }] },
    });
  });
}

/** One run: set up N labelled Services, converge the adapter, then the raw loops. */
export async function runKubernetesBenchmark(
  services = 1000,
  options: { readonly heapSnapshot?: boolean; readonly rawLoops?: boolean } = {},
): Promise<KubernetesBenchmark> {
  const plane = await startControlPlane({ identities: [{ name: 'bench-adapter', groups: ['system:masters'] }], audit: true });
  try {
    const setupStart = performance.now();
    const admin = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig), { maxSockets: CONCURRENCY });
    const namespaces = Array.from({ length: services }, (_, i) => `bench-${i}`);
    await createProviderNamespaces(admin, namespaces);
    const setupSeconds = (performance.now() - setupStart) / 1000;

    // Watch every provider Secret from outside, checking each leaf against the CA with node:crypto.
    const valid = new Set<string>();
    let ca: X509Certificate | undefined;
    let allValid!: () => void;
    const converged = new Promise<void>((r) => (allValid = r));
    const check = (secret: V1Secret): void => {
      const ns = secret.metadata?.namespace ?? '';
      const pem = Buffer.from(secret.data?.['tls.crt'] ?? '', 'base64').toString();
      if (!pem) return;
      ca ??= new X509Certificate(Buffer.from(secret.data?.['ca.crt'] ?? '', 'base64'));
      const leaf = new X509Certificate(pem);
      if (leaf.checkIssued(ca) && leaf.verify(ca.publicKey) && leaf.checkHost(`provider.${ns}.svc`)) valid.add(ns);
      if (valid.size === services) allValid();
    };
    const watcher = providerSecretInformer(admin);
    watcher.onChange((e) => e.type !== 'DELETED' && check(e.object));
    watcher.start();
    await watcher.synced;

    const { process: adapter, idleRssBytes } = await AdapterProcess.start(plane.identity('bench-adapter').kubeconfigPath);
    const t0 = performance.now();
    const convergeTimeout = setTimeout(() => {
      process.stderr.write(`bench: gave up: ${valid.size}/${services} provider Secrets valid after 15 minutes\n`);
      process.exit(1);
    }, 15 * 60_000);
    await adapter.ask('start');
    const progress = setInterval(
      () => process.stderr.write(`bench: ${valid.size}/${services} provider Secrets valid after ${((performance.now() - t0) / 1000).toFixed(0)} s\n`),
      10_000,
    );
    await converged;
    clearInterval(progress);
    clearTimeout(convergeTimeout);
    const convergeSeconds = (performance.now() - t0) / 1000;
    await watcher.stop();
    await new Promise((r) => setTimeout(r, 2000)); // the adapter's follow-up reconcile finds nothing to do
    const afterConverge = await adapter.ask('report');
    // A resync with nothing due, three times: the first may still find a cache to warm.
    const resyncs: KubernetesBenchmark['resync'][] = [];
    for (let i = 0; i < 3; i++) resyncs.push((await adapter.ask('resync')).resync as KubernetesBenchmark['resync']);
    const final = await adapter.ask('report');
    const snapshotPath = options.heapSnapshot ? join(plane.dir, 'adapter.heapsnapshot') : '';
    const memory = (await adapter.ask(`memory ${snapshotPath}`)).memory as MemoryBreakdown;
    await adapter.ask('stop');
    adapter.close();
    const heapSnapshot = snapshotPath ? summarizeHeapSnapshot(snapshotPath) : undefined;

    const audit = await tallyAudit(plane.auditLogPath!, 'bench-adapter');
    const perNamespace = namespaces.map((ns) => audit.secretWrites.get(ns) ?? 0);

    let raw: KubernetesBenchmark['raw'];
    if (options.rawLoops !== false && services <= RAW_LOOP_MAX_SERVICES) {
      // The apiserver's own limit: plain client-node, N Secrets (same size as ours) and N Events.
      const payload = (await admin.get<V1Secret>(corePath('secrets', namespaces[0]!, PROVIDER_SECRET_NAME))).data!;
      const secret = (ns: string, tag: string): V1Secret => ({ metadata: { name: `raw-${tag}`, namespace: ns }, type: 'kubernetes.io/tls', data: payload });
      const event = (ns: string, tag: string): CoreV1Event => ({
        metadata: { name: `raw-${tag}.${ns}`, namespace: ns },
        involvedObject: { apiVersion: 'v1', kind: 'Service', namespace: ns, name: 'provider' },
        type: 'Normal',
        reason: 'Issued',
        message: 'raw loop',
        source: { component: 'bench' },
        count: 1,
        firstTimestamp: new Date(),
        lastTimestamp: new Date(),
      });
      const timed = async (create: (ns: string) => Promise<unknown>): Promise<number> => {
        const start = performance.now();
        await pool(namespaces, CONCURRENCY, create);
        return (performance.now() - start) / 1000;
      };
      const core = plane.adminKubeConfig.makeApiClient(CoreV1Api);
      const plainSeconds = await timed(async (ns) => {
        await core.createNamespacedSecret({ namespace: ns, body: secret(ns, 'plain') });
        await core.createNamespacedEvent({ namespace: ns, body: event(ns, 'plain') });
      });
      const keepAliveSeconds = await timed(async (ns) => {
        await admin.create(corePath('secrets', ns), secret(ns, 'keepalive'));
        await admin.create(corePath('events', ns), event(ns, 'keepalive'));
      });
      raw = { plainSeconds, keepAliveSeconds };
    }
    admin.close();

    return {
      services,
      setupSeconds,
      convergeSeconds,
      adapterRequests: afterConverge.requests as Record<string, number>,
      auditRequests: audit.requests,
      writesPerProviderNamespace: { min: Math.min(...perNamespace), max: Math.max(...perNamespace) },
      esoNamespaceWrites: audit.secretWrites.get(ESO) ?? 0,
      eventsCreated: (final.events as { created: number }).created,
      resync: resyncs.at(-1)!,
      adapterRssMb: (afterConverge.rssBytes as number) / 2 ** 20,
      adapterMaxRssMb: (afterConverge.maxRssBytes as number) / 2 ** 20,
      idleRssMb: idleRssBytes / 2 ** 20,
      afterGc: {
        rssMb: (afterConverge.rssAfterGcBytes as number) / 2 ** 20,
        heapMb: (afterConverge.heapAfterGcBytes as number) / 2 ** 20,
        externalMb: (afterConverge.externalAfterGcBytes as number) / 2 ** 20,
      },
      adapterHeapMb: (afterConverge.heapUsedBytes as number) / 2 ** 20,
      adapterCpuSeconds: (afterConverge.cpuMs as number) / 1000,
      memory,
      heapSnapshot,
      raw,
    };
  } finally {
    await plane.stop();
  }
}

/** What the adapter child reports for `memory`, after a full GC (see kubernetes-adapter.child.mjs). */
export interface MemoryBreakdown {
  readonly spaces: Record<string, { readonly usedBytes: number; readonly physicalBytes: number }>;
  readonly heapPhysicalBytes: number;
  readonly heapUsedBytes: number;
  readonly mallocedByV8Bytes: number;
  readonly externalBytes: number;
  readonly arrayBuffersBytes: number;
  readonly rssBytes: number;
  readonly residentKb: Record<'nodeBinary' | 'sharedLibraries' | 'otherFiles' | 'brkHeap' | 'anonymous' | 'stacks', number>;
}

/** A {@link MemoryBreakdown} as three lines of markdown. */
export function formatMemory(m: MemoryBreakdown): string {
  const mb = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MB`;
  const resident = Object.entries(m.residentKb).map(([k, kb]) => `${k} ${(kb / 1024).toFixed(1)} MB`);
  const spaces = Object.entries(m.spaces)
    .filter(([, v]) => v.physicalBytes > 0)
    .map(([k, v]) => `${k} ${mb(v.usedBytes)}/${mb(v.physicalBytes)}`);
  return [
    `Memory after a full GC: RSS ${mb(m.rssBytes)} = ${resident.join(', ')}.`,
    `V8 heap: ${mb(m.heapUsedBytes)} used of ${mb(m.heapPhysicalBytes)} resident; by space (used/resident): ${spaces.join(', ')}.`,
    `Outside the heap: external ${mb(m.externalBytes)} (of which ArrayBuffers ${mb(m.arrayBuffersBytes)}), malloced by V8 ${mb(m.mallocedByV8Bytes)}.`,
  ].join('\n');
}

/** One row of a heap snapshot summary. */
interface HeapRow {
  readonly name: string;
  readonly count: number;
  readonly selfMb: number;
}

/** Heap snapshot totals: self size by constructor, and strings and arrays by who holds them. */
interface HeapSnapshotSummary {
  readonly totalMb: number;
  readonly byConstructor: readonly HeapRow[];
  /** Strings, arrays and code, each charged to its first strong retainer: `Owner.edge`. */
  readonly byRetainer: readonly HeapRow[];
}

/** Parses a V8 heap snapshot (v8.writeHeapSnapshot) into per-constructor and per-retainer totals. */
function summarizeHeapSnapshot(path: string): HeapSnapshotSummary {
  const snapshot = JSON.parse(readFileSync(path, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
    nodes: number[];
    edges: number[];
    strings: string[];
  };
  const { meta } = snapshot.snapshot;
  const nodeWidth = meta.node_fields.length;
  const edgeWidth = meta.edge_fields.length;
  const [typeAt, nameAt, sizeAt, edgeCountAt] = ['type', 'name', 'self_size', 'edge_count'].map((f) => meta.node_fields.indexOf(f)) as [
    number,
    number,
    number,
    number,
  ];
  const [edgeTypeAt, edgeNameAt, toAt] = ['type', 'name_or_index', 'to_node'].map((f) => meta.edge_fields.indexOf(f)) as [number, number, number];
  const nodeTypes = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const { nodes, edges, strings } = snapshot;
  const count = nodes.length / nodeWidth;
  const label = (n: number): string => {
    const type = nodeTypes[nodes[n * nodeWidth + typeAt]!]!;
    return type === 'object' || type === 'native' ? strings[nodes[n * nodeWidth + nameAt]!]! : `(${type})`;
  };
  // First strong retainer of each node, in edge order.
  const retainer = new Int32Array(count).fill(-1);
  const retainerEdge = new Array<string>(count);
  for (let n = 0, e = 0; n < count; n++) {
    const end = e + nodes[n * nodeWidth + edgeCountAt]! * edgeWidth;
    for (; e < end; e += edgeWidth) {
      const type = edgeTypes[edges[e + edgeTypeAt]!]!;
      if (type === 'weak' || type === 'shortcut') continue;
      const to = edges[e + toAt]! / nodeWidth;
      if (retainer[to] !== -1) continue;
      retainer[to] = n;
      retainerEdge[to] = type === 'element' || type === 'hidden' ? '[]' : strings[edges[e + edgeNameAt]!]!;
    }
  }
  const byConstructor = new Map<string, { count: number; bytes: number }>();
  const byRetainer = new Map<string, { count: number; bytes: number }>();
  const add = (map: Map<string, { count: number; bytes: number }>, key: string, bytes: number): void => {
    const row = map.get(key) ?? { count: 0, bytes: 0 };
    row.count++;
    row.bytes += bytes;
    map.set(key, row);
  };
  let total = 0;
  for (let n = 0; n < count; n++) {
    const bytes = nodes[n * nodeWidth + sizeAt]!;
    total += bytes;
    const name = label(n);
    add(byConstructor, name, bytes);
    if (/^\((string|concatenated string|sliced string|array|code)\)$/.test(name) && retainer[n] !== -1) {
      add(byRetainer, `${name} in ${label(retainer[n]!)}.${retainerEdge[n]}`, bytes);
    }
  }
  const top = (map: Map<string, { count: number; bytes: number }>): HeapRow[] =>
    [...map]
      .sort((a, b) => b[1].bytes - a[1].bytes)
      .slice(0, 15)
      .map(([name, r]) => ({ name, count: r.count, selfMb: r.bytes / 2 ** 20 }));
  return { totalMb: total / 2 ** 20, byConstructor: top(byConstructor), byRetainer: top(byRetainer) };
}

/** The figures as markdown. */
export function formatKubernetesBenchmark(b: KubernetesBenchmark): string {
  const verbs = (r: Record<string, number>): string =>
    Object.entries(r)
      .map(([k, n]) => `${k}: ${n}`)
      .join(', ') || 'none';
  const perService = (mbValue: number): string => `${((mbValue * 2 ** 10) / b.services).toFixed(1)} KB`;
  const raw = b.raw
    ? [
        `| plain client-node loop: ${b.services} Secrets + ${b.services} Events, ${CONCURRENCY} in flight | ${b.raw.plainSeconds.toFixed(2)} s |`,
        `| same requests over the adapter's transport (one keep-alive pool) | ${b.raw.keepAliveSeconds.toFixed(2)} s |`,
        `| ratio adapter / plain loop | ${(b.convergeSeconds / b.raw.plainSeconds).toFixed(2)} |`,
      ]
    : [`| raw loops | not run (above ${RAW_LOOP_MAX_SERVICES.toLocaleString('en')} Services, or --no-raw-loops) |`];
  const lines = [
    `| Kubernetes adapter, ${b.services.toLocaleString('en')} labelled Services in as many namespaces | |`,
    '|---|---:|',
    `| adapter start → every provider Secret valid | ${b.convergeSeconds.toFixed(2)} s (${((b.convergeSeconds * 1000) / b.services).toFixed(2)} ms per Service) |`,
    ...raw,
    `| Secret writes per provider namespace (min-max) | ${b.writesPerProviderNamespace.min}-${b.writesPerProviderNamespace.max} |`,
    `| Secret writes in the ESO namespace | ${b.esoNamespaceWrites} |`,
    `| Events created | ${b.eventsCreated} |`,
    `| resync with nothing due: writes / requests / CPU / wall | ${b.resync.written} / ${verbs(b.resync.requests)} / ${b.resync.cpuMs.toFixed(0)} ms / ${b.resync.wallMs.toFixed(0)} ms |`,
    `| adapter process RSS after convergence (heap used); peak RSS | ${b.adapterRssMb.toFixed(0)} MB (${b.adapterHeapMb.toFixed(0)} MB); ${b.adapterMaxRssMb.toFixed(0)} MB |`,
    `| the same, after a full GC: RSS (heap used, external) | ${b.afterGc.rssMb.toFixed(0)} MB (${b.afterGc.heapMb.toFixed(0)} MB, ${b.afterGc.externalMb.toFixed(0)} MB) |`,
    `| the same process loaded but not started | ${b.idleRssMb.toFixed(0)} MB |`,
    `| per Service above idle: RSS after GC / heap after GC | ${perService(b.afterGc.rssMb - b.idleRssMb)} / ${perService(b.afterGc.heapMb)} |`,
    `| adapter CPU until convergence | ${b.adapterCpuSeconds.toFixed(1)} s (${((b.adapterCpuSeconds * 1000) / b.services).toFixed(2)} ms per Service) |`,
    '',
    `Adapter requests (its counter): ${verbs(b.adapterRequests)}.`,
    `Adapter requests (apiserver audit log, whole run): ${verbs(b.auditRequests)}.`,
    `(Setting up the ${b.services} namespaces and Services took ${b.setupSeconds.toFixed(1)} s.)`,
    '',
    formatMemory(b.memory),
  ];
  if (b.heapSnapshot) {
    const rows = (title: string, r: readonly HeapRow[]): string[] => [
      '',
      `| ${title} | objects | self size |`,
      '|---|---:|---:|',
      ...r.map((x) => `| ${x.name.replaceAll('|', '\\|')} | ${x.count} | ${x.selfMb.toFixed(1)} MB |`),
    ];
    lines.push('', `Heap snapshot: ${b.heapSnapshot.totalMb.toFixed(1)} MB in all.`);
    lines.push(...rows('by constructor', b.heapSnapshot.byConstructor), ...rows('strings, arrays and code by first retainer', b.heapSnapshot.byRetainer));
  }
  return lines.join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  const services = Number(args.find((a) => !a.startsWith('--')) ?? 1000);
  console.log(
    formatKubernetesBenchmark(
      await runKubernetesBenchmark(services, { heapSnapshot: args.includes('--heap-snapshot'), rawLoops: !args.includes('--no-raw-loops') }),
    ),
  );
}

/** An informer on every provider Secret in the cluster, as the bench's admin sees them: how a bench sees convergence. */
export function providerSecretInformer(admin: KubeRestClient): Informer<V1Secret> {
  return new Informer<V1Secret>(
    {
      description: 'bench: provider Secrets',
      resource: 'secrets',
      list: (page) => admin.get<ListPage<V1Secret>>(corePath('secrets'), { fieldSelector: `metadata.name=${PROVIDER_SECRET_NAME}`, ...page }),
      watchPath: corePath('secrets'),
      fieldSelector: `metadata.name=${PROVIDER_SECRET_NAME}`,
    },
    { watch: admin, counter: admin.counter },
  );
}
