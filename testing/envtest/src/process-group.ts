import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';

/**
 * A server process run in its own process group under a small bash watchdog: if this Node
 * process dies without cleaning up (SIGKILL, a crashed jest worker), the watchdog notices within
 * a second and kills the server, so no etcd or kube-apiserver outlives the test run.
 */
export class ProcessGroup {
  readonly pgid: number;
  private exitCode: number | null | undefined;
  private readonly exited: Promise<void>;

  private constructor(
    readonly name: string,
    readonly logPath: string,
    pgid: number,
    exited: Promise<number | null>,
  ) {
    this.pgid = pgid;
    this.exited = exited.then((code) => {
      this.exitCode = code;
      live.delete(this);
    });
    live.add(this);
    installExitHook();
  }

  /** Starts `command args...`, appending stdout and stderr to `logPath`. */
  static start(name: string, command: string, args: readonly string[], logPath: string): ProcessGroup {
    const log = openSync(logPath, 'a');
    try {
      const child = spawn('bash', ['-c', WATCHDOG, 'watchdog', String(process.pid), command, ...args], {
        detached: true, // its own process group: one kill(-pgid) reaches the watchdog and the server
        stdio: ['ignore', log, log],
      });
      if (child.pid === undefined) throw new Error(`could not start ${name} (${command})`);
      const exited = new Promise<number | null>((resolveExit) => {
        child.once('exit', (code) => resolveExit(code));
        child.once('error', () => resolveExit(null));
      });
      return new ProcessGroup(name, logPath, child.pid, exited);
    } finally {
      closeSync(log);
    }
  }

  /** True until the watchdog (and so the server) has exited. */
  get running(): boolean {
    return this.exitCode === undefined;
  }

  /** Resolves when the process has exited. */
  whenExited(): Promise<void> {
    return this.exited;
  }

  /** The last `bytes` of the process's log, for error messages. */
  logTail(bytes = 4000): string {
    try {
      const text = readFileSync(this.logPath, 'utf8');
      return text.slice(-bytes);
    } catch {
      return '';
    }
  }

  /** SIGTERM to the whole group; SIGKILL after `graceMs` if anything is left (at once with 0: a crash). */
  async stop(graceMs = 5000): Promise<void> {
    if (!this.running) return;
    signalGroup(this.pgid, graceMs === 0 ? 'SIGKILL' : 'SIGTERM');
    const timedOut = await Promise.race([this.exited.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), graceMs).unref())]);
    if (timedOut) signalGroup(this.pgid, 'SIGKILL');
    await this.exited;
    // The watchdog has exited; make sure nothing else of its group lingers.
    signalGroup(this.pgid, 'SIGKILL');
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

// Runs "$@" in the background and forwards TERM to it; exits when it exits, and kills it when
// the Node process ($1) disappears. `sleep 0.5` keeps the poll cheap and the reaction quick.
const WATCHDOG = `
parent=$1; shift
"$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null; wait "$child"; exit $?' TERM INT
while kill -0 "$child" 2>/dev/null; do
  if ! kill -0 "$parent" 2>/dev/null; then
    kill -TERM "$child" 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$child" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$child" 2>/dev/null
    break
  fi
  sleep 0.5
done
wait "$child"
`;

const live = new Set<ProcessGroup>();
let hooked = false;

// Last resort when a suite forgets stop(): the 'exit' event allows only synchronous work.
function installExitHook(): void {
  if (hooked) return;
  hooked = true;
  process.once('exit', () => {
    for (const group of live) signalGroup(group.pgid, 'SIGKILL');
  });
}

/** Process-group ids of every server started by this process and not yet exited. */
export function liveProcessGroups(): number[] {
  return [...live].map((g) => g.pgid);
}
