import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { NODE_NETWORK } from './addresses.js';
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
 * Mount, network and PID namespaces that hold the whole cluster. Their first process (PID 1
 * inside) is a child of `unshare --kill-child`, itself started with a parent-death signal: when
 * the Node process that made them dies for any reason, PID 1 dies, and the kernel kills every
 * process of the PID namespace with it. Nothing of the cluster can outlive its harness.
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

/**
 * The set-up run as PID 1 before it starts reaping: /var and /run overlaid with upper layers
 * under `root`, private copies of the host-wide sysctls, an empty /etc/resolv.conf, the node's veth with its address and a
 * default route (inside; nothing routes out: the veth's peer is also inside), forwarding and
 * bridge netfilter on, both per network namespace.
 */
export function sandboxSetupScript(root: string): string {
  const { nodeIp, nodePrefixLength } = NODE_NETWORK;
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
    'ip link set lo up',
    'ip link add eth0 type veth peer name eth0-peer',
    `ip addr add ${nodeIp}/${nodePrefixLength} dev eth0`,
    'ip link set eth0 up',
    'ip link set eth0-peer up',
    'ip route add default dev eth0',
    'echo 1 > /proc/sys/net/ipv4/ip_forward',
    'echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null || true',
    'echo ready',
    // PID 1 reaps whatever is orphaned inside (a shim whose containerd restarted, say) until killed.
    'trap "exit 0" TERM',
    'while :; do sleep 3600 & wait $! || true; done',
  ];
  return lines.join('\n');
}

/** Creates the namespaces, runs the set-up, and resolves once PID 1 is ready. Rejects with its output on failure. */
export async function createSandbox(root: string, timeoutMs = 30_000): Promise<Sandbox> {
  const child = spawn(
    'setpriv',
    [
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
      sandboxSetupScript(root),
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (d: string) => (output += d));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the node's namespaces were not ready within ${timeoutMs} ms: ${output.trim()}`)), timeoutMs);
    child.stdout!.on('data', (d: string) => {
      output += d;
      if (output.includes('ready\n')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`the node's namespaces could not be set up (unshare, mount, ip; needs root): ${output.trim() || `exit ${child.exitCode}`}`));
    });
  });
  const pid = firstChild(child);
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
      await waitFor(() => !running(pid), 60_000, `the node namespaces' PID 1 (host PID ${pid}) and every process inside to exit`);
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

// unshare forks PID 1 of the new namespace; its host PID is unshare's only child.
function firstChild(unshare: ChildProcess): number {
  const children = readFileSync(`/proc/${unshare.pid}/task/${unshare.pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
  const [pid] = children;
  if (pid === undefined || !Number.isInteger(pid) || children.length !== 1)
    throw new Error(`cannot find the node namespaces' first process under unshare (pid ${unshare.pid}): children '${children.join(' ')}'`);
  return pid;
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
