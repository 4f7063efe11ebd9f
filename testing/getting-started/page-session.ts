import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunnableBlock } from './runnable-blocks.js';

// A docs page followed as a reader would, in one shell session: every block marked `sh test` runs
// in page order and must exit 0; `sh test-background` blocks (servers) keep running in their own
// process group, as in another terminal, and get Ctrl-C (SIGINT) at the end; a block marked with
// `file=NAME` is saved as NAME, as the page tells the reader to. Blocks run in a temp folder laid
// out like the clone (a symlink per top-level entry), so the page's relative paths and `npx
// eso-mtls` work and nothing is left in the clone. Exported variables (PATH, KUBECONFIG) carry
// from one block to the next. Needs a built tree (`npm run build`).

/** The repository root. */
export const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');

/** A background block's process and what it printed. */
export interface Background {
  readonly block: RunnableBlock;
  readonly child: ChildProcess;
  output: string;
  readonly exited: Promise<number | null>;
}

/** How a background block ended at Ctrl-C. */
export interface Ended {
  readonly block: RunnableBlock;
  readonly code: number | null;
  readonly output: string;
}

// Ctrl-C in each terminal, last started first. A real node stops its components one by one, each
// with a grace period: about 40 s on a loaded 2-core machine.
export const STOP_MS = 180_000;

/** One reader's shell session over `page` (repository-relative, for messages). */
export class PageSession {
  /** The temp folder laid out like the clone, where the blocks run. */
  readonly work: string;
  /** Every block's output, kept when a test fails. */
  readonly log: string;
  private readonly envFile: string;
  // helm's config, cache and data, which the page's helm would otherwise write under the reader's HOME.
  private readonly helmHome: string;
  private readonly backgrounds: Background[] = [];

  constructor(
    private readonly page: string,
    prefix: string,
  ) {
    this.work = mkdtempSync(join(tmpdir(), prefix));
    const base = join(this.work, '..', this.work.split('/').pop()!);
    this.log = `${base}.log`;
    this.envFile = `${base}.env`;
    this.helmHome = `${base}.helm`;
    for (const entry of readdirSync(repoRoot)) {
      if (entry === '.git' || entry === '.eso-mtls-dev') continue;
      symlinkSync(join(repoRoot, entry), join(this.work, entry));
    }
    execFileSync('bash', ['-c', `export -p > ${JSON.stringify(this.envFile)}`], { env: this.environment() });
  }

  /** Runs `blocks` in order: saves files, runs foreground blocks to completion, starts background ones. */
  async run(blocks: readonly RunnableBlock[]): Promise<void> {
    for (const block of blocks) {
      if (block.mode === 'file') this.save(block);
      else if (block.mode === 'foreground') await this.runForeground(block);
      else await this.startBackground(block);
    }
  }

  /**
   * Runs `script` as the reader would type it, in the session's folder, and resolves with its exit
   * code and output whatever the code: for what a page says happens when something is wrong. A
   * script still running after `timeoutSeconds` is killed (code null).
   */
  async runAnyExit(script: string, timeoutSeconds: number): Promise<{ code: number | null; output: string }> {
    appendFileSync(this.log, `\n=== ${JSON.stringify(script)} (any exit code)\n`);
    const child = this.shell(`${this.session()}\n${script}`);
    let output = '';
    this.collect(child, (t) => (output += t));
    const timer = setTimeout(() => killGroup(child, 'SIGKILL'), timeoutSeconds * 1000);
    // 'close', not 'exit': the output is whole only once the streams have ended.
    const code = await new Promise<number | null>((r) => child.once('close', (c) => r(c)));
    clearTimeout(timer);
    return { code, output };
  }

