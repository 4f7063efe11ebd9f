import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { realNodeUnavailable } from '../../packages/controller/src/cluster/node/cluster.js';
import { type RunnableBlock, runnableBlocks } from './runnable-blocks.js';

// docs/getting-started.md, followed as a reader would: every block marked `sh test` runs in page
// order and must exit 0; `sh test-background` blocks (dev-cluster, the controller) keep running in
// their own process group, as in another terminal, and get Ctrl-C (SIGINT) at the end, after which
// dev-cluster must have stopped its servers and removed its folder. Blocks run in a temp folder
// laid out like the clone (a symlink per top-level entry), so the page's relative paths and `npx
// eso-mtls` work and nothing is left in the clone. Exported variables (PATH, KUBECONFIG) carry
// from one block to the next, as in one shell session. Needs a built tree (`npm run build`).
// Section 8 (`dev-cluster --node`) runs as a test of its own after Ctrl-C has stopped the first
// dev-cluster: a real node, the chart's 2 pods, one provider, switched to pod certificates (about
// 4 minutes warm). A machine that cannot run a node fails it, with the reason: it is part of npm test.

const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const PAGE = join(repoRoot, 'docs', 'getting-started.md');

interface Background {
  readonly block: RunnableBlock;
  readonly child: ChildProcess;
  output: string;
  readonly exited: Promise<number | null>;
}

const work = mkdtempSync(join(tmpdir(), 'eso-mtls-getting-started-'));
const log = join(work, '..', `${work.split('/').pop()}.log`);
const envFile = join(work, '..', `${work.split('/').pop()}.env`);
// helm's config, cache and data, which the page's helm would otherwise write under the reader's HOME.
const helmHome = join(work, '..', `${work.split('/').pop()}.helm`);
const backgrounds: Background[] = [];

// The reader's shell: their environment, less what would point the page's commands elsewhere.
function initialEnvironment(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of ['KUBECONFIG', 'NODE_ENV', 'JEST_WORKER_ID', 'NODE_OPTIONS']) delete env[name];
  return { ...env, HELM_CONFIG_HOME: join(helmHome, 'config'), HELM_CACHE_HOME: join(helmHome, 'cache'), HELM_DATA_HOME: join(helmHome, 'data') };
}

function layOutClone(): void {
  for (const entry of readdirSync(repoRoot)) {
    if (entry === '.git' || entry === '.eso-mtls-dev') continue;
    symlinkSync(join(repoRoot, entry), join(work, entry));
  }
}

const described = (b: RunnableBlock): string => `block at docs/getting-started.md:${b.line} (${JSON.stringify(b.script.split('\n')[0])})`;

function shell(script: string, detached: boolean): ChildProcess {
  return spawn('bash', ['-c', script], { cwd: work, env: initialEnvironment(), detached, stdio: ['ignore', 'pipe', 'pipe'] });
}

// The variables the earlier blocks exported, in the clone's folder (cd sets PWD, which the saved
// variables would otherwise point back at the test runner's folder).
const session = (): string => `source ${JSON.stringify(envFile)}\ncd ${JSON.stringify(work)}`;

function collect(child: ChildProcess, onText: (text: string) => void): void {
  for (const stream of [child.stdout!, child.stderr!]) {
    stream.setEncoding('utf8');
    stream.on('data', (text: string) => {
      appendFileSync(log, text);
      onText(text);
    });
  }
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // already gone
  }
}

async function runForeground(block: RunnableBlock): Promise<void> {
  appendFileSync(log, `\n=== ${described(block)}\n`);
  // `set -e` as a careful reader stops at the first failing command; exports are saved for the next block.
  const child = shell(`set -eo pipefail\n${session()}\n${block.script}\nexport -p > ${JSON.stringify(envFile)}`, true);
  let output = '';
  collect(child, (t) => (output = (output + t).slice(-20_000)));
  const timer = setTimeout(() => killGroup(child, 'SIGKILL'), block.timeoutSeconds * 1000);
  const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  // A server of an earlier block that stops (a port taken, say) fails the test now, naming it,
  // rather than leaving this block to wait for it until its timeout.
  const died = await Promise.race([exited.then(() => undefined), ...backgrounds.map((bg) => bg.exited.then(() => bg))]);
  if (died !== undefined) {
    killGroup(child, 'SIGKILL');
    clearTimeout(timer);
    throw new Error(`${described(died.block)} stopped while ${described(block)} ran; its output ends:\n${died.output.slice(-10_000)}`);
  }
  clearTimeout(timer);
  const code = await exited;
  if (code !== 0) {
    throw new Error(`${described(block)} exited with ${code ?? `a signal (timeout ${block.timeoutSeconds}s?)`}; full log ${log}; its output ends:\n${output}`);
  }
}

