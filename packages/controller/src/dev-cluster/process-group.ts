import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';

/**
 * etcd or kube-apiserver run in its own process group under a small bash watchdog: if
 * `eso-mtls dev-cluster` (or a test run; testing/envtest starts its servers with this too) dies
 * without cleaning up (SIGKILL, a closed terminal, a crashed jest worker), the watchdog notices
 * within a second and stops the server, so nothing outlives it.
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

  /** Starts `command args...`, appending its stdout and stderr to `logPath`. */
  static start(name: string, command: string, args: readonly string[], logPath: string): ServerProcess {
    const log = openSync(logPath, 'a');
    try {
      const child = spawn('bash', ['-c', WATCHDOG, 'watchdog', String(process.pid), command, ...args], { detached: true, stdio: ['ignore', log, log] });
      if (child.pid === undefined) throw new Error(`could not start ${name} (${command})`);
      const exited = new Promise<number | null>((resolveExit) => {
        child.once('exit', (code) => resolveExit(code));
        child.once('error', () => resolveExit(null));
      });
      return new ServerProcess(name, logPath, child.pid, exited);
    } finally {
      closeSync(log);
    }
  }

  /** True until the watchdog (and so the server) has exited. */
  get running(): boolean {
    return this.exitCode === undefined;
  }

  /** Resolves when the server has exited, for whatever reason. */
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

  /** SIGTERM to the whole group; SIGKILL after `graceMs` if anything is left (at once with 0: a crash). */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.running) return;
    signalGroup(this.pgid, graceMs === 0 ? 'SIGKILL' : 'SIGTERM');
    const timedOut = await Promise.race([this.exited.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), graceMs).unref())]);
    if (timedOut) signalGroup(this.pgid, 'SIGKILL');
    await this.exited;
    signalGroup(this.pgid, 'SIGKILL'); // nothing of its group may linger
  }
}

/** Sends `signal` to every process of the group; a group already gone is not an error. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

// Runs "$@" in the background and forwards TERM to it; exits when it exits, and stops it when the
// Node process ($1) disappears.
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
