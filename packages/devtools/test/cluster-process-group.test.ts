import { afterAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { ServerProcess, type SpawnWrap, groupAlive } from '../src/cluster/process-group.js';
import { repoRoot } from '@eso-mtls/test-kit/repo';
import { eventually } from '@eso-mtls/test-kit/eventually';

// The launcher's servers run in a process group under a watchdog. Wrapped (for the real node:
// `nsenter --target PID --net --mount --pid -- ...`), the server is a grandchild: nsenter forks it
// and, as util-linux 2.38 does, dies on SIGTERM without passing it on. Stopping must still give
// the server its SIGTERM and wait for it, through the process group.

const temp = mkdtempSync(join(tmpdir(), 'eso-mtls-process-group-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

/** A stand-in for `nsenter --pid`: forks the command, waits for it, and forwards no signal. */
const forkingWrapper: SpawnWrap = (argv) => ['bash', '-c', '"$@" & wait $!', 'nsenter-like', ...argv];

/** A server that needs a moment to shut down after SIGTERM, and records that it did. */
function slowServer(name: string): { readonly args: string[]; readonly doneFile: string } {
  const doneFile = join(temp, `${name}.done`);
  const script = `trap 'sleep 1; echo clean > ${doneFile}; exit 0' TERM; echo up; while :; do sleep 0.1; done`;
  return { args: ['-c', script], doneFile };
}

describe('ServerProcess', () => {
  it('started through a wrapper that forks and passes no signal on, stop() gives the server SIGTERM and returns once it has finished', async () => {
    const { args, doneFile } = slowServer('wrapped');
    const log = join(temp, 'wrapped.log');
    const server = ServerProcess.start('slow', 'bash', args, log, forkingWrapper);
    await eventually(() => readFileSync(log, 'utf8').includes('up'), 20_000, 'the server to start', 50);
    await server.stop(20_000);
    // The server ran its SIGTERM handler to the end: not orphaned, not SIGKILLed half-way.
    expect(existsSync(doneFile) ? readFileSync(doneFile, 'utf8') : 'no file').toBe('clean\n');
    expect(groupAlive(server.pgid)).toBe(false);
    expect(server.running).toBe(false);
  }, 60_000);

  it('with a crash (grace 0), SIGKILLs the wrapped server at once and leaves nothing of its group', async () => {
    const { args, doneFile } = slowServer('crashed');
    const log = join(temp, 'crashed.log');
    const server = ServerProcess.start('slow', 'bash', args, log, forkingWrapper);
    await eventually(() => readFileSync(log, 'utf8').includes('up'), 20_000, 'the server to start', 50);
    await server.stop(0);
    expect(groupAlive(server.pgid)).toBe(false);
    expect(existsSync(doneFile)).toBe(false);
  }, 60_000);

  it('hands the wrapper the whole command line, and refuses a wrapper that returns none', () => {
    const seen: (readonly string[])[] = [];
    expect(() =>
      ServerProcess.start('x', '/bin/etcd', ['--a', '--b'], join(temp, 'x.log'), (argv) => {
        seen.push(argv);
        return [];
      }),
    ).toThrow('the spawn wrapper turned /bin/etcd into an empty command line');
    expect(seen).toEqual([['/bin/etcd', '--a', '--b']]);
  });

  it('wrapped, is stopped by its watchdog when the process that started it is SIGKILLed', async () => {
    const log = join(temp, 'orphan.log');
    const child = spawn(
      process.execPath,
      ['--import', resolve(repoRoot, 'scripts/register-ts.mjs'), resolve(repoRoot, 'packages/devtools/test/support/server-process-child.ts'), log],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const line = await new Promise<string>((resolveLine) => createInterface({ input: child.stdout }).once('line', resolveLine));
    const { pgid } = JSON.parse(line) as { pgid: number };
    await eventually(() => existsSync(log) && readFileSync(log, 'utf8').includes('up'), 20_000, 'the server to start', 50);
    child.kill('SIGKILL');
    // The watchdog looks every 0.5 s, gives the server up to 5 s, then SIGKILLs the group.
    await eventually(() => !groupAlive(pgid), 20_000, 'the process group to be gone', 50);
  }, 60_000);
});
