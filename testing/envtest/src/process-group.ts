import { ServerProcess, signalGroup } from '../../../packages/controller/src/dev-cluster/process-group.js';

/** A server of the test control plane: `eso-mtls dev-cluster`'s watchdog-guarded process group. */
export type ProcessGroup = ServerProcess;

/** How long a server gets after SIGTERM before SIGKILL, in tests. */
export const STOP_GRACE_MS = 5000;
/** How much of a server's log an error message quotes. */
export const LOG_TAIL_BYTES = 4000;

const live = new Set<ServerProcess>();
let hooked = false;

/**
 * Starts `command args...` as {@link ServerProcess.start} does, and tracks it until it exits: a
 * suite that forgets stop() still leaves nothing behind when its process exits.
 */
export function startProcessGroup(name: string, command: string, args: readonly string[], logPath: string): ProcessGroup {
  const server = ServerProcess.start(name, command, args, logPath);
  live.add(server);
  void server.whenExited().then(() => live.delete(server));
  installExitHook();
  return server;
}

// Last resort when a suite forgets stop(): the 'exit' event allows only synchronous work.
function installExitHook(): void {
  if (hooked) return;
  hooked = true;
  process.once('exit', () => {
    for (const server of live) signalGroup(server.pgid, 'SIGKILL');
  });
}

/** Process-group ids of every server started by this process and not yet exited. */
export function liveProcessGroups(): number[] {
  return [...live].map((g) => g.pgid);
}
