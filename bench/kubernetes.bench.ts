/**
 * The Kubernetes adapter against a real kube-apiserver: N labelled Services in N namespaces →
 * time until every provider Secret holds a valid leaf, API requests by verb (the adapter's own
 * counter and the apiserver's audit log), Secret writes per namespace, a resync with nothing due,
 * and the adapter process's RSS; against a plain client-node loop creating N Secrets and N Events
 * at the adapter's concurrency, as the apiserver's own limit.
 *
 *   node --import ./scripts/register-ts.mjs bench/kubernetes.bench.ts [services]
 */
import 'reflect-metadata';
import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { PROVIDER_LABEL, PROVIDER_SECRET_NAME } from '@eso-mtls/core';
import { Informer, KubeRestClient, type ListPage, connectionFromKubeConfig, corePath } from '@eso-mtls/kubernetes';
import { type CoreV1Event, CoreV1Api, type V1Secret } from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../testing/envtest/src/index.js';

const CONCURRENCY = 16; // the adapter's default write concurrency
export const ESO = 'external-secrets-system';

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
  /** A plain client-node loop (its default agent: a TLS handshake per request) creating N Secrets and N Events. */
  readonly rawLoopSeconds: number;
  /** The same requests over the adapter's own transport (KubeRestClient: node:https, one keep-alive pool). */
  readonly rawKeepAliveLoopSeconds: number;
}

