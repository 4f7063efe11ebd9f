import { afterAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { realNodeUnavailable } from '@eso-mtls/devtools/cluster';
import { PageSession, STOP_MS, repoRoot } from './page-session.js';
import { type RunnableBlock, runnableBlocks } from './runnable-blocks.js';

// docs/getting-started.md, followed as a reader would (PageSession: `sh test` blocks in page
// order in one shell session, `sh test-background` blocks as other terminals that get Ctrl-C at
// the end), after which dev-cluster must have stopped its servers and removed its folder.
// Section 8 (`dev-cluster --node`) runs as a test of its own after Ctrl-C has stopped the first
// dev-cluster: a real node, the chart's 2 pods, one provider, switched to pod certificates (about
// 4 minutes warm). A machine that cannot run a node fails it, with the reason: it is part of npm test.

const PAGE = join(repoRoot, 'docs', 'getting-started.md');
const session = new PageSession('docs/getting-started.md', 'eso-mtls-getting-started-');
const work = session.work;

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

let passed = 0;
afterAll(() => session.close(passed === 2), STOP_MS + 60_000);

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

    await session.run(blocks);

    const devDir = join(work, '.eso-mtls-dev');
    expect(existsSync(join(devDir, 'controller.kubeconfig'))).toBe(true);
    const ended = await session.pressCtrlC();
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
    await session.pressCtrlC(); // section 3's dev-cluster, should the test before have failed with it running
    const blocks = pageParts().node;
    expect(blocks.filter((b) => b.mode === 'background').map((b) => b.script)).toEqual(['npx eso-mtls dev-cluster --node']);
    for (const command of ['helm install eso-mtls', 'deploy/examples/file-provider-pod-certificates', 'npx eso-mtls status --modes=secret,pod-certificate']) {
      expect(blocks.some((b) => b.script.includes(command))).toBe(true);
    }

    await session.run(blocks);

    const devDir = join(work, '.eso-mtls-dev');
    const [devCluster] = await session.pressCtrlC();
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
