import { describe, expect, it } from '@jest/globals';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { repoRoot } from '@eso-mtls/test-kit/repo';
import { isSupportedNode, SUPPORTED_NODE, unsupportedNodeWarning } from '../src/cli/node-support.js';

// `npx eso-mtls` runs on any Node without a word; the built command warns once, on stderr, when
// the Node running it is not a line package.json "engines" claims. Run here under the machine's
// own end-of-life Node (20 on the CI image, which the suites themselves avoid) and the suite's.

const CLI = resolve(repoRoot, 'packages/controller/dist/bin/eso-mtls.js');
const engines = (file: string): string => (JSON.parse(readFileSync(resolve(repoRoot, file), 'utf8')) as { engines: { node: string } }).engines.node;

/** A `node` on PATH (or /usr/bin) whose line is not supported, with its version. */
function unsupportedNode(): { node: string; version: string } {
  const candidates = [...(process.env.PATH ?? '').split(delimiter).map((d) => join(d, 'node')), '/usr/bin/node'].filter((f) => existsSync(f));
  for (const node of candidates) {
    const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim().replace(/^v/, '');
    if (!isSupportedNode(version)) return { node, version };
  }
  throw new Error(`no unsupported node among ${candidates.join(', ')}: this test needs the machine's Node 20 (the CI image's /usr/bin/node)`);
}

function run(node: string, args: readonly string[]): { status: number | null; stdout: string; stderr: string } {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build -w packages/controller\` first`);
  return spawnSync(node, [CLI, ...args], { cwd: repoRoot, encoding: 'utf8', timeout: 120_000 });
}

describe('the supported Node lines', () => {
  it("are the packages' and the root's engines", () => {
    expect(engines('packages/controller/package.json')).toBe(SUPPORTED_NODE);
    expect(engines('package.json')).toBe(SUPPORTED_NODE);
  });

  it.each([
    ['20.20.2', false],
    ['22.11.0', false],
    ['22.12.0', true],
    ['22.18.1', true],
    ['23.11.0', false],
    ['24.0.0', true],
    ['26.1.0', true],
    ['27.0.0', false],
  ])('Node %s supported: %s', (version, supported) => {
    expect(isSupportedNode(version)).toBe(supported);
    expect(unsupportedNodeWarning(version) === undefined).toBe(supported);
  });

  it('refuses a range it cannot read, naming the part', () => {
    expect(() => isSupportedNode('24.0.0', '>=22')).toThrow('engines range part ">=22" of ">=22" is not a caret range like ^24.0.0');
  });
});

describe('eso-mtls on an unsupported Node', () => {
  it('warns once on stderr, naming the running version and the supported lines, and still runs', () => {
    const { node, version } = unsupportedNode();
    const old = run(node, ['simulate', '--years', '0.1', '--services', '1']);
    expect(old.status).toBe(0);
    expect(old.stderr).toBe(
      `eso-mtls: warning: Node ${version} is not a supported line (${SUPPORTED_NODE}); it may fail or run slower. Use Node 24, e.g. \`npx -p node@24 eso-mtls ...\`\n`,
    );
    expect(old.stdout).toContain('Violations: 0');
    // The version and usage texts stay as they are: scripts capture them.
    expect(run(node, ['--version'])).toMatchObject({ status: 0, stderr: '' });
    expect(run(node, ['--help'])).toMatchObject({ status: 0, stderr: '' });
  }, 240_000);

  it('says nothing on a supported Node', () => {
    expect(isSupportedNode(process.versions.node)).toBe(true);
    expect(run(process.execPath, ['simulate', '--years', '0.1', '--services', '1'])).toMatchObject({ status: 0, stderr: '' });
  }, 120_000);
});
