import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { XMLValidator } from 'fast-xml-parser';
import { runDemoCommand } from '../src/cli/demo.js';
import { minDemoDuration } from '../src/demo/scenario.js';
import type { DemoSummary } from '../src/demo/summary.js';

/** The `<path>` items Vega drew inside the mark group `<name>_marks` of an SVG it rendered. */
function itemsOf(svg: string, name: string): string[] {
  const open = new RegExp(`<g class="[^"]*\\b${name}_marks"[^>]*?(/>|>)`).exec(svg);
  if (open === null) throw new Error(`no ${name}_marks group in the SVG`);
  if (open[1] === '/>') return [];
  const body = svg.slice(open.index + open[0].length, svg.indexOf('</g>', open.index));
  return body.match(/<path [^>]*>/g) ?? [];
}

describe('eso-mtls demo --chart', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'eso-mtls-chart-demo-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('draws the run: two CA rows (the overlap rotation), a leaf row per Secret, a diamond per rotation by reason', async () => {
    const file = join(dir, 'demo.svg');
    let out = '';
    let err = '';
    // The shortest run that plays every step (about 45 s).
    const argv = ['--duration', `${minDemoDuration(3) / 1000}s`, '--json', '--metrics-bind-address', '0', '--chart', file];
    const code = await runDemoCommand(argv, { stdout: { write: (t: string) => (out += t) }, stderr: { write: (t: string) => (err += t) } });
    expect(err).toBe(`rotation timeline drawn in ${file}\n`);
    expect(code).toBe(0);
    const summary = JSON.parse(out.trim().split('\n').at(-1)!) as DemoSummary;

    const svg = await readFile(file, 'utf8');
    expect(XMLValidator.validate(svg)).toBe(true);
    const rotations = itemsOf(svg, 'rotation');
    expect(rotations).toHaveLength(Object.values(summary.rotations).reduce((a, b) => a + (b ?? 0), 0));
    // Each diamond's label names its reason (Vega writes the encoded fields into aria-label).
    for (const [reason, n] of Object.entries(summary.rotations)) expect(rotations.filter((p) => p.includes(`rotation reason: ${reason}"`))).toHaveLength(n!);
    const caRows = new Set(itemsOf(svg, 'ca_phase').map((p) => /row: (CA \d+)/.exec(p)?.[1]));
    expect(caRows).toEqual(new Set(['CA 1', 'CA 2']));
    const leafRows = new Set(itemsOf(svg, 'certificate').map((p) => /row: ([^;]+);/.exec(p)?.[1]));
    expect(leafRows).toEqual(new Set(['client', 'namespace/provider-aws', 'namespace/provider-vault', 'namespace/provider-gcp']));
    expect(itemsOf(svg, 'violation')).toEqual([]);
  }, 120_000);

  it('refuses a chart file name it cannot write before the run, naming the value', async () => {
    let err = '';
    const code = await runDemoCommand(['--chart', 'timeline.pdf'], { stdout: { write: () => true }, stderr: { write: (t: string) => (err += t) } });
    expect(code).toBe(2);
    expect(err).toBe('eso-mtls demo: --chart: "timeline.pdf" is not a file name ending in .svg or .html\n');
  });
});
