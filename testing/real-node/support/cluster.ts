import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type RealCluster, locateBinaries, locateNodeBinaries, realNodeUnavailable, startRealCluster } from '@eso-mtls/devtools/cluster';
import { type TestImages, ensureImages } from '../../images/ensure.js';
import { type AuditEvent, auditFlags, auditLogIn, readAuditLog } from '../../envtest/src/control-plane.js';

const root = resolve(import.meta.dirname, '../../..');

/** A real cluster for a suite, with the images the suite runs already imported. */
export interface TestCluster {
  readonly cluster: RealCluster;
  readonly images: TestImages;
  /** The apiserver's audit log so far (requires startTestCluster's `audit`). */
  auditEvents(): AuditEvent[];
}

/**
 * Builds (or finds cached) the binaries and images, then starts the real cluster. A machine that
 * cannot run a node fails the suite with the reason: the real node is part of `npm test`.
 */
export async function startTestCluster(
  options: {
    readonly syncFrequency?: string;
    readonly apiServerFlags?: readonly string[];
    /** How many nodes (default 1), each in namespaces of its own. */
    readonly nodes?: number;
    /** An audit log in the run's folder, as testing/envtest writes one: `true` logs every request at Metadata level. */
    readonly audit?: boolean | { readonly policyYaml: string };
  } = {},
): Promise<TestCluster> {
  const unavailable = realNodeUnavailable();
  if (unavailable !== undefined) throw new Error(`npm test runs a real node, and this machine cannot: ${unavailable}`);
  const progress = (line: string): void => void process.stderr.write(`real-node: ${line}\n`);
  const controlPlaneBinaries = await locateBinaries(join(root, 'testing/envtest/build-testbin.sh'), progress);
  const nodeBinaries = await locateNodeBinaries(join(root, 'testing/node/build-node-bins.sh'), progress);
  const images = ensureImages();
  const dir = mkdtempSync(join(tmpdir(), 'eso-mtls-node-'));
  const audit = options.audit ?? false;
  const cluster = await startRealCluster({
    dir,
    runId: randomBytes(4).toString('hex'),
    controlPlaneBinaries,
    nodeBinaries,
    images: Object.values(images.byRole).map((i) => i.tarball),
    syncFrequency: options.syncFrequency,
    nodes: options.nodes,
    progress,
    apiServerFlags: [...auditFlags(dir, audit), ...(options.apiServerFlags ?? [])],
  });
  return { cluster, images, auditEvents: () => readAuditLog(audit === false ? undefined : auditLogIn(dir)) };
}

/** Runs `argv` inside a node's namespaces (the first's by default; where pod and Service addresses are) and returns its stdout. */
export function inside(cluster: Pick<RealCluster, 'enter'>, argv: readonly string[], timeoutMs = 30_000): string {
  const [command, ...args] = cluster.enter(argv);
  return execFileSync(command!, args, { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 16 << 20 });
}
