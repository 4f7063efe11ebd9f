import { rmSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { locateBinaries } from '../cluster/binaries.js';
import { type LaunchedControlPlane, launchControlPlane } from '../cluster/control-plane.js';
import { tokenKubeConfig, writeKubeconfig } from '../cluster/identities.js';
import type { ServerProcess } from '../cluster/process-group.js';
import { NOT_A_CLONE, findClone } from '../dev-cluster/clone.js';
import { prepareDataDir } from '../dev-cluster/data-dir.js';
import { type ServiceAccountRef, TOKEN_LIFETIME_SECONDS, createControllerServiceAccount, serviceAccountToken } from '../dev-cluster/service-account.js';
import { type FlagSyntax, helpTable, readArgv } from './args.js';
import type { CliStreams } from './controller.js';

const COMMAND = 'eso-mtls dev-cluster';
const DEFAULT_DIR = '.eso-mtls-dev';

const FLAGS: readonly FlagSyntax[] = [
  { name: 'dir', kind: 'string', accepts: 'a folder path' },
  { name: 'keep', kind: 'bool' },
];

const USAGE = `Usage: ${COMMAND} [flags]

Starts a local Kubernetes control plane, the real etcd and kube-apiserver the tests use, from a
clone of this repository (built once from testing/envtest if needed), and writes two kubeconfigs:
an admin's, and one for the controller's ServiceAccount, which has the rights of the shipped RBAC
once deploy/ is applied. It prints the commands to try the controller against it, and runs until
Ctrl-C, which stops both servers and removes the folder.

No kubelet runs: Pods are accepted but never start, so the controller runs out of the cluster.

Flags:
${helpTable([
  ['--dir <path>', `folder for the data, logs and kubeconfigs (default ${DEFAULT_DIR}; a kept one is reused)`],
  ['--keep', 'keep the folder on Ctrl-C, so the next start finds the same cluster'],
  ['--help', 'print this text'],
])}
`;

/** What the flags ask for. */
export interface DevClusterArgs {
  /** Absolute path of the data folder. */
  readonly dir: string;
  readonly keep: boolean;
}

/** Reads `eso-mtls dev-cluster` flags; a string is the error to print. Pure but for resolving --dir against `cwd`. */
export function parseDevClusterArgs(argv: readonly string[], cwd = process.cwd()): DevClusterArgs | 'help' | { readonly error: string } {
  const read = readArgv(argv, { command: COMMAND, flags: FLAGS });
  if (read.kind === 'help') return 'help';
  if (read.kind === 'error') return { error: read.message };
  const dir = read.values.get('dir') ?? DEFAULT_DIR;
  if (dir === '') return { error: 'flag --dir needs a folder path, not an empty one' };
  const keep = read.values.get('keep') ?? 'false';
  if (keep !== 'true' && keep !== 'false') return { error: `--keep: ${JSON.stringify(keep)} is not true or false` };
  return { dir: resolve(cwd, dir), keep: keep === 'true' };
}

/** A path as the printed commands should spell it: relative to `cwd` when inside it, quoted for a POSIX shell when needed. */
export function shellPath(path: string, cwd: string): string {
  const rel = relative(cwd, path);
  const shown = rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(shown) ? shown : `'${shown.replaceAll("'", `'\\''`)}'`;
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
  const p = (path: string): string => shellPath(path, files.cwd);
  const cd = relative(files.cwd, files.repositoryRoot) === '' ? [] : [`cd ${shellPath(files.repositoryRoot, files.cwd)}`];
  // Once in the repository's root, the kubeconfig paths are spelt from there.
  const q = (path: string): string => shellPath(path, cd.length === 0 ? files.cwd : files.repositoryRoot);
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

  // A signal during start-up is honoured as soon as the step in progress ends.
  let stopRequested: NodeJS.Signals | undefined;
  let wake: () => void = () => undefined;
  const stopped = new Promise<void>((r) => (wake = r));
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopRequested !== undefined) {
      complain(`second ${signal}: exiting now; etcd and kube-apiserver stop within a second, ${args.dir} stays`);
      process.exit(1);
    }
    stopRequested = signal;
    wake();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

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
    if (stopRequested) return 0;
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
    if (stopRequested) {
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

  const died = await Promise.race([stopped.then(() => undefined), ...plane.processes().map((p) => p.whenExited().then((): ServerProcess => p))]);
  if (died !== undefined) {
    complain(`${died.name} exited by itself; the end of its log (${died.logPath}, kept with its folder):\n${died.logTail()}`);
    await plane.stop();
    return 1;
  }
  say(`${COMMAND}: ${stopRequested}: stopping kube-apiserver and etcd`);
  await cleanUp();
  say(args.keep ? `${COMMAND}: stopped; ${shellPath(args.dir, process.cwd())} kept` : `${COMMAND}: stopped; ${shellPath(args.dir, process.cwd())} removed`);
  return 0;
}
