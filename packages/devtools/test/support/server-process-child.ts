// Child process of cluster-process-group.test.ts: starts a server through a wrapper that forks and
// passes no signal on (as `nsenter --pid` does), prints its process group and log path, and waits
// to be SIGKILLed without cleaning up. argv: <log path>.
import { ServerProcess } from '../../src/cluster/process-group.js';

const server = ServerProcess.start('sleeper', 'bash', ['-c', 'echo up; while :; do sleep 0.1; done'], process.argv[2]!, (argv) => [
  'bash',
  '-c',
  '"$@" & wait $!',
  'nsenter-like',
  ...argv,
]);
process.stdout.write(`${JSON.stringify({ pgid: server.pgid })}\n`);
setInterval(() => undefined, 60_000);
