// The adapter alone in a process, run from the packages' compiled dist/ (no TypeScript loader in
// memory), so the benchmark reads the adapter's own RSS. Driven over stdin/stdout with JSON lines:
// prints {"ready":true}, then answers "start", "report", "resync", "memory [heap snapshot path]",
// "seen <namespace> <resourceVersion>" and "stop". The optional third argument is JSON of policy overrides (durations in ms).
//
//   node bench/kubernetes-adapter.child.mjs <kubeconfig> <esoNamespace> [policy JSON]
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { getHeapSpaceStatistics, getHeapStatistics, writeHeapSnapshot } from 'node:v8';
import { ProviderCertificateAdapter, loadKubeconfigFile } from '@eso-mtls/kubernetes';

const [kubeconfigPath, esoNamespace, policyJson] = process.argv.slice(2);
if (!kubeconfigPath || !esoNamespace) throw new Error('usage: kubernetes-adapter.child.mjs <kubeconfig> <esoNamespace> [policy JSON]');
// As the controller loads it: our own kubeconfig reader, so client-node is never imported.
const connection = loadKubeconfigFile(kubeconfigPath);
const adapter = await ProviderCertificateAdapter.create({ connection, policy: { ...JSON.parse(policyJson ?? '{}'), esoNamespace } });

// When the Service informer delivered each event of Services in namespaces named watch-probe*,
// by "namespace/resourceVersion": the watch lag, as the adapter's own cache sees it.
const serviceSeen = new Map();
adapter.informers.services.onChange(({ object }) => {
  const { namespace, resourceVersion } = object.metadata ?? {};
  if (namespace?.startsWith('watch-probe')) serviceSeen.set(`${namespace}/${resourceVersion}`, Date.now());
});

const send = (message) => void process.stdout.write(JSON.stringify(message) + '\n');
const cpuMs = (since) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
};
const report = () => ({
  rssBytes: process.memoryUsage().rss,
  // The high-water mark since the process started (getrusage reports kilobytes).
  maxRssBytes: process.resourceUsage().maxRSS * 1024,
  heapUsedBytes: process.memoryUsage().heapUsed,
  ...afterGc(),
  requests: adapter.requests.snapshot(),
  informers: adapter.informerStats(),
  events: adapter.eventStats,
  rounds: adapter.rounds,
  cpuMs: cpuMs(),
});

// With --expose-gc: the same figures after a full collection (what the process really holds).
function afterGc() {
  if (typeof globalThis.gc !== 'function') return {};
  globalThis.gc();
  const m = process.memoryUsage();
  return { rssAfterGcBytes: m.rss, heapAfterGcBytes: m.heapUsed, externalAfterGcBytes: m.external };
}

/** Resident kilobytes of /proc/self/smaps, summed by kind of mapping. */
function residentByMapping() {
  const kb = { nodeBinary: 0, sharedLibraries: 0, otherFiles: 0, brkHeap: 0, anonymous: 0, stacks: 0 };
  let kind = 'anonymous';
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header) {
      const path = header[1];
      kind =
        path === ''
          ? 'anonymous'
          : path === '[heap]'
            ? 'brkHeap'
            : path.startsWith('[stack')
              ? 'stacks'
              : path.startsWith('[')
                ? 'otherFiles'
                : path === process.execPath
                  ? 'nodeBinary'
                  : /\.so(\.|$)/.test(path)
                    ? 'sharedLibraries'
                    : 'otherFiles';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) kb[kind] += Number(rss[1]);
  }
  return kb;
}

// After a full GC: V8's heap spaces, what V8 accounts outside them, and RSS by mapping, so RSS
// minus the heap and the binary leaves the native (malloc: OpenSSL, libuv, zlib) remainder.
function memory(snapshotPath) {
  globalThis.gc?.();
  const spaces = Object.fromEntries(
    getHeapSpaceStatistics().map((s) => [s.space_name, { usedBytes: s.space_used_size, physicalBytes: s.physical_space_size }]),
  );
  const heap = getHeapStatistics();
  const usage = process.memoryUsage();
  const result = {
    spaces,
    heapPhysicalBytes: heap.total_physical_size,
    heapUsedBytes: heap.used_heap_size,
    mallocedByV8Bytes: heap.malloced_memory,
    externalBytes: usage.external,
    arrayBuffersBytes: usage.arrayBuffers,
    rssBytes: usage.rss,
    residentKb: residentByMapping(),
  };
  if (snapshotPath) writeHeapSnapshot(snapshotPath);
  return result;
}

send({ ready: true, rssBytes: process.memoryUsage().rss });
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'start') {
    await adapter.start();
    send({ started: true });
  } else if (line === 'report') {
    await adapter.flushEvents();
    send(report());
  } else if (line === 'resync') {
    // A resync with nothing due: one full reconcile over the caches, measured.
    const before = adapter.requests.snapshot();
    const cpu = process.cpuUsage();
    const started = performance.now();
    const round = await adapter.reconcileNow();
    const wallMs = performance.now() - started;
    const roundCpuMs = cpuMs(cpu);
    await new Promise((r) => setTimeout(r, 2000)); // anything the round set off would show up here
    send({
      resync: {
        written: round?.written,
        stale: round?.stale,
        failed: round?.failed,
        wallMs,
        cpuMs: roundCpuMs,
        requests: adapter.requests.since(before),
        cache: adapter.certificateCache.stats,
      },
    });
  } else if (line === 'memory' || line.startsWith('memory ')) {
    send({ memory: memory(line.slice('memory '.length)) });
  } else if (line.startsWith('seen ')) {
    const [, namespace, resourceVersion] = line.split(' ');
    const key = `${namespace}/${resourceVersion}`;
    while (!serviceSeen.has(key)) await new Promise((r) => setTimeout(r, 5));
    send({ seenAt: serviceSeen.get(key) });
  } else if (line === 'stop') {
    await adapter.stop();
    process.stdout.write(JSON.stringify({ stopped: true }) + '\n', () => process.exit(0));
  }
}
