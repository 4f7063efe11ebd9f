import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { repoRoot } from './repo.js';

/** One JSON log line of the controller. */
export type LogLine = Record<string, unknown> & { level: string; msg: string; time: string };

const running = new Set<ControllerProcess>();
process.once('exit', () => {
  for (const p of running) p.child.kill('SIGKILL');
});

/**
 * `eso-mtls controller` as a real child process (the TypeScript bin under the repo's loader), so
 * tests can send it real SIGTERM, SIGSTOP, SIGCONT and SIGKILL. Collects every stdout line.
 */
export class ControllerProcess {
  readonly child: ChildProcess;
  readonly lines: LogLine[] = [];
  /** Everything written to stdout and stderr, raw, for the key-material scan. */
  stdout = '';
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private waiters: (() => void)[] = [];

  constructor(
    readonly name: string,
    args: readonly string[],
    env: NodeJS.ProcessEnv = {},
    /** A checkout to run the controller of (another version's sources: testing/helm/support/previous-release.ts). */
    root: string = repoRoot,
    /** The script that runs the controller, with its arguments before the flags (default: the bin's `controller`). */
    entry: readonly string[] = [resolve(root, 'packages/controller/src/bin/eso-mtls.ts'), 'controller'],
  ) {
    this.child = spawn(process.execPath, ['--import', resolve(root, 'scripts/register-ts.mjs'), ...entry, ...args], {
      cwd: root,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.add(this);
    this.child.stdout!.setEncoding('utf8');
    this.child.stderr!.setEncoding('utf8');
    this.child.stderr!.on('data', (d: string) => {
      this.stderr += d;
    });
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      this.stdout += `${line}\n`;
      try {
        this.lines.push(JSON.parse(line) as LogLine);
      } catch {
        this.lines.push({ level: 'raw', msg: line, time: '' });
      }
      for (const w of this.waiters.splice(0)) w();
    });
    this.exited = new Promise((resolveExit) =>
      this.child.once('exit', (code, signal) => {
        running.delete(this);
        for (const w of this.waiters.splice(0)) w();
        resolveExit({ code, signal });
      }),
    );
  }

  get pid(): number {
    return this.child.pid!;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves with the first log line matching `predicate`, waiting up to `timeoutMs`. */
  async waitForLog(predicate: (l: LogLine) => boolean, timeoutMs: number, what = 'a log line'): Promise<LogLine> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.lines.find(predicate);
      if (found) return found;
      if (!this.alive) throw new Error(`${this.name} exited before ${what}; stderr: ${this.stderr.slice(-2000)}; last lines: ${this.stdout.slice(-2000)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${this.name}: no ${what} within ${timeoutMs}ms; last lines: ${this.stdout.slice(-3000)}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.min(left, 500));
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  /**
   * The probe and metrics URLs the process logged once listening. The wait only catches a process
   * that never listens: loading the TypeScript sources took over 30 s at load 18-21 on two cores.
   */
  async endpoints(timeoutMs = 90_000): Promise<{ probes: string; metrics: string }> {
    const line = await this.waitForLog((l) => l.msg === 'serving probes and metrics', timeoutMs, 'the endpoints line');
    return { probes: String(line.probes), metrics: String(line.metrics) };
  }

  signal(signal: NodeJS.Signals): void {
    process.kill(this.pid, signal);
  }

  /** SIGKILL if still running, and wait for the exit. */
  async kill(): Promise<void> {
    if (this.alive) {
      try {
        process.kill(this.pid, 'SIGCONT');
      } catch {
        // already gone
      }
      this.child.kill('SIGKILL');
    }
    await this.exited;
  }
}

/** GET with a timeout; resolves with status, body and how long it took. */
export async function timedGet(url: string, timeoutMs = 5000): Promise<{ status: number; body: string; ms: number }> {
  const start = performance.now();
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  const body = await res.text();
  return { status: res.status, body, ms: performance.now() - start };
}
