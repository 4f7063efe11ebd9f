import { rmSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { locateBinaries } from '../cluster/binaries.js';
import { MAX_NODES } from '../cluster/node/addresses.js';
import { type LaunchedControlPlane, launchControlPlane } from '../cluster/control-plane.js';
import { tokenKubeConfig, writeKubeconfig } from '../cluster/identities.js';
import type { ServerProcess } from '../cluster/process-group.js';
import { NOT_A_CLONE, findClone } from '../dev-cluster/clone.js';
import { prepareDataDir } from '../dev-cluster/data-dir.js';
import { nextStepPaths, shellPath } from '../dev-cluster/shell-path.js';
import { type CliStreams, type Flag, helpTable, listenForStop, readArgv } from '@eso-mtls/controller';
import { type ServiceAccountRef, TOKEN_LIFETIME_SECONDS, createControllerServiceAccount, serviceAccountToken } from '../dev-cluster/service-account.js';
import { runNodeCluster } from './dev-cluster-node.js';

const COMMAND = 'eso-mtls dev-cluster';
const DEFAULT_DIR = '.eso-mtls-dev';

const FLAGS: readonly Flag[] = [
  { name: 'dir', kind: 'string', accepts: 'a folder path' },
  { name: 'keep', kind: 'bool' },
  { name: 'node', kind: 'bool' },
  { name: 'nodes', kind: 'string', accepts: `a whole number from 1 to ${MAX_NODES}` },
];

const USAGE = `Usage: ${COMMAND} [flags]

Starts a local Kubernetes control plane, the real etcd and kube-apiserver the tests use, from a
clone of this repository (built once from testing/envtest if needed), and writes two kubeconfigs:
an admin's, and one for the controller's ServiceAccount, which has the rights of the shipped RBAC
once deploy/ is applied. It prints the commands to try the controller against it, and runs until
Ctrl-C, which stops both servers and removes the folder.

No kubelet runs: Pods are accepted but never start, so the controller runs out of the cluster.
With --node a real node runs too (containerd, runc, the kubelet and kube-proxy, in network, mount
and PID namespaces of their own, beside kube-controller-manager, kube-scheduler and CoreDNS in the
control plane's), with the images of scripts/ensure-images.sh imported, so the chart installs and
its pods run; --nodes 2 runs two such nodes, each with its own kubelet. It needs Linux, root and a
cgroup tree without systemd, and says so where it cannot run.

Flags:
${helpTable([
  ['--dir <path>', `folder for the data, logs and kubeconfigs (default ${DEFAULT_DIR}; a kept one is reused)`],
  ['--keep', 'keep the folder on Ctrl-C, so the next start finds the same cluster (not with --node)'],
  ['--node', 'run a real node as well, with the locally built images imported (the first build takes 15-40 minutes)'],
  ['--nodes <n>', `with --node: how many nodes, each in namespaces of its own with its own kubelet (default 1, at most ${MAX_NODES})`],
  ['--help', 'print this text'],
])}
`;

/** What the flags ask for. */
export interface DevClusterArgs {
  /** Absolute path of the data folder. */
  readonly dir: string;
  readonly keep: boolean;
  /** Run a real node too (`--node`). */
  readonly node: boolean;
  /** How many real nodes with --node (`--nodes`, default 1). */
  readonly nodes: number;
}

/** Reads `eso-mtls dev-cluster` flags; a string is the error to print. Pure but for resolving --dir against `cwd`. */
export function parseDevClusterArgs(argv: readonly string[], cwd = process.cwd()): DevClusterArgs | 'help' | { readonly error: string } {
  const read = readArgv(argv, { command: COMMAND, flags: FLAGS });
  if (read.kind === 'help') return 'help';
  if (read.kind === 'error') return { error: read.message };
  const dir = read.values.get('dir') ?? DEFAULT_DIR;
  if (dir === '') return { error: 'flag --dir needs a folder path, not an empty one' };
  const keep = boolFlag(read.values, 'keep');
  if (typeof keep !== 'boolean') return keep;
  const node = boolFlag(read.values, 'node');
  if (typeof node !== 'boolean') return node;
  if (node && keep) return { error: KEEP_WITH_NODE };
  const nodes = nodeCount(read.values.get('nodes'), node);
  if (typeof nodes !== 'number') return nodes;
  return { dir: resolve(cwd, dir), keep, node, nodes };
}

/** Why --keep and --node do not go together. */
export const KEEP_WITH_NODE =
  '--keep cannot be combined with --node: a node lives in namespaces that die with this process, and its ' +
  'containers, mounts and cgroups cannot be reused by a later start. Drop --keep (the node starts afresh in about a minute)';

/** `--nodes`: a whole number from 1 to MAX_NODES, only beside --node. */
function nodeCount(value: string | undefined, node: boolean): number | { readonly error: string } {
  if (value === undefined) return 1;
  if (!node) return { error: `--nodes ${value} asks for real nodes: add --node (without it no kubelet runs)` };
  if (!/^[0-9]+$/.test(value) || Number(value) < 1 || Number(value) > MAX_NODES)
    return { error: `--nodes: ${JSON.stringify(value)} is not a whole number from 1 to ${MAX_NODES}` };
  return Number(value);
}

function boolFlag(values: ReadonlyMap<string, string>, name: string): boolean | { readonly error: string } {
  const value = values.get(name) ?? 'false';
  if (value !== 'true' && value !== 'false') return { error: `--${name}: ${JSON.stringify(value)} is not true or false` };
  return value === 'true';
}

/** The files dev-cluster writes, and where the reader runs the printed commands from. */
export interface DevClusterFiles {
  readonly dir: string;
  readonly adminKubeconfig: string;
  readonly controllerKubeconfig: string;
  readonly repositoryRoot: string;
  readonly cwd: string;
}

/** What dev-cluster prints once the cluster is up: where things are, what does not run, and the next commands. */
export function readyText(plane: Pick<LaunchedControlPlane, 'url'>, account: ServiceAccountRef, files: DevClusterFiles, keep: boolean): string {
  const { here: p, cd, fromRoot: q } = nextStepPaths(files.cwd, files.repositoryRoot);
  return [
    `${COMMAND}: ready. kube-apiserver ${plane.url}, with etcd, both on 127.0.0.1.`,
    `  folder:      ${p(files.dir)} (${keep ? 'kept on Ctrl-C (--keep)' : 'removed on Ctrl-C; --keep keeps it'})`,
    `  admin:       ${p(files.adminKubeconfig)}`,
    `  controller:  ${p(files.controllerKubeconfig)} (ServiceAccount ${account.namespace}/${account.name}, token valid ${TOKEN_LIFETIME_SECONDS / 3600}h)`,
    '',
    'No kubelet runs here: Pods (the Deployment in deploy/ among them) are accepted but never start,',
    'so the controller runs out of the cluster, with the ServiceAccount kubeconfig and the shipped RBAC.',
    '',
    'Next, in another terminal:',
    ...cd.map((c) => `  ${c}`),
    `  export KUBECONFIG=${q(files.adminKubeconfig)}`,
    '  kubectl apply --server-side -k deploy',
    '  kubectl create namespace team-a',
    '  kubectl create service clusterip vault --tcp=8080:8080 -n team-a',
    '  kubectl label service vault -n team-a external-secrets.io/provider=true',
    `  npx eso-mtls controller --kubeconfig ${q(files.controllerKubeconfig)} --metrics-bind-address=127.0.0.1:8090 --health-probe-bind-address=127.0.0.1:8091`,
    'and in a third:',
    ...cd.map((c) => `  ${c}`),
    `  npx eso-mtls status --kubeconfig ${q(files.adminKubeconfig)}`,
    "(No kubectl? `bash scripts/ensure-kubectl.sh` builds one, of the apiserver's version, and prints its path.)",
    '',
    'Press Ctrl-C to stop etcd and kube-apiserver.',
    '',
  ].join('\n');
}

/**
 * `eso-mtls dev-cluster [flags]`: runs the control plane until SIGINT or SIGTERM, then stops both
 * servers and removes the folder (unless --keep). Resolves with the exit code: 0 after a clean
 * stop, 1 if it could not start or a server died, 2 for bad flags.
 */
export async function runDevClusterCommand(argv: readonly string[], streams: CliStreams = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  const args = parseDevClusterArgs(argv);
  if (args === 'help') {
    streams.stdout.write(USAGE);
    return 0;
  }
  if ('error' in args) {
    streams.stderr.write(`${COMMAND}: ${args.error}\n`);
    return 2;
  }
  const say = (line: string): unknown => streams.stdout.write(`${line}\n`);
  const complain = (line: string): unknown => streams.stderr.write(`${COMMAND}: ${line}\n`);
  const clone = findClone();
  if (clone === undefined) {
    complain(NOT_A_CLONE);
    return 1;
  }
  if (args.node) return runNodeCluster(args, clone, streams);

  const signals = listenForStop((signal) => complain(`second ${signal}: exiting now; etcd and kube-apiserver stop within a second, ${args.dir} stays`));

  let plane: LaunchedControlPlane | undefined;
  let created = false;
  const cleanUp = async (): Promise<void> => {
    await plane?.stop();
    if (created && !args.keep) rmSync(args.dir, { recursive: true, force: true });
  };
  try {
    say(`${COMMAND}: getting kube-apiserver and etcd (${relative(clone.root, clone.buildScript)}; cached in ~/.cache/eso-mtls/testbin)`);
    let building = false;
    const binaries = await locateBinaries(clone.buildScript, (line) => {
      if (!building && /building/.test(line)) {
        building = true;
        say('  not built yet: building them once from the Go module proxy, which takes 5 to 20 minutes on 2 cores; later starts take seconds');
      }
      say(`  ${line}`);
    });
    if (signals.requested()) return 0;
    const { reused } = prepareDataDir(args.dir);
    created = true;
    say(`${COMMAND}: starting etcd and kube-apiserver in ${shellPath(args.dir, process.cwd())}${reused ? ' (kept from an earlier run)' : ''}`);
    plane = await launchControlPlane({ binaries, dir: args.dir });
    const adminKubeconfig = join(args.dir, 'admin.kubeconfig');
    const admin = plane.kubeconfigFor('admin');
    writeKubeconfig(adminKubeconfig, admin);
    const account = await createControllerServiceAccount(admin, clone);
    const controllerKubeconfig = join(args.dir, 'controller.kubeconfig');
    writeKubeconfig(controllerKubeconfig, tokenKubeConfig(plane, account.name, await serviceAccountToken(admin, account), account.namespace));
    if (signals.requested()) {
      await cleanUp();
      return 0;
    }
    streams.stdout.write(
      readyText(plane, account, { dir: args.dir, adminKubeconfig, controllerKubeconfig, repositoryRoot: clone.root, cwd: process.cwd() }, args.keep),
    );
  } catch (e) {
    complain(`could not start: ${(e as Error).message}`);
    await cleanUp();
    return 1;
  }

  const died = await Promise.race([signals.stopped.then(() => undefined), ...plane.processes().map((p) => p.whenExited().then((): ServerProcess => p))]);
  if (died !== undefined) {
    complain(`${died.name} exited by itself; the end of its log (${died.logPath}, kept with its folder):\n${died.logTail()}`);
    await plane.stop();
    return 1;
  }
  say(`${COMMAND}: ${signals.requested()}: stopping kube-apiserver and etcd`);
  await cleanUp();
  say(args.keep ? `${COMMAND}: stopped; ${shellPath(args.dir, process.cwd())} kept` : `${COMMAND}: stopped; ${shellPath(args.dir, process.cwd())} removed`);
  return 0;
}
