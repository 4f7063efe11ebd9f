import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
/** The Go module with the interop client and server. */
export const GO_INTEROP_DIR = fileURLToPath(new URL('../../../../testing/go-interop/', import.meta.url));

/**
 * Builds the Go client and server into a fresh folder (Go's build cache makes repeat builds a
 * link step) and returns their paths. Fails with what to install when Go is missing.
 */
export async function buildGoInterop(): Promise<{ client: string; server: string }> {
  try {
    await run('go', ['version']);
  } catch (e) {
    throw new Error(
      `Go is needed for the provider.v1 interop test but \`go version\` failed (${(e as Error).message}); install Go 1.26+ (https://go.dev/dl) and put it on PATH`,
      { cause: e },
    );
  }
  const out = mkdtempSync(join(tmpdir(), 'go-interop-bin-'));
  try {
    // -mod=readonly: build exactly the committed go.sum; modules come from the Go proxy once.
    await run('go', ['build', '-mod=readonly', '-o', `${out}/`, './cmd/client', './cmd/server'], { cwd: GO_INTEROP_DIR, maxBuffer: 16 << 20 });
  } catch (e) {
    throw new Error(`go build in ${GO_INTEROP_DIR} failed: ${(e as { stderr?: string }).stderr ?? (e as Error).message}`, { cause: e });
  }
  return { client: join(out, 'client'), server: join(out, 'server') };
}

/** Runs a program to completion; resolves with its exit code, stdout and stderr. */
export function runProgram(file: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: 30_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Starts the Go server and resolves with its address once it prints LISTENING. */
export function startGoServer(file: string, args: string[]): Promise<{ address: string; process: ChildProcess; stop(): Promise<void> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('exit', (code) => reject(new Error(`Go server exited with ${code} before listening: ${stderr}`)));
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      const m = /LISTENING (\S+)\n/.exec(stdout);
      if (m) {
        resolve({
          address: m[1]!,
          process: child,
          // Closing stdin is the server's signal to stop.
          stop: () =>
            new Promise<void>((done) => {
              if (child.exitCode !== null) return done();
              child.removeAllListeners('exit');
              child.once('exit', () => done());
              child.stdin.end();
            }),
        });
      }
    });
  });
}

/**
 * Builds the named commands of the Go module (`cmd/<name>`) into a fresh folder and returns each
 * binary's path by name. Go's build cache keyed on the sources makes a repeat a link step.
 */
export async function buildGoCommands<Name extends string>(names: readonly Name[]): Promise<Record<Name, string>> {
  try {
    await run('go', ['version']);
  } catch (e) {
    throw new Error(
      `Go is needed for the Go interop tests but \`go version\` failed (${(e as Error).message}); install Go 1.26+ (https://go.dev/dl) and put it on PATH`,
      { cause: e },
    );
  }
  const out = mkdtempSync(join(tmpdir(), 'go-interop-bin-'));
  try {
    // -mod=readonly: build exactly the committed go.sum; modules come from the Go proxy once.
    await run('go', ['build', '-mod=readonly', '-o', `${out}/`, ...names.map((n) => `./cmd/${n}`)], { cwd: GO_INTEROP_DIR, maxBuffer: 16 << 20 });
  } catch (e) {
    throw new Error(`go build in ${GO_INTEROP_DIR} failed: ${(e as { stderr?: string }).stderr ?? (e as Error).message}`, { cause: e });
  }
  return Object.fromEntries(names.map((n) => [n, join(out, n)])) as Record<Name, string>;
}

/**
 * A running Go program of this module that prints one line per event on stdout and stops when its
 * stdin closes, or (a program run as in a pod) on SIGTERM.
 */
export interface GoProgram {
  /** Every complete stdout line so far, in order. */
  readonly lines: readonly string[];
  /** Resolves with the first line at index `from` or later that `match` accepts; rejects when the program exits first or after `timeoutMs`. */
  nextLine(match: (line: string) => boolean, from: number, timeoutMs?: number): Promise<{ line: string; index: number }>;
  /** Closes stdin, the program's stop signal, and resolves with its exit code once it has exited. */
  stop(): Promise<number | null>;
  /** Sends SIGTERM, the stop signal of a program run as in a pod, and resolves with its exit code once it has exited. */
  terminate(): Promise<number | null>;
}

/**
 * Starts `file` with `args`, collecting its stdout by line; stderr is kept for error messages.
 * `stdin: 'closed'` starts it with stdin at its end, as a container's is.
 */
export function spawnGoProgram(file: string, args: readonly string[], options: { readonly stdin?: 'open' | 'closed' } = {}): GoProgram {
  const child = spawn(file, [...args], { stdio: [options.stdin === 'closed' ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let partial = '';
  let stderr = '';
  const waiters = new Set<() => void>();
  const wake = () => waiters.forEach((w) => w());
  child.stdout!.on('data', (d: Buffer) => {
    const parts = (partial + d.toString()).split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
    wake();
  });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  // 'close', not 'exit': by then stdout and stderr are read to the end, so a message is complete.
  let closed = false;
  const exited = new Promise<number | null>((resolve) =>
    child.once('close', (code) => {
      closed = true;
      wake();
      resolve(code);
    }),
  );
  return {
    lines,
    nextLine: (match, from, timeoutMs = 10_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          for (let i = from; i < lines.length; i++) {
            if (match(lines[i]!)) return done(() => resolve({ line: lines[i]!, index: i }));
          }
          if (closed) done(() => reject(new Error(`${file} exited with ${child.exitCode}: ${stderr}`)));
        };
        const timer = setTimeout(
          () => done(() => reject(new Error(`${file} printed no expected line within ${timeoutMs} ms; lines from ${from}: ${lines.slice(from).join(' | ')}`))),
          timeoutMs,
        );
        const done = (settle: () => void) => {
          clearTimeout(timer);
          waiters.delete(check);
          settle();
        };
        waiters.add(check);
        check();
      }),
    stop: () => {
      if (!closed) child.stdin?.end();
      return exited;
    },
    terminate: () => {
      if (!closed) child.kill('SIGTERM');
      return exited;
    },
  };
}
