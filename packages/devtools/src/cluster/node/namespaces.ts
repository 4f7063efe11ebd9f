import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { CLUSTER_NETWORK } from './addresses.js';
import { waitFor } from './readiness.js';

/**
 * The kernel settings the kubelet writes although they are host-wide (kernel.*, vm.*): inside the
 * sandbox each is a private copy bind-mounted over the real file, so the host keeps its values.
 */
export const PRIVATE_SYSCTLS = [
  'kernel/panic',
  'kernel/panic_on_oops',
  'vm/overcommit_memory',
  'kernel/keys/root_maxkeys',
  'kernel/keys/root_maxbytes',
] as const;

/**
 * Mount, network and PID namespaces that hold one part of the cluster: the control plane, or one
 * node. Their first process (PID 1 inside) is a child of `unshare --kill-child`, itself started
 * with a parent-death signal: when the process that made them dies for any reason, PID 1 dies,
 * and the kernel kills every process of the PID namespace with it. A node's PID namespace is
 * nested in the control plane's, so the control plane's PID 1 dying kills every node too; a
 * node's dying kills only that node (its kubelet, runtime and pods: a power cut).
 */
export interface Sandbox {
  /** Host PID of the namespaces' first process (what `nsenter --target` joins). */
  readonly pid: number;
  /** `argv` prefixed so that it runs inside all three namespaces. */
  enter(argv: readonly string[]): string[];
  /** Resolves when the namespaces' first process has exited (and with it everything inside). */
  readonly exited: Promise<void>;
  /** Kills every process inside (SIGKILL to PID 1) and waits for it. Safe to call twice. */
  destroy(): Promise<void>;
}

/** Which part of the cluster a sandbox holds: its network is set up accordingly. */
export type SandboxRole = 'control-plane' | 'node';

/**
 * The set-up run as PID 1 before it starts reaping: /var and /run overlaid with upper layers
 * under `root`, private copies of the host-wide sysctls, an empty /etc/resolv.conf, then the
 * role's network. The control plane's: the bridge the nodes' veths join, with its address and a
 * MAC of its own (see CLUSTER_NETWORK.bridgeMac), and no forwarding (it routes nothing). A node's: loopback, forwarding and bridge netfilter on (both per
 * network namespace); its veth is linked from outside once both ends exist (links.ts).
 */
export function sandboxSetupScript(root: string, role: SandboxRole = 'node'): string {
  const network =
    role === 'control-plane'
      ? [
          'ip link set lo up',
          `ip link add ${CLUSTER_NETWORK.bridge} address ${CLUSTER_NETWORK.bridgeMac} type bridge`,
          `ip addr add ${CLUSTER_NETWORK.controlPlaneIp}/${CLUSTER_NETWORK.linkPrefixLength} dev ${CLUSTER_NETWORK.bridge}`,
          `ip link set ${CLUSTER_NETWORK.bridge} up`,
        ]
      : ['ip link set lo up', 'echo 1 > /proc/sys/net/ipv4/ip_forward', 'echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null || true'];
  const lines = [
    'set -eu',
    `root=${shellQuote(root)}`,
    'for d in var run; do',
    '  mkdir -p "$root/overlay/$d/upper" "$root/overlay/$d/work"',
    '  mount -t overlay overlay -o "lowerdir=/$d,upperdir=$root/overlay/$d/upper,workdir=$root/overlay/$d/work" "/$d"',
    'done',
    'mkdir -p "$root/sysctl"',
    ...PRIVATE_SYSCTLS.map((s) => {
      const copy = `"$root/sysctl/${s.replace(/\//g, '.')}"`;
      return `if [ -e /proc/sys/${s} ]; then cat /proc/sys/${s} > ${copy}; mount --bind ${copy} /proc/sys/${s}; fi`;
    }),
    // No name of the host's resolver is asked from inside: components that look a name up find nothing.
    ': > "$root/resolv.conf.host"',
    'mount --bind "$root/resolv.conf.host" /etc/resolv.conf',
    ...network,
    'echo ready',
    // PID 1 reaps whatever is orphaned inside (a shim whose containerd restarted, say) until killed.
    'trap "exit 0" TERM',
    'while :; do sleep 3600 & wait $! || true; done',
  ];
  return lines.join('\n');
}

/** Where a sandbox is made, and what it holds. */
export interface SandboxSpec {
  /** The folder for its overlays' upper layers and private sysctl copies. */
  readonly root: string;
  readonly role: SandboxRole;
  /** For messages: "the control plane's", "node eso-mtls-node-2's". */
  readonly label: string;
  /** Host PID of a sandbox whose PID namespace this one's is nested in (a node's, in the control plane's). */
  readonly parentPid?: number;
  readonly timeoutMs?: number;
}

/** Creates the namespaces, runs the set-up, and resolves once PID 1 is ready. Rejects with its output on failure. */
export async function createSandbox(spec: SandboxSpec): Promise<Sandbox> {
  const { label, timeoutMs = 30_000 } = spec;
  const unshare = [
    'setpriv',
    '--pdeathsig',
    'KILL',
    '--',
    'unshare',
    '--net',
    '--mount',
    '--pid',
    '--fork',
    '--kill-child',
    '--mount-proc',
    '--propagation',
    'private',
    '--',
    'bash',
    '-c',
    sandboxSetupScript(spec.root, spec.role),
  ];
  // Nested: nsenter forks into the parent's PID namespace, where setpriv and unshare run (unshare dies with nsenter).
  const argv =
    spec.parentPid === undefined ? unshare : ['setpriv', '--pdeathsig', 'KILL', '--', 'nsenter', `--target=${spec.parentPid}`, '--pid', '--', ...unshare];
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (d: string) => (output += d));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${label} namespaces were not ready within ${timeoutMs} ms: ${output.trim()}`)), timeoutMs);
    child.stdout!.on('data', (d: string) => {
      output += d;
      if (output.includes('ready\n')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`${label} namespaces could not be set up (unshare, mount, ip; needs root): ${output.trim() || `exit ${child.exitCode}`}`));
    });
  });
  // unshare forks PID 1 of the new namespace; with nsenter, unshare is itself nsenter's only child.
  const pid = onlyChild(spec.parentPid === undefined ? child.pid! : onlyChild(child.pid!, label), label);
  return {
    pid,
    enter: (argv) => ['nsenter', `--target=${pid}`, '--net', '--mount', '--pid', '--', ...argv],
    exited,
    destroy: async () => {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
      child.kill('SIGKILL');
      await exited;
      // The kernel kills everything inside before PID 1 finishes exiting, and its new parent reaps it
      // later: a busy host can take seconds. Stopped means nothing of the namespaces runs any more.
      await waitFor(() => !running(pid), 60_000, `${label} namespaces' PID 1 (host PID ${pid}) and every process inside to exit`);
    },
  };
}

/** True while `pid` exists and is not a zombie (a zombie PID 1 of a PID namespace has nothing left inside). */
function running(pid: number): boolean {
  try {
    // The state follows the command, which is in parentheses and may hold spaces.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** The host PID of `parent`'s only child (unshare's PID 1, nsenter's unshare). */
function onlyChild(parent: number, label: string): number {
  const children = readFileSync(`/proc/${parent}/task/${parent}/children`, 'utf8').trim().split(/\s+/).map(Number);
  const [pid] = children;
  if (pid === undefined || !Number.isInteger(pid) || pid <= 0 || children.length !== 1)
    throw new Error(`cannot find ${label} namespaces' first process under host PID ${parent}: children '${children.join(' ')}'`);
  return pid;
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
