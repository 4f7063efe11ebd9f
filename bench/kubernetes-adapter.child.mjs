// The adapter alone in a process, run from the packages' compiled dist/ (no TypeScript loader in
// memory), so the benchmark reads the adapter's own RSS. Driven over stdin/stdout with JSON lines:
// prints {"ready":true}, then answers "start", "report", "resync" and "stop".
//
//   node bench/kubernetes-adapter.child.mjs <kubeconfig> <esoNamespace>
import { createInterface } from 'node:readline';
import { ProviderCertificateAdapter, loadKubeconfigFile } from '@eso-mtls/kubernetes';

const [kubeconfigPath, esoNamespace] = process.argv.slice(2);
if (!kubeconfigPath || !esoNamespace) throw new Error('usage: kubernetes-adapter.child.mjs <kubeconfig> <esoNamespace>');
// As the controller loads it: our own kubeconfig reader, so client-node is never imported.
const connection = loadKubeconfigFile(kubeconfigPath);
const adapter = await ProviderCertificateAdapter.create({ connection, policy: { esoNamespace } });

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
  } else if (line === 'stop') {
    await adapter.stop();
    process.stdout.write(JSON.stringify({ stopped: true }) + '\n', () => process.exit(0));
  }
}
