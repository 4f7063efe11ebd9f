import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DEFAULT_POLICY, type Policy, PolicyError, type SimulationResult, days, hours, seededRandom, simulate, validatePolicy } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { chartHtmlPage } from '../src/chart/html-page.js';
import { compileTimeline, renderTimelineSvg, timelineView } from '../src/chart/render.js';
import { type ChartInput, MAX_LEAF_ROWS, buildTimelineModel } from '../src/chart/timeline-data.js';
import { MARK } from '../src/chart/timeline-spec.js';
import { runSimulateCommand } from '@eso-mtls/controller';
import { countBy, drawnData } from './support/chart-marks.js';

// The README's run: `simulate --years 3 --services 200` (50 namespaces), about 5 s on 2 loaded cores.
const services = (n: number, namespaces: number) => Array.from({ length: n }, (_, i) => ({ namespace: `team-${i % namespaces}`, name: `provider-${i}` }));
const run = (policy: Policy, n: number, namespaces: number, duration: number): Promise<SimulationResult> =>
  simulate({ policy, crypto: { ...createNodeCryptoBackend(), random: seededRandom(1) }, services: services(n, namespaces), duration });
const input = (policy: Policy, r: SimulationResult, extra: Partial<ChartInput> = {}): ChartInput => ({
  title: 'test',
  start: r.summary.start,
  end: r.summary.end,
  policy,
  records: r.timeline,
  minRemainingValidity: r.summary.minRemainingValidity,
  violations: r.summary.violations,
  ...extra,
});
const sum = (record: Readonly<Partial<Record<string, number>>>): number => Object.values(record).reduce<number>((a, b) => a + (b ?? 0), 0);

/** Well-formed XML, checked by a real parser; returns the parsed document. */
function parseXml(text: string): Record<string, unknown> {
  expect(XMLValidator.validate(text)).toBe(true);
  return new XMLParser({ ignoreAttributes: false }).parse(text) as Record<string, unknown>;
}

