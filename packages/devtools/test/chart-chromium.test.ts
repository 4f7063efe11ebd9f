import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DEFAULT_POLICY, type Policy, days, hours, seededRandom, simulate } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { writeTimelineChart } from '../src/chart/chart-file.js';
import { runSimulateCommand } from '@eso-mtls/controller';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../../..', import.meta.url));
// Debian's chromium, installed by scripts/prepare-test-env.sh; a missing browser fails here, loudly.
const chromium = execFileSync('bash', [join(repo, 'scripts/ensure-chromium.sh')], { encoding: 'utf8' }).trim();

/** Headless Chromium with the flags this machine needs (no sandbox, no GPU, nothing fetched in the background). */
async function browse(dir: string, args: readonly string[]): Promise<{ stdout: string; stderr: string }> {
  const profile = await mkdtemp(join(dir, 'profile-'));
  const flags = [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    `--user-data-dir=${profile}`,
    '--enable-logging=stderr',
    '--v=0',
  ];
  try {
    return await run(chromium, [...flags, ...args], { timeout: 60_000, maxBuffer: 64 * 1024 * 1024 });
  } finally {
    await rm(profile, { recursive: true, force: true });
  }
}

// What Chromium logs when a page or an SVG fails to parse or to run; its dbus noise in a container is not about us.
const PAGE_ERRORS = /parsererror|XML|SVG|Uncaught|CONSOLE|error on line/i;
const pageErrors = (stderr: string): string[] => stderr.split('\n').filter((l) => PAGE_ERRORS.test(l));

/** Width and height from a PNG's IHDR chunk. */
function pngSize(png: Buffer): { width: number; height: number } {
  expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

describe('rotation timeline in a real headless Chromium', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'eso-mtls-chart-chromium-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('renders the default three-year run (HTML and SVG) without errors, and a screenshot is taken', async () => {
    const html = join(dir, 'timeline.html');
    const svg = join(dir, 'timeline.svg');
    const quiet = { stdout: { write: () => true }, stderr: { write: () => true } };
    expect(await runSimulateCommand(['--years', '3', '--services', '200', '--chart', html], quiet)).toBe(0);
    // The same SVG as `--chart timeline.svg` writes (chart.test.ts checks that path), without a second 5 s simulation.
    const page = await readFile(html, 'utf8');
    await writeFile(svg, page.slice(page.indexOf('<svg '), page.lastIndexOf('</svg>') + '</svg>'.length));

    // The page's DOM after Chromium parsed it: the inline SVG with its marks, the aggregated row named.
    const dom = await browse(dir, ['--dump-dom', `file://${html}`]);
    expect(pageErrors(dom.stderr)).toEqual([]);
    expect(dom.stdout).toMatch(/<svg [^>]*class="marks"/);
    expect(dom.stdout).toContain('certificate_marks');
    expect(dom.stdout).toContain('22 more namespaces (aggregated)');
    expect(dom.stdout.includes('parsererror')).toBe(false);

    // The SVG opened on its own goes through Chromium's XML parser, which reports any fault in the page.
    const alone = await browse(dir, ['--dump-dom', `file://${svg}`]);
    expect(pageErrors(alone.stderr)).toEqual([]);
    expect(alone.stdout).toContain('rotation_marks');
    expect(alone.stdout.includes('parsererror')).toBe(false);

    const png = join(dir, 'timeline.png');
    const shot = await browse(dir, [`--screenshot=${png}`, '--window-size=1560,760', `file://${html}`]);
    expect(pageErrors(shot.stderr)).toEqual([]);
    expect(pngSize(await readFile(png))).toEqual({ width: 1560, height: 760 });
    // A blank page compresses to a few kilobytes; the chart is hundreds.
    expect((await stat(png)).size).toBeGreaterThan(50_000);
  });

  it('Chromium reports a broken SVG: the check above can fail', async () => {
    const broken = join(dir, 'broken.svg');
    await writeFile(broken, '<svg xmlns="http://www.w3.org/2000/svg"><rect></svg>');
    const { stdout } = await browse(dir, ['--dump-dom', `file://${broken}`]);
    expect(stdout).toContain('parsererror');
  });

  it('renders a chart with violations in red', async () => {
    const policy: Policy = { ...DEFAULT_POLICY, leafLookahead: hours(12), leafJitter: 0 };
    const crypto = { ...createNodeCryptoBackend(), random: seededRandom(1) };
    const r = await simulate({ policy, crypto, services: [{ namespace: 'team-0', name: 'provider-0' }], duration: days(100) });
    expect(r.summary.violations.length).toBeGreaterThan(0);
    const html = join(dir, 'violations.html');
    const { summary } = r;
    await writeTimelineChart(html, {
      title: 'violations',
      start: summary.start,
      end: summary.end,
      policy,
      records: r.timeline,
      violations: summary.violations,
    });
    const dom = await browse(dir, ['--dump-dom', `file://${html}`]);
    expect(pageErrors(dom.stderr)).toEqual([]);
    expect(dom.stdout).toContain('violation_point_marks');
    expect(dom.stdout).toContain('stroke="#d62728"');
  });
});
