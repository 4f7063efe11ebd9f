// cert-manager's controller against a test kube-apiserver: the tests build of
// scripts/ensure-cert-manager.sh (only the CA and SelfSigned issuers, the approver, the issuers'
// and the certificates' controllers; no webhook), its CRDs installed over REST, and the process
// started with the controllers a test chooses and stopped with SIGTERM.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ServerProcess } from '@eso-mtls/devtools/cluster';
import { KubeRestClient, connectionFromKubeConfig } from '@eso-mtls/kubernetes';
import type { KubeConfig } from '@kubernetes/client-node';
import { eventually } from './eventually.js';
import { repoRoot } from './repo.js';

/** The controllers of the tests build (scripts/cert-manager/controllers_tests.go), by what they do. */
export const CERT_MANAGER_CONTROLLERS = Object.freeze({
  issuers: ['issuers', 'clusterissuers'],
  /** Approves every request for an issuer of group cert-manager.io, as cert-manager's default install does. */
  approver: ['certificaterequests-approver'],
  signers: ['certificaterequests-issuer-ca', 'certificaterequests-issuer-selfsigned'],
  /** The chain that turns a Certificate into a Secret (trigger, key manager, request manager, issuing, readiness, revisions). */
  certificates: [
    'certificates-trigger',
    'certificates-key-manager',
    'certificates-request-manager',
    'certificates-issuing',
    'certificates-readiness',
    'certificates-revision-manager',
  ],
});

/** Every controller of the tests build: what {@link startCertManager} runs by default. */
export const ALL_CERT_MANAGER_CONTROLLERS: readonly string[] = Object.values(CERT_MANAGER_CONTROLLERS).flat();
/** All but the approver: requests wait until the test sets Approved or Denied itself, as a policy approver would. */
export const WITHOUT_APPROVER: readonly string[] = ALL_CERT_MANAGER_CONTROLLERS.filter((c) => !CERT_MANAGER_CONTROLLERS.approver.includes(c));

/** The built controller, its CRDs and its version. */
export interface CertManagerBuild {
  readonly binary: string;
  /** cert-manager's CRDs as its Helm chart renders them (beside the binary). */
  readonly crds: string;
  readonly version: string;
}

let located: Promise<CertManagerBuild> | undefined;

/**
 * Runs `scripts/ensure-cert-manager.sh --tests` once per process: the binary from the cache, or
 * built from the Go module proxy (minutes; `npm test` runs scripts/prepare-test-env.sh first, so
 * suites find it warm). Rejects with the script's own last words.
 */
export function locateCertManager(): Promise<CertManagerBuild> {
  located ??= new Promise((resolve, reject) => {
    const script = join(repoRoot, 'scripts/ensure-cert-manager.sh');
    const child = spawn('bash', [script, '--tests'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4000)));
    child.once('error', (e) => reject(new Error(`cannot run ${script}: ${e.message}`)));
    child.once('close', (code) => {
      const binary = stdout.trim().split('\n').pop() ?? '';
      if (code !== 0 || binary === '') return reject(new Error(`${script} --tests failed (exit code ${code}):\n${stderr.trim()}`));
      resolve({ binary, crds: join(dirname(binary), 'crds.yaml'), version: /-(v[^/]+)$/.exec(dirname(binary))?.[1] ?? 'unknown' });
    });
  });
  return located;
}

/**
 * The apiserver cert-manager runs against: testing/envtest's ControlPlane is one, and a real
 * cluster's control plane is made one with its admin kubeconfig written to a file.
 */
export interface CertManagerPlane {
  /** Where its log is written. */
  readonly dir: string;
  readonly adminKubeConfig: KubeConfig;
  /** The kubeconfig file of an identity of the plane (`admin`, or one declared at its start). */
  identity(name: string): { readonly kubeconfigPath: string };
}

const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

type Crd = { metadata: { name: string }; status?: { conditions?: { type: string; status: string }[] } };

/**
 * Creates cert-manager's CRDs in the plane's apiserver (those already there are kept) and waits
 * until each is Established. Not ACME's Orders and Challenges: the tests build runs nothing that
 * reads them, and the apiserver takes seconds over each large schema on a loaded machine.
 */
export async function installCertManagerCrds(plane: CertManagerPlane): Promise<void> {
  const { crds } = await locateCertManager();
  const client = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig));
  try {
    const documents = parseAllDocuments(readFileSync(crds, 'utf8'))
      .map((d) => d.toJS() as Crd | null)
      .filter((d): d is Crd => d?.metadata?.name !== undefined && !d.metadata.name.endsWith('.acme.cert-manager.io'));
    for (const crd of documents) {
      await client.create(CRDS, crd).catch((e: { code?: number }) => {
        if (e.code !== 409) throw e;
      });
    }
    for (const { metadata } of documents) {
      await eventually(
        async () =>
          (await client.get<Crd>(`${CRDS}/${metadata.name}`)).status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false,
        60_000,
        `CRD ${metadata.name} Established`,
      );
    }
  } finally {
    client.close();
  }
}

/** What a test chooses of its cert-manager. */
export interface CertManagerOptions {
  /** The controllers to run (default {@link ALL_CERT_MANAGER_CONTROLLERS}); e.g. {@link WITHOUT_APPROVER}. */
  readonly controllers?: readonly string[];
  /** Where a ClusterIssuer's Secrets live (default `kube-system`, as cert-manager's). */
  readonly clusterResourceNamespace?: string;
  /** The identity it runs as (default the admin; declare others in startControlPlane). */
  readonly identity?: string;
}

/** A running cert-manager controller. */
export interface RunningCertManager {
  readonly controllers: readonly string[];
  readonly clusterResourceNamespace: string;
  /** Its log (klog on stderr), in the plane's folder. */
  readonly logPath: string;
  /** True until the process has exited. */
  readonly running: boolean;
  /** The end of its log, for a failing test's message. */
  logTail(bytes?: number): string;
  /** SIGTERM (its controllers drain their queues and return), SIGKILL after 10 s; resolves once it is gone. Safe to call twice. */
  stop(): Promise<void>;
}

let started = 0;

/**
 * Starts cert-manager's controller against the plane (its CRDs must be installed: {@link
 * installCertManagerCrds}). Resolves once the process runs; its informers sync in the next second
 * or so, and a test waits for what it expects (a ClusterIssuer Ready, a request issued) anyway.
 */
export async function startCertManager(plane: CertManagerPlane, options: CertManagerOptions = {}): Promise<RunningCertManager> {
  const { binary } = await locateCertManager();
  const controllers = options.controllers ?? ALL_CERT_MANAGER_CONTROLLERS;
  const clusterResourceNamespace = options.clusterResourceNamespace ?? 'kube-system';
  const logPath = join(plane.dir, `cert-manager-${++started}.log`);
  const args = [
    `--kubeconfig=${plane.identity(options.identity ?? 'admin').kubeconfigPath}`,
    `--controllers=${controllers.join(',')}`,
    `--cluster-resource-namespace=${clusterResourceNamespace}`,
  ];
  const server = ServerProcess.start('cert-manager', binary, args, logPath);
  return {
    controllers,
    clusterResourceNamespace,
    logPath,
    get running() {
      return server.running;
    },
    logTail: (bytes) => server.logTail(bytes),
    stop: () => server.stop(10_000),
  };
}
