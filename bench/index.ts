/**
 * Runs every benchmark in one process, one after another, and prints their tables with the
 * machine they ran on. `npm run bench -- issue plan` runs a subset.
 */
import 'reflect-metadata';
import { cpus, totalmem } from 'node:os';
import { formatIssueBenchmark, runIssueBenchmark } from './issue.bench.js';
import { formatPlanBenchmark, runPlanBenchmark } from './plan.bench.js';
import { formatKubernetesBenchmark, runKubernetesBenchmark } from './kubernetes.bench.js';
import { formatGrpcBenchmark, runGrpcBenchmark } from './grpc.bench.js';
import { formatKeygenBenchmark, runKeygenBenchmark } from './keygen.bench.js';
import { formatTenantAnnotationsBenchmark, runTenantAnnotationsBenchmark } from './tenant-annotations.bench.js';
import { certManagerBenchmarkTable } from './cert-manager.bench.js';

const benchmarks: Record<string, () => Promise<string>> = {
  issue: async () => formatIssueBenchmark(await runIssueBenchmark()),
  plan: async () => formatPlanBenchmark(await runPlanBenchmark()),
  kubernetes: async () => formatKubernetesBenchmark(await runKubernetesBenchmark()),
  grpc: async () => formatGrpcBenchmark(await runGrpcBenchmark()),
  keygen: async () => formatKeygenBenchmark(await runKeygenBenchmark()),
  tenant: async () => formatTenantAnnotationsBenchmark(await runTenantAnnotationsBenchmark()),
  'ca-rotation': async () => import('./ca-rotation.bench.js').then(async (m) => m.formatCaRotationBenchmark(await m.runCaRotationBenchmark())),
  'cert-manager': async () => certManagerBenchmarkTable(),
  'upstream-renewal': async () =>
    import('./upstream-renewal.bench.js').then(async (m) => m.formatUpstreamRenewalBenchmark(await m.runUpstreamRenewalBenchmark())),
  simulate: async () => import('./simulate.bench.js').then(async (m) => m.formatSimulateBenchmark(await m.runSimulateBenchmark())),
  'pod-backlog': async () => import('./pod-backlog.bench.js').then(async (m) => m.formatPodBacklogBenchmark(await m.runPodBacklogBenchmark())),
  'pod-requests-memory': async () =>
    import('./pod-requests-memory.bench.js').then(async (m) => m.formatPodRequestsMemoryBenchmark(await m.runPodRequestsMemoryBenchmark())),
  'signer-event-loop': async () =>
    import('./signer-event-loop.bench.js').then(async (m) => m.formatSignerEventLoopBenchmark(await m.runSignerEventLoopBenchmark())),
  'pod-certificates': async () => import('./pod-certificates.js').then(async (m) => m.formatPodCertificateBenchmark(await m.runPodCertificateBenchmark())),
  // A real node: root, and about 5 minutes with the images and node binaries cached.
  'pod-certificates-real-node': async () =>
    import('./pod-certificates-real-node.js').then(async (m) => m.formatRealNodePodCertificateBenchmark(await m.runRealNodePodCertificateBenchmark())),
};

const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !(w in benchmarks));
if (unknown.length > 0) {
  console.error(`unknown benchmark(s) ${unknown.join(', ')}; choose from ${Object.keys(benchmarks).join(', ')}`);
  process.exit(2);
}

const cpu = cpus();
console.log(`# eso-mtls benchmarks, ${new Date().toISOString()}`);
console.log(`machine: ${cpu.length} x ${cpu[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}\n`);
for (const name of wanted.length > 0 ? wanted : Object.keys(benchmarks)) {
  console.log(`## ${name}\n`);
  console.log(await benchmarks[name]!());
  console.log();
}