describe('rotation timeline chart', () => {
  let defaultRun: SimulationResult;
  beforeAll(async () => {
    defaultRun = await run(DEFAULT_POLICY, 200, 50, days(3 * 365));
  });

  it('draws the default three-year run: a row per CA, a bar per certificate, rotations by reason, the minimum remaining validity', async () => {
    const { summary } = defaultRun;
    const model = buildTimelineModel(input(DEFAULT_POLICY, defaultRun));
    expect(compileTimeline(model).warnings).toEqual([]);
    const view = await timelineView(model);
    try {
      // One CA created, one more per prepare: 4 over three years of 365-day CAs.
      const cas = 1 + (summary.caPhases.prepare ?? 0);
      expect(cas).toBe(4);
      const caBars = drawnData(view, MARK.caPhase);
      expect(new Set(caBars.map((d) => d.row)).size).toBe(cas);
      expect(countBy(caBars, 'phase')).toEqual({ prepare: 3, active: 4, retired: 3 });
      // The short phases are labelled with how long they lasted.
      expect(drawnData(view, MARK.caPhaseLabel).map((d) => d.label)).toEqual(expect.arrayContaining(['prepare 5m', 'retired 35m']));

      // 51 leaf rows (50 namespaces and the client) exceed the limit: the rest are counted per bucket.
      const issued = summary.serverIssuances + summary.clientIssuances;
      const bars = drawnData(view, MARK.certificate);
      const aggregated = drawnData(view, MARK.aggregated);
      expect(model.aggregatedRows).toBe(51 - (MAX_LEAF_ROWS - 1));
      expect(bars.length).toBeGreaterThan(0);
      expect(bars.length + sum(countBy(aggregated, 'row', 'count'))).toBe(issued);
      expect(drawnData(view, MARK.lookahead)).toHaveLength(bars.length + cas);

      // Every rotation is a mark coloured by its reason, drawn or counted in the aggregated row.
      const rotations = countBy(drawnData(view, MARK.rotation), 'reason');
      const folded = countBy(aggregated, 'reason', 'count');
      const byReason = Object.fromEntries(
        [...new Set([...Object.keys(rotations), ...Object.keys(folded)])].map((r) => [r, (rotations[r] ?? 0) + (folded[r] ?? 0)]),
      );
      expect(byReason).toEqual(summary.byReason);
      expect(Object.keys(byReason).sort()).toEqual(['ca_rotated', 'expiring', 'initial']);

      // The minimum remaining validity simulate reports, drawn where it happened: to the notAfter of the leaf it measured.
      const [min] = drawnData(view, MARK.minRemaining);
      expect(drawnData(view, MARK.minRemaining)).toHaveLength(1);
      expect(Math.abs(Number(min!.to) - Number(min!.from) - summary.minRemainingValidity)).toBeLessThan(1000);
      expect(min!.label).toBe('35d left');
      expect(drawnData(view, MARK.violation)).toEqual([]);

      const svg = await view.toSVG();
      expect(parseXml(svg)).toHaveProperty('svg');
      expect(svg).toContain(`Aggregated: ${issued - bars.length} certificates of 22 namespaces beyond the first 29 leaf rows`);
      expect(svg).toContain('22 more namespaces (aggregated)');
    } finally {
      view.finalize();
    }
  });

  it('draws in red, on its row and at its instant, each violation the invariant checker finds in a policy that lets leaves reach their last day', async () => {
    // The validator refuses this policy (that is its job); the simulator runs any Policy, as a user's experiment would.
    const policy: Policy = { ...DEFAULT_POLICY, leafLookahead: hours(12), leafJitter: 0 };
    expect(() => validatePolicy(policy)).toThrow(PolicyError);
    const result = await run(policy, 4, 2, days(100));
    const { violations } = result.summary;
    expect(violations.length).toBeGreaterThan(0);
    expect(new Set(violations.map((v) => v.kind))).toEqual(new Set(['expiry']));

    const model = buildTimelineModel(input(policy, result));
    const view = await timelineView(model);
    try {
      const rules = drawnData(view, MARK.violation);
      expect(rules.map((d) => d.at)).toEqual(violations.map((v) => v.at));
      const points = drawnData(view, MARK.violationPoint);
      expect(points).toHaveLength(violations.length);
      // Each lands on the row of the Secret the checker named.
      for (const [i, v] of violations.entries()) {
        const expected = v.message.startsWith('the client leaf') ? 'client' : `namespace/${/namespace (\S+) /.exec(v.message)![1]}`;
        expect(points[i]!.row).toBe(expected);
      }
      expect(new Set(points.map((p) => p.row))).toEqual(new Set(['client', 'namespace/team-0', 'namespace/team-1']));
      const svg = await view.toSVG();
      parseXml(svg);
      expect(svg).toContain('stroke="#d62728"');
      expect(svg).toContain(`Red: ${violations.length} invariant violation(s); the first, at ${new Date(violations[0]!.at).toISOString()}:`);
      expect(svg).toContain(`${violations[0]!.kind}: ${violations[0]!.message.slice(0, 60)}`);
    } finally {
      view.finalize();
    }
  });

  it('aggregates rows beyond the limit, counts every folded certificate, and says so', async () => {
    const result = await run(DEFAULT_POLICY, 12, 12, days(330));
    const issued = result.summary.serverIssuances + result.summary.clientIssuances;
    const model = buildTimelineModel(input(DEFAULT_POLICY, result, { maxLeafRows: 5 }));
    expect(model.rows).toEqual(['CA 1', 'CA 2', 'client', 'namespace/team-0', 'namespace/team-1', 'namespace/team-2', '9 more namespaces (aggregated)']);
    expect(
      model.certificates.length +
        sum(
          countBy(
            model.aggregated.map((a) => ({ ...a })),
            'row',
            'count',
          ),
        ),
    ).toBe(issued);
    expect(model.subtitle.join('\n')).toMatch(/Aggregated: \d+ certificates of 9 namespaces beyond the first 4 leaf rows/);
    const unfolded = buildTimelineModel(input(DEFAULT_POLICY, result));
    expect(unfolded.aggregated).toEqual([]);
    expect(unfolded.certificates).toHaveLength(issued);
    expect(unfolded.subtitle.join('\n')).not.toContain('Aggregated');
  });

  it('the HTML page holds the SVG inline and fetches nothing', async () => {
    const svg = await renderTimelineSvg(buildTimelineModel(input(DEFAULT_POLICY, await run(DEFAULT_POLICY, 2, 1, days(30)))));
    const html = chartHtmlPage('a <title> & more', svg);
    expect(html.includes(svg)).toBe(true);
    expect(html).toContain('<title>a &lt;title&gt; &amp; more</title>');
    // Only local references (the clip paths' url(#clipN)); a failed match would print the whole page.
    expect(/<script|<link|src=|url\((?!#)/i.exec(html)?.[0]).toBeUndefined();
    // The only URLs are the SVG namespace names, which are never fetched.
    expect(html.match(/https?:\/\/[^"']+/g)?.every((u) => u.startsWith('http://www.w3.org/'))).toBe(true);
  });

  describe('simulate --chart', () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'eso-mtls-chart-'));
    });
    afterAll(async () => {
      await rm(dir, { recursive: true, force: true });
    });
    const runCli = async (argv: string[]): Promise<{ code: number; out: string; err: string }> => {
      let out = '';
      let err = '';
      const code = await runSimulateCommand(argv, { stdout: { write: (t: string) => (out += t) }, stderr: { write: (t: string) => (err += t) } });
      return { code, out, err };
    };

    it('writes the chart as SVG or HTML by the file name, and the report still goes to stdout', async () => {
      for (const name of ['t.svg', 't.html']) {
        const file = join(dir, name);
        const { code, out, err } = await runCli(['--years', '0.5', '--services', '4', '--chart', file]);
        expect(code).toBe(0);
        expect(out).toContain('Violations: 0');
        expect(err).toBe(`rotation timeline drawn in ${file}\n`);
        const text = await readFile(file, 'utf8');
        if (name.endsWith('.svg')) expect(parseXml(text)).toHaveProperty('svg');
        else expect(text).toMatch(/^<!DOCTYPE html>[\s\S]*<svg [\s\S]*<\/svg>[\s\S]*<\/html>\n$/);
      }
    });

    it('refuses a file name it cannot write before simulating, naming the value', async () => {
      const { code, err } = await runCli(['--chart', join(dir, 'timeline.png')]);
      expect(code).toBe(2);
      expect(err).toContain(`--chart: "${join(dir, 'timeline.png')}" is not a file name ending in .svg or .html`);
    });
  });
});