async function startBackground(block: RunnableBlock): Promise<void> {
  appendFileSync(log, `\n=== ${described(block)} (background)\n`);
  const child = shell(`${session()}\n${block.script}`, true);
  const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  const bg: Background = { block, child, output: '', exited };
  backgrounds.push(bg);
  let wake: () => void = () => undefined;
  collect(child, (t) => {
    bg.output += t;
    wake();
  });
  if (block.ready === undefined) return;
  const deadline = Date.now() + block.timeoutSeconds * 1000;
  let gone = false;
  void exited.then(() => ((gone = true), wake()));
  while (!bg.output.includes(block.ready)) {
    if (gone) throw new Error(`${described(block)} exited before it showed ${JSON.stringify(block.ready)}; its output:\n${bg.output.slice(-10_000)}`);
    if (Date.now() > deadline)
      throw new Error(
        `${described(block)} did not show ${JSON.stringify(block.ready)} within ${block.timeoutSeconds}s; its output:\n${bg.output.slice(-10_000)}`,
      );
    await new Promise<void>((r) => {
      wake = r;
      setTimeout(r, 1000);
    });
  }
}

// Ctrl-C in each terminal, last started first; resolves with how each ended. A real node stops
// its components one by one, each with a grace period: about 40 s on a loaded 2-core machine.
const STOP_MS = 180_000;
async function pressCtrlC(): Promise<{ block: RunnableBlock; code: number | null; output: string }[]> {
  const ended = [];
  for (const bg of [...backgrounds].reverse()) {
    killGroup(bg.child, 'SIGINT');
    const code = await Promise.race([bg.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), STOP_MS).unref())]);
    if (code === 'hung') killGroup(bg.child, 'SIGKILL');
    ended.push({ block: bg.block, code: code === 'hung' ? null : code, output: bg.output });
  }
  backgrounds.length = 0;
  return ended;
}

// The page's blocks, before section 8 and in it (where `dev-cluster --node` runs).
const NODE_SECTION = /^## 8\. .*`dev-cluster --node`/m;
function pageParts(): { readonly local: RunnableBlock[]; readonly node: RunnableBlock[] } {
  const page = readFileSync(PAGE, 'utf8');
  const heading = NODE_SECTION.exec(page);
  if (heading === null) throw new Error(`docs/getting-started.md has no heading matching ${NODE_SECTION}: the --node section was renamed or lost`);
  const headingLine = page.slice(0, heading.index).split('\n').length;
  const blocks = runnableBlocks(page);
  return { local: blocks.filter((b) => b.line < headingLine), node: blocks.filter((b) => b.line > headingLine) };
}

// Ctrl-C has stopped every server: their folder is gone, and no process still runs from it.
function expectStoppedClean(devDir: string): void {
  expect(existsSync(devDir)).toBe(false);
  const leftovers = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes(devDir));
  expect(leftovers).toEqual([]);
}

async function runBlocks(blocks: readonly RunnableBlock[]): Promise<void> {
  for (const block of blocks) {
    if (block.mode === 'foreground') await runForeground(block);
    else await startBackground(block);
  }
}

let passed = 0;
beforeAll(() => {
  layOutClone();
  execFileSync('bash', ['-c', `export -p > ${JSON.stringify(envFile)}`], { env: initialEnvironment() });
});
afterAll(async () => {
  await pressCtrlC();
  rmSync(work, { recursive: true, force: true });
  rmSync(envFile, { force: true });
  rmSync(helmHome, { recursive: true, force: true });
  if (passed === 2) rmSync(log, { force: true }); // kept when something failed: the messages name it
}, STOP_MS + 60_000);