  /** Ctrl-C in each terminal, last started first; resolves with how each ended. */
  async pressCtrlC(): Promise<Ended[]> {
    const ended: Ended[] = [];
    for (const bg of [...this.backgrounds].reverse()) {
      killGroup(bg.child, 'SIGINT');
      const code = await Promise.race([bg.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), STOP_MS).unref())]);
      if (code === 'hung') killGroup(bg.child, 'SIGKILL');
      ended.push({ block: bg.block, code: code === 'hung' ? null : code, output: bg.output });
    }
    this.backgrounds.length = 0;
    return ended;
  }

  /** Stops what still runs and removes the folder; the log is removed only if `passed`. */
  async close(passed: boolean): Promise<void> {
    await this.pressCtrlC();
    rmSync(this.work, { recursive: true, force: true });
    rmSync(this.envFile, { force: true });
    rmSync(this.helmHome, { recursive: true, force: true });
    if (passed) rmSync(this.log, { force: true }); // kept when something failed: the messages name it
  }

  // The reader's shell: their environment, less what would point the page's commands elsewhere.
  private environment(): NodeJS.ProcessEnv {
    const env = { ...process.env };
    for (const name of ['KUBECONFIG', 'NODE_ENV', 'JEST_WORKER_ID', 'NODE_OPTIONS']) delete env[name];
    const helm = this.helmHome;
    return { ...env, HELM_CONFIG_HOME: join(helm, 'config'), HELM_CACHE_HOME: join(helm, 'cache'), HELM_DATA_HOME: join(helm, 'data') };
  }

  private described(b: RunnableBlock): string {
    return `block at ${this.page}:${b.line} (${JSON.stringify(b.script.split('\n')[0])})`;
  }

  private shell(script: string): ChildProcess {
    return spawn('bash', ['-c', script], { cwd: this.work, env: this.environment(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  }

  // The variables the earlier blocks exported, in the clone's folder (cd sets PWD, which the saved
  // variables would otherwise point back at the test runner's folder).
  private session(): string {
    return `source ${JSON.stringify(this.envFile)}\ncd ${JSON.stringify(this.work)}`;
  }

  private collect(child: ChildProcess, onText: (text: string) => void): void {
    for (const stream of [child.stdout!, child.stderr!]) {
      stream.setEncoding('utf8');
      stream.on('data', (text: string) => {
        appendFileSync(this.log, text);
        onText(text);
      });
    }
  }

  private save(block: RunnableBlock): void {
    appendFileSync(this.log, `\n=== ${this.described(block)} saved as ${block.file}\n`);
    const file = join(this.work, block.file!);
    mkdirSync(dirname(file), { recursive: true }); // a file= in a folder the page has not made yet
    writeFileSync(file, `${block.script}\n`);
  }

  private async runForeground(block: RunnableBlock): Promise<void> {
    appendFileSync(this.log, `\n=== ${this.described(block)}\n`);
    // `set -e` as a careful reader stops at the first failing command; exports are saved for the next block.
    const child = this.shell(`set -eo pipefail\n${this.session()}\n${block.script}\nexport -p > ${JSON.stringify(this.envFile)}`);
    let output = '';
    this.collect(child, (t) => (output = (output + t).slice(-20_000)));
    const timer = setTimeout(() => killGroup(child, 'SIGKILL'), block.timeoutSeconds * 1000);
    const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    // A server of an earlier block that stops (a port taken, say) fails the test now, naming it,
    // rather than leaving this block to wait for it until its timeout.
    const died = await Promise.race([exited.then(() => undefined), ...this.backgrounds.map((bg) => bg.exited.then(() => bg))]);
    if (died !== undefined) {
      killGroup(child, 'SIGKILL');
      clearTimeout(timer);
      throw new Error(`${this.described(died.block)} stopped while ${this.described(block)} ran; its output ends:\n${died.output.slice(-10_000)}`);
    }
    clearTimeout(timer);
    const code = await exited;
    if (code !== 0) {
      throw new Error(
        `${this.described(block)} exited with ${code ?? `a signal (timeout ${block.timeoutSeconds}s?)`}; full log ${this.log}; its output ends:\n${output}`,
      );
    }
  }

  private async startBackground(block: RunnableBlock): Promise<void> {
    appendFileSync(this.log, `\n=== ${this.described(block)} (background)\n`);
    const child = this.shell(`${this.session()}\n${block.script}`);
    const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    const bg: Background = { block, child, output: '', exited };
    this.backgrounds.push(bg);
    let wake: () => void = () => undefined;
    this.collect(child, (t) => {
      bg.output += t;
      wake();
    });
    if (block.ready === undefined) return;
    const deadline = Date.now() + block.timeoutSeconds * 1000;
    let gone = false;
    void exited.then(() => ((gone = true), wake()));
    while (!bg.output.includes(block.ready)) {
      if (gone) throw new Error(`${this.described(block)} exited before it showed ${JSON.stringify(block.ready)}; its output:\n${bg.output.slice(-10_000)}`);
      if (Date.now() > deadline) {
        throw new Error(
          `${this.described(block)} did not show ${JSON.stringify(block.ready)} within ${block.timeoutSeconds}s; its output:\n${bg.output.slice(-10_000)}`,
        );
      }
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, 1000);
      });
    }
  }
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // already gone
  }
}