/** Runs `task` over `items` with at most `limit` in flight. */
async function pool<T>(items: readonly T[], limit: number, task: (item: T, index: number) => Promise<unknown>): Promise<void> {
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

  /** Builds core and kubernetes to dist/ and starts the child on them. */
  static async start(kubeconfigPath: string): Promise<{ process: AdapterProcess; idleRssBytes: number }> {
    const root = fileURLToPath(new URL('..', import.meta.url));
    execFileSync('npm', ['run', 'build', '-w', '@eso-mtls/core', '-w', '@eso-mtls/kubernetes'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
    // ESO_MTLS_BENCH_NODE_FLAGS: extra Node flags for the adapter process, e.g. --max-semi-space-size=1.
    const flags = (process.env.ESO_MTLS_BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
    const child = spawn(process.execPath, [...flags, '--expose-gc', 'bench/kubernetes-adapter.child.mjs', kubeconfigPath, ESO], { cwd: root });
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

function tally(events: ReturnType<ControlPlane['auditEvents']>, user: string): Record<string, number> {
  const counts: Record<string, number> = {};
  const seen = new Set<string>();
  for (const e of events) {
    // A watch is logged at ResponseStarted and again at ResponseComplete: count each request once.
    if (e.user.username !== user || !e.objectRef?.resource || seen.has(e.auditID)) continue;
    seen.add(e.auditID);
    const key = `${e.verb} ${e.objectRef.resource}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(counts).sort());
}

/** One run: set up N labelled Services, converge the adapter, then the raw loops. */
export async function runKubernetesBenchmark(services = 1000): Promise<KubernetesBenchmark> {
  const plane = await startControlPlane({ identities: [{ name: 'bench-adapter', groups: ['system:masters'] }], audit: true });
  try {
    const setupStart = performance.now();
    const admin = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig), { maxSockets: CONCURRENCY });
    const namespaces = Array.from({ length: services }, (_, i) => `bench-${i}`);
    await admin.create(corePath('namespaces'), { metadata: { name: ESO } });
    await pool(namespaces, CONCURRENCY, async (ns) => {
      await admin.create(corePath('namespaces'), { metadata: { name: ns } });
      await admin.create(corePath('services', ns), {
        metadata: { name: 'provider', labels: { [PROVIDER_LABEL]: 'true' } },
        spec: { ports: [{ port: 8443 }] },
      });
    });
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
    const watcher = new Informer<V1Secret>(
      {
        description: 'bench: provider Secrets',
        resource: 'secrets',
        list: (page) => admin.get<ListPage<V1Secret>>(corePath('secrets'), { fieldSelector: `metadata.name=${PROVIDER_SECRET_NAME}`, ...page }),
        watchPath: corePath('secrets'),
        fieldSelector: `metadata.name=${PROVIDER_SECRET_NAME}`,
      },
      { watch: admin, counter: admin.counter },
    );
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
    const resync = (await adapter.ask('resync')).resync as KubernetesBenchmark['resync'];
    const final = await adapter.ask('report');
    await adapter.ask('stop');
    adapter.close();

    const audit = plane.auditEvents();
    const writes = new Map<string, number>();
    for (const e of audit) {
      if (e.stage !== 'ResponseComplete') continue;
      if (e.user.username !== 'bench-adapter' || e.objectRef?.resource !== 'secrets' || !['create', 'update', 'patch'].includes(e.verb)) continue;
      if ((e.responseStatus?.code ?? 0) >= 300) continue;
      const ns = e.objectRef.namespace ?? '';
      writes.set(ns, (writes.get(ns) ?? 0) + 1);
    }
    const perNamespace = namespaces.map((ns) => writes.get(ns) ?? 0);

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
    const rawLoopSeconds = await timed(async (ns) => {
      await core.createNamespacedSecret({ namespace: ns, body: secret(ns, 'plain') });
      await core.createNamespacedEvent({ namespace: ns, body: event(ns, 'plain') });
    });
    const rawKeepAliveLoopSeconds = await timed(async (ns) => {
      await admin.create(corePath('secrets', ns), secret(ns, 'keepalive'));
      await admin.create(corePath('events', ns), event(ns, 'keepalive'));
    });
    admin.close();

    return {
      services,
      setupSeconds,
      convergeSeconds,
      adapterRequests: afterConverge.requests as Record<string, number>,
      auditRequests: tally(audit, 'bench-adapter'),
      writesPerProviderNamespace: { min: Math.min(...perNamespace), max: Math.max(...perNamespace) },
      esoNamespaceWrites: writes.get(ESO) ?? 0,
      eventsCreated: (final.events as { created: number }).created,
      resync,
      adapterRssMb: (afterConverge.rssBytes as number) / 2 ** 20,
      idleRssMb: idleRssBytes / 2 ** 20,
      afterGc: {
        rssMb: (afterConverge.rssAfterGcBytes as number) / 2 ** 20,
        heapMb: (afterConverge.heapAfterGcBytes as number) / 2 ** 20,
        externalMb: (afterConverge.externalAfterGcBytes as number) / 2 ** 20,
      },
      adapterHeapMb: (afterConverge.heapUsedBytes as number) / 2 ** 20,
      adapterCpuSeconds: (afterConverge.cpuMs as number) / 1000,
      rawLoopSeconds,
      rawKeepAliveLoopSeconds,
    };
  } finally {
    await plane.stop();
  }
}

/** The figures as markdown. */
export function formatKubernetesBenchmark(b: KubernetesBenchmark): string {
  const verbs = (r: Record<string, number>): string =>
    Object.entries(r)
      .map(([k, n]) => `${k}: ${n}`)
      .join(', ') || 'none';
  return [
    `| Kubernetes adapter, ${b.services.toLocaleString('en')} labelled Services in as many namespaces | |`,
    '|---|---:|',
    `| adapter start → every provider Secret valid | ${b.convergeSeconds.toFixed(2)} s |`,
    `| plain client-node loop: ${b.services} Secrets + ${b.services} Events, ${CONCURRENCY} in flight | ${b.rawLoopSeconds.toFixed(2)} s |`,
    `| same requests over the adapter's transport (one keep-alive pool) | ${b.rawKeepAliveLoopSeconds.toFixed(2)} s |`,
    `| ratio adapter / plain loop | ${(b.convergeSeconds / b.rawLoopSeconds).toFixed(2)} |`,
    `| Secret writes per provider namespace (min-max) | ${b.writesPerProviderNamespace.min}-${b.writesPerProviderNamespace.max} |`,
    `| Secret writes in the ESO namespace | ${b.esoNamespaceWrites} |`,
    `| Events created | ${b.eventsCreated} |`,
    `| resync with nothing due: writes / requests / CPU | ${b.resync.written} / ${verbs(b.resync.requests)} / ${b.resync.cpuMs.toFixed(0)} ms |`,
    `| adapter process RSS after convergence (heap used) | ${b.adapterRssMb.toFixed(0)} MB (${b.adapterHeapMb.toFixed(0)} MB) |`,
    `| the same, after a full GC: RSS (heap used, external) | ${b.afterGc.rssMb.toFixed(0)} MB (${b.afterGc.heapMb.toFixed(0)} MB, ${b.afterGc.externalMb.toFixed(0)} MB) |`,
    `| the same process loaded but not started | ${b.idleRssMb.toFixed(0)} MB |`,
    `| adapter CPU until convergence | ${b.adapterCpuSeconds.toFixed(1)} s |`,
    '',
    `Adapter requests (its counter): ${verbs(b.adapterRequests)}.`,
    `Adapter requests (apiserver audit log, whole run): ${verbs(b.auditRequests)}.`,
    `(Setting up the ${b.services} namespaces and Services took ${b.setupSeconds.toFixed(1)} s.)`,
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(formatKubernetesBenchmark(await runKubernetesBenchmark(Number(process.argv[2] ?? 1000))));
}