describe('docs/getting-started.md', () => {
  it('runs, block by block, from the demo to a healthy `eso-mtls status` against dev-cluster, and stops cleanly on Ctrl-C', async () => {
    const built = join(repoRoot, 'packages', 'controller', 'dist', 'bin', 'eso-mtls.js');
    if (!existsSync(built)) throw new Error(`${built} is missing: run \`npm run build\` first (the page runs the built CLI through npx)`);
    const blocks = pageParts().local;
    // The page's shape, so that a block lost in an edit fails here rather than passing unnoticed.
    expect(blocks.filter((b) => b.mode === 'background').map((b) => b.script.split(' ').slice(0, 3).join(' '))).toEqual([
      'npx eso-mtls dev-cluster',
      'npx eso-mtls controller',
    ]);
    expect(blocks.some((b) => b.script.includes('npx eso-mtls demo'))).toBe(true);
    expect(blocks.some((b) => b.script.includes('npx eso-mtls status'))).toBe(true);

    await runBlocks(blocks);

    const devDir = join(work, '.eso-mtls-dev');
    expect(existsSync(join(devDir, 'controller.kubeconfig'))).toBe(true);
    const ended = await pressCtrlC();
    const devCluster = ended.find((e) => e.block.script.includes('dev-cluster'))!;
    expect(devCluster.output).toContain('eso-mtls dev-cluster: stopped; .eso-mtls-dev removed');
    expect(devCluster.output).toContain('No kubelet runs here');
    expectStoppedClean(devDir);
    const controller = ended.find((e) => e.block.script.includes('eso-mtls controller'))!;
    expect(controller.output).toMatch(/"msg":"certificate issued: namespace team-a/);
    expect(controller.output).not.toMatch(/PRIVATE KEY/);
    passed++;
  }, 3_600_000);

  it('runs section 8 on a real node: dev-cluster --node, the chart Ready, the provider served by Secret then by pod certificate, and Ctrl-C stops it all', async () => {
    const unavailable = realNodeUnavailable();
    if (unavailable !== undefined) throw new Error(`section 8 runs a real node, and this machine cannot: ${unavailable}`);
    await pressCtrlC(); // section 3's dev-cluster, should the test before have failed with it running
    const blocks = pageParts().node;
    expect(blocks.filter((b) => b.mode === 'background').map((b) => b.script)).toEqual(['npx eso-mtls dev-cluster --node']);
    for (const command of ['helm install eso-mtls', 'deploy/examples/file-provider-pod-certificates', 'npx eso-mtls status --modes=secret,pod-certificate']) {
      expect(blocks.some((b) => b.script.includes(command))).toBe(true);
    }

    await runBlocks(blocks);

    const devDir = join(work, '.eso-mtls-dev');
    const [devCluster] = await pressCtrlC();
    // The terminal's exit status is npx's, which ends by the SIGINT it passed on: the output says how dev-cluster stopped.
    expect(devCluster!.output).toContain(
      'eso-mtls dev-cluster: SIGINT: stopping the node and its control plane\neso-mtls dev-cluster: stopped; .eso-mtls-dev removed\n',
    );
    expectStoppedClean(devDir);
    passed++;
  }, 7_200_000); // a cold first run builds the node's binaries and the images: up to an hour on 2 cores
});

describe('runnableBlocks, the marking this page uses', () => {
  it('takes sh test and sh test-background blocks with their attributes, and nothing else', () => {
    const page = [
      'text',
      '```sh',
      'not run',
      '```',
      '```sh test',
      'echo one',
      'echo two',
      '```',
      '```sh test-background ready="Press Ctrl-C" timeout=30',
      'server',
      '```',
      '```ts test',
      'not shell',
      '```',
    ].join('\n');
    expect(runnableBlocks(page, 9)).toEqual([
      { mode: 'foreground', script: 'echo one\necho two', line: 5, timeoutSeconds: 9 },
      { mode: 'background', script: 'server', line: 9, timeoutSeconds: 30, ready: 'Press Ctrl-C' },
    ]);
  });

  it('refuses what it does not know, naming the line', () => {
    expect(() => runnableBlocks('```sh test retries=3\nx\n```')).toThrow('line 1: unknown attribute retries=');
    expect(() => runnableBlocks('```sh test timeout=soon\nx\n```')).toThrow('line 1: timeout=soon is not a whole number of seconds');
    expect(() => runnableBlocks('```sh test ready="x"\nx\n```')).toThrow('line 1: ready= belongs to test-background blocks only');
  });
});
