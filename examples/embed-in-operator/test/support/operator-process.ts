import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url));
const main = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

/** One JSON log line of the example operator (pino). */
export type LogLine = Record<string, unknown> & { msg: string };

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * The example operator as a real child process, run from its TypeScript source under the repo's
 * loader, so the test sends it a real SIGTERM and sees whether it exits by itself.
 */
export class OperatorProcess {
  readonly child: ChildProcess;
  readonly lines: LogLine[] = [];
  output = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(
    readonly name: string,
    env: Record<string, string>,
  ) {
    this.child = spawn(process.execPath, ['--import', `${repoRoot}scripts/register-ts.mjs`, main], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, BIND_HOST: '127.0.0.1', METRICS_PORT: '0', HEALTH_PORT: '0', POD_NAME: name, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.add(this.child);
    this.child.stderr!.setEncoding('utf8').on('data', (d: string) => (this.output += d));
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      this.output += `${line}\n`;
      try {
        this.lines.push(JSON.parse(line) as LogLine);
      } catch {
        this.lines.push({ msg: line });
      }
    });
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => {
        running.delete(this.child);
        resolve({ code, signal });
      }),
    );
  }

  /** The first log line with message `msg` (and the given fields), waiting up to `timeoutMs`. */
  async log(msg: string, fields: Record<string, unknown> = {}, timeoutMs = 60_000): Promise<LogLine> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.lines.find((l) => l.msg === msg && Object.entries(fields).every(([k, v]) => l[k] === v));
      if (found) return found;
      if (this.child.exitCode !== null || this.child.signalCode !== null || Date.now() > deadline) {
        throw new Error(`${this.name}: no log line ${JSON.stringify(msg)} ${JSON.stringify(fields)}; its output:\n${this.output.slice(-4000)}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Sends SIGTERM and waits for the process to exit by itself, failing after `timeoutMs` (a handle left open). */
  async terminate(timeoutMs = 30_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const hung = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${this.name} did not exit within ${timeoutMs}ms of SIGTERM; its output:\n${this.output.slice(-4000)}`)),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([this.exited, hung]);
    } finally {
      clearTimeout(timer);
    }
  }

  kill(): void {
    this.child.kill('SIGKILL');
  }
}
