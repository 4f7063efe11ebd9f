import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, readdirSync } from 'node:fs';

/**
 * Turns a command line into the one actually started, e.g. `nsenter --target PID --net --mount
 * --pid -- ...argv` to run it inside namespaces a harness made. The identity by default.
 */
export type SpawnWrap = (argv: readonly string[]) => readonly string[];

/** How often stop() looks whether the process group is empty. */
const GROUP_POLL_MS = 100;
/** How long stop() waits for a SIGKILLed group to be reaped before it gives up looking. */
const REAP_WAIT_MS = 5000;

/**
 * A server (etcd, kube-apiserver, ...) in its own process group under a small bash watchdog: if
 * the Node process that started it dies without cleaning up (SIGKILL, a closed terminal, a
 * crashed jest worker), the watchdog notices within a second and stops the group, so nothing
 * outlives it.
 *
 * Signals go to the whole process group, never to one PID: a wrapper such as `nsenter --pid`
 * forks the server and does not pass signals on (util-linux 2.38: SIGTERM kills nsenter and
 * orphans the server), but the server stays in the group, so stop() reaches it and waits until
 * the group is empty. A process that leaves the group (setsid, setpgid) is beyond reach: stop
 * it by its PID namespace.
 */
export class ServerProcess {
  private exitCode: number | null | undefined;
  private readonly exited: Promise<void>;

  private constructor(
    readonly name: string,
    readonly logPath: string,
    readonly pgid: number,
    exited: Promise<number | null>,
  ) {
    this.exited = exited.then((code) => void (this.exitCode = code));
  }

  /** Starts `wrap([command, ...args])`, appending its stdout and stderr to `logPath`. */
  static start(name: string, command: string, args: readonly string[], logPath: string, wrap: SpawnWrap = (argv) => argv): ServerProcess {
    const argv = wrap([command, ...args]);
    if (argv.length === 0) throw new Error(`the spawn wrapper turned ${command} into an empty command line`);
    const log = openSync(logPath, 'a');
    try {
      const child = spawn('bash', ['-c', WATCHDOG, 'watchdog', String(process.pid), ...argv], { detached: true, stdio: ['ignore', log, log] });
      if (child.pid === undefined) throw new Error(`could not start ${name} (${argv.join(' ')})`);
      const exited = new Promise<number | null>((resolveExit) => {
        child.once('exit', (code) => resolveExit(code));
        child.once('error', () => resolveExit(null));
      });
      return new ServerProcess(name, logPath, child.pid, exited);
    } finally {
      closeSync(log);
    }
  }

  /** True until the watchdog has exited; it exits when the command it started does. */
  get running(): boolean {
    return this.exitCode === undefined;
  }

  /** Resolves when the watchdog has exited, for whatever reason. */
  whenExited(): Promise<void> {
    return this.exited;
  }

  /** The end of the server's log, for error messages. */
  logTail(bytes = 3000): string {
    try {
      return readFileSync(this.logPath, 'utf8').slice(-bytes);
    } catch {
      return '';
    }
  }

  /**
   * SIGTERM to the whole group; SIGKILL if anything of it is left after `graceMs` (at once with 0:
   * a crash). Resolves once the group is empty, so the server's ports and files are free again.
   */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.running && !groupAlive(this.pgid)) return;
    signalGroup(this.pgid, graceMs === 0 ? 'SIGKILL' : 'SIGTERM');
    if (!(await this.groupGone(graceMs))) {
      signalGroup(this.pgid, 'SIGKILL');
      await this.groupGone(REAP_WAIT_MS);
    }
    await this.exited;
  }

  // The watchdog leads the group, so its pgid stays ours while it is unreaped; once it is gone,
  // only members still alive keep the number from being reused.
  private async groupGone(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (!this.running && !groupAlive(this.pgid)) return true;
      if (Date.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, GROUP_POLL_MS));
    }
  }
}

/**
 * Whether a process of group `pgid` still runs. A zombie does not count: a wrapped server whose
 * wrapper died is reparented to PID 1, which may reap it late or never (a container's shell).
 * Where there is no /proc, any member counts.
 */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch {
    return false; // ESRCH: no member at all
  }
  if (!existsSync('/proc/self/stat')) return true;
  return readdirSync('/proc').some((entry) => /^\d+$/.test(entry) && runsInGroup(`/proc/${entry}/stat`, pgid));
}

// /proc/<pid>/stat is "pid (comm) state ppid pgrp ...", and comm may hold spaces and parentheses.
function runsInGroup(statPath: string, pgid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(statPath, 'utf8');
  } catch {
    return false; // exited meanwhile
  }
  const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(pgrp) === pgid && state !== 'Z';
}

/** Sends `signal` to every process of the group; a group already gone is not an error. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

// Runs "$@" in the background and forwards TERM to it; exits when it exits. When the Node process
// ($1) disappears it sends TERM to its whole group (itself excepted), waits up to 5 s for "$@" and
// then SIGKILLs the group, itself included: a wrapper that does not pass TERM on exits at once, so
// a wrapped server gets no grace on this last-resort path.
const WATCHDOG = `
parent=$1; shift
"$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null; wait "$child"; exit $?' TERM INT
while kill -0 "$child" 2>/dev/null; do
  if ! kill -0 "$parent" 2>/dev/null; then
    trap '' TERM INT
    kill -TERM -- -$$ 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$child" 2>/dev/null || break; sleep 0.5; done
    kill -KILL -- -$$
  fi
  sleep 0.5
done
wait "$child"
`;
