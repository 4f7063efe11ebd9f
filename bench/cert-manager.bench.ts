/**
 * cert-manager's controller against the same real kube-apiserver as our adapter, in the same run:
 * a CA ClusterIssuer and N Certificates (one per namespace, our SANs, P-256, 90 days, renewed 35
 * days before expiry) → time until every Certificate is Ready, the apiserver's audit log for
 * cert-manager's identity by verb, and the controller's RSS (peak and at the end); then our
 * adapter's convergence for N labelled Services (bench/kubernetes.bench.ts), and the ratios.
 *
 * The controller is built once from the Go module proxy by scripts/ensure-cert-manager.sh, its
 * CRDs rendered from the same module's Helm chart; kubectl (scripts/ensure-kubectl.sh) installs them.
 *
 *   node --import ./scripts/register-ts.mjs bench/cert-manager.bench.ts [certificates]
 */
import 'reflect-metadata';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { createWriteStream, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { issueCa, resolvePolicy } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { Informer, KubeRestClient, type ListPage, connectionFromKubeConfig, corePath } from '@eso-mtls/kubernetes';
import { type V1Secret } from '@kubernetes/client-node';
import { startControlPlane } from '../testing/envtest/src/index.js';
import { type KubernetesBenchmark, pool, runKubernetesBenchmark, tallyAudit } from './kubernetes.bench.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CONCURRENCY = 16; // as the adapter benchmark sets up its namespaces
const USER = 'bench-cert-manager';
const CA_NAMESPACE = 'kube-system'; // the controller's default cluster resource namespace
const CERTIFICATES = '/apis/cert-manager.io/v1/certificates';
const GIVE_UP_MS = 15 * 60_000;
const LOG = join(tmpdir(), 'eso-mtls-bench-cert-manager.log'); // the controller's log, kept after the run

/** What {@link runCertManagerBenchmark} measures. */
interface CertManagerBenchmark {
  readonly certificates: number;
  readonly version: string;
  readonly setupSeconds: number;
  /** Controller start until every Certificate had Ready=True. */
  readonly readySeconds: number;
  /** The apiserver's audit log for cert-manager's identity, start to stop, by "verb resource". */
  readonly auditRequests: Record<string, number>;
  /** Secrets whose leaf is signed by the CA and names `provider.<ns>.svc`, checked after the run. */
  readonly validSecrets: number;
  readonly peakRssMb: number;
  /** RSS two seconds after the last Certificate became Ready. */
  readonly endRssMb: number;
  readonly cpuSeconds: number;
  readonly adapter: KubernetesBenchmark;
}

/** Builds (once) and locates the controller; its CRDs lie beside it. */
function ensureCertManager(): { binary: string; crds: string; version: string } {
  const binary = execFileSync('bash', [join(ROOT, 'scripts/ensure-cert-manager.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  return { binary, crds: join(dirname(binary), 'crds.yaml'), version: /cert-manager-(v[^/]+)$/.exec(dirname(binary))?.[1] ?? 'unknown' };
}

/** Installs the CRDs with kubectl and waits until the apiserver serves them. */
function installCrds(crds: string, kubeconfig: string): void {
  const kubectl = execFileSync('bash', [join(ROOT, 'scripts/ensure-kubectl.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  const run = (...args: string[]): void => void execFileSync(kubectl, ['--kubeconfig', kubeconfig, ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
  run('apply', '--server-side', '-f', crds);
  run('wait', '--for=condition=Established', '--timeout=120s', 'crd', '--all');
}

/** The Certificate our adapter's leaf corresponds to: same SANs, key, lifetime and renewal. */
function certificateFor(ns: string): Record<string, unknown> {
  return {
    apiVersion: 'cert-manager.io/v1',
    kind: 'Certificate',
    metadata: { name: 'provider', namespace: ns },
    spec: {
      secretName: 'provider-tls',
      dnsNames: ['provider', `provider.${ns}`, `provider.${ns}.svc`, `provider.${ns}.svc.cluster.local`],
      duration: '2160h',
      renewBefore: '840h',
      privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' },
      issuerRef: { group: 'cert-manager.io', kind: 'ClusterIssuer', name: 'bench-ca' },
    },
  };
}

/** VmRSS and VmHWM (the peak) of a live process, in MB, and its CPU seconds. */
function processFigures(pid: number): { rssMb: number; peakRssMb: number; cpuSeconds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  // utime and stime, fields 14 and 15, in clock ticks; the fields after the command's ")" start at 3.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));
  return { rssMb: kb('VmRSS') / 1024, peakRssMb: kb('VmHWM') / 1024, cpuSeconds: (Number(fields[11]) + Number(fields[12])) / ticks };
}

const isReady = (c: { status?: { conditions?: { type: string; status: string }[] } }): boolean =>
  c.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True') ?? false;

type CertificateObject = { metadata?: { name?: string; namespace?: string }; status?: { conditions?: { type: string; status: string }[] } };

/** One run: cert-manager on its own control plane, then the adapter benchmark on a fresh one. */
async function runCertManagerBenchmark(certificates = 1000): Promise<CertManagerBenchmark> {
  const { binary, crds, version } = ensureCertManager();
  const plane = await startControlPlane({ identities: [{ name: USER, groups: ['system:masters'] }], audit: true });
  let controller: ChildProcess | undefined;
  let measured: Omit<CertManagerBenchmark, 'adapter'>;
  try {
    const setupStart = performance.now();
    installCrds(crds, plane.adminKubeconfigPath);
    const admin = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig), { maxSockets: CONCURRENCY });
    const ca = await issueCa({ crypto: createNodeCryptoBackend(), policy: resolvePolicy(), now: Date.now() });
    await admin.create(corePath('secrets', CA_NAMESPACE), {
      metadata: { name: 'bench-ca' },
      type: 'kubernetes.io/tls',
      stringData: { 'tls.crt': ca.certificate.pem, 'tls.key': ca.privateKeyPem },
    });
    await admin.create('/apis/cert-manager.io/v1/clusterissuers', {
      apiVersion: 'cert-manager.io/v1',
      kind: 'ClusterIssuer',
      metadata: { name: 'bench-ca' },
      spec: { ca: { secretName: 'bench-ca' } },
    });
    const namespaces = Array.from({ length: certificates }, (_, i) => `bench-${i}`);
    await pool(namespaces, CONCURRENCY, async (ns) => {
      await admin.create(corePath('namespaces'), { metadata: { name: ns } });
      await admin.create(`/apis/cert-manager.io/v1/namespaces/${ns}/certificates`, certificateFor(ns));
    });
    const setupSeconds = (performance.now() - setupStart) / 1000;

    const ready = new Set<string>();
    let allReady!: () => void;
    const converged = new Promise<void>((r) => (allReady = r));
    const watcher = new Informer<CertificateObject>(
      {
        description: 'bench: Certificates',
        resource: 'certificates',
        list: (page) => admin.get<ListPage<CertificateObject>>(CERTIFICATES, page),
        watchPath: CERTIFICATES,
      },
      { watch: admin, counter: admin.counter },
    );
    watcher.onChange((e) => {
      if (e.type === 'DELETED' || !isReady(e.object)) return;
      ready.add(e.object.metadata?.namespace ?? '');
      if (ready.size === certificates) allReady();
    });
    watcher.start();
    await watcher.synced;

    const t0 = performance.now();
    const child = spawn(binary, ['--kubeconfig', plane.identity(USER).kubeconfigPath, `--cluster-resource-namespace=${CA_NAMESPACE}`], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    controller = child;
    child.stderr!.pipe(createWriteStream(LOG));
    const exited = new Promise<never>((_, reject) =>
      child.on('exit', (code, signal) => reject(new Error(`cert-manager exited (${code ?? signal}) before every Certificate was Ready; its log: ${LOG}`))),
    );
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`gave up: ${ready.size}/${certificates} Certificates Ready after 15 minutes`)), GIVE_UP_MS);
    });
    const progress = setInterval(
      () => process.stderr.write(`bench: ${ready.size}/${certificates} Certificates Ready after ${((performance.now() - t0) / 1000).toFixed(0)} s\n`),
      10_000,
    );
    try {
      await Promise.race([converged, exited, deadline]);
    } finally {
      clearInterval(progress);
      clearTimeout(timer);
    }
    const readySeconds = (performance.now() - t0) / 1000;
    await watcher.stop();
    await new Promise((r) => setTimeout(r, 2000)); // as the adapter benchmark: whatever follows convergence
    const figures = processFigures(child.pid!);
    child.removeAllListeners('exit');
    const stopped = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await stopped;
    controller = undefined;

    // The same check as the adapter benchmark's: each leaf signed by the CA and naming the Service.
    const caCert = new X509Certificate(ca.certificate.pem);
    const secrets = await admin.get<ListPage<V1Secret>>(corePath('secrets'), { fieldSelector: 'metadata.name=provider-tls' });
    const validSecrets = secrets.items.filter((s) => {
      const leaf = new X509Certificate(Buffer.from(s.data?.['tls.crt'] ?? '', 'base64'));
      return leaf.checkIssued(caCert) && leaf.verify(caCert.publicKey) && leaf.checkHost(`provider.${s.metadata?.namespace}.svc`) !== undefined;
    }).length;
    admin.close();

    const audit = await tallyAudit(plane.auditLogPath!, USER);
    measured = {
      certificates,
      version,
      setupSeconds,
      readySeconds,
      auditRequests: audit.requests,
      validSecrets,
      peakRssMb: figures.peakRssMb,
      endRssMb: figures.rssMb,
      cpuSeconds: figures.cpuSeconds,
    };
  } finally {
    controller?.kill('SIGKILL');
    await plane.stop();
  }
  const adapter = await runKubernetesBenchmark(certificates);
  return { ...measured, adapter };
}

const total = (r: Record<string, number>): number => Object.values(r).reduce((a, b) => a + b, 0);

/** The comparison as markdown. */
function formatCertManagerBenchmark(b: CertManagerBenchmark): string {
  const a = b.adapter;
  const verbs = (r: Record<string, number>): string =>
    Object.entries(r)
      .map(([k, n]) => `${k}: ${n}`)
      .join(', ') || 'none';
  const row = (label: string, cm: number, ours: number, unit: string, digits: number): string =>
    `| ${label} | ${cm.toFixed(digits)}${unit} | ${ours.toFixed(digits)}${unit} | ${(cm / ours).toFixed(1)} |`;
  return [
    `| ${b.certificates.toLocaleString('en')} certificates, one per namespace | cert-manager ${b.version} | eso-mtls adapter | cert-manager / ours |`,
    '|---|---:|---:|---:|',
    row('start → all ready', b.readySeconds, a.convergeSeconds, ' s', 2),
    row('apiserver requests (audit log)', total(b.auditRequests), total(a.auditRequests), '', 0),
    row('peak RSS', b.peakRssMb, a.adapterMaxRssMb, ' MB', 0),
    row('RSS after convergence', b.endRssMb, a.adapterRssMb, ' MB', 0),
    row('CPU until convergence', b.cpuSeconds, a.adapterCpuSeconds, ' s', 1),
    '',
    `cert-manager requests (audit log, start to stop): ${verbs(b.auditRequests)}.`,
    `eso-mtls adapter requests (audit log, whole run): ${verbs(a.auditRequests)}.`,
    `Secrets valid after the cert-manager run (signed by the CA, naming provider.<ns>.svc): ${b.validSecrets}/${b.certificates}.`,
    `(Setting up the CRDs, CA, ${b.certificates} namespaces and Certificates took ${b.setupSeconds.toFixed(1)} s.)`,
  ].join('\n');
}

/** Runs the comparison and returns its table (`npm run bench -- cert-manager`). */
export async function certManagerBenchmarkTable(certificates = 1000): Promise<string> {
  return formatCertManagerBenchmark(await runCertManagerBenchmark(certificates));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(await certManagerBenchmarkTable(Number(process.argv[2] ?? 1000)));
}
