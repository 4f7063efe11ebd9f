import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { XMLValidator } from 'fast-xml-parser';
import { METRIC_NAMES } from '@eso-mtls/metrics';
import { parseControllerConfig } from '@eso-mtls/controller';
import { parseDemoArgs, runDemoCommand } from '../src/cli/demo.js';
import { runDemo } from '../src/demo/run-demo.js';
import { minDemoDuration } from '../src/demo/scenario.js';
import { DEMO_SCHEDULE } from '../src/demo/schedule.js';
import { type DemoSummary, demoExitCode } from '../src/demo/summary.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Captures what a command writes; on the start line, scrapes the metrics it names while the run goes on. */
function captureWithScrape(): { out: { write(t: string): boolean; isTTY: false }; text: () => string; scrapes: Promise<string[]>[] } {
  let text = '';
  const scrapes: Promise<string[]>[] = [];
  return {
    text: () => text,
    scrapes,
    out: {
      isTTY: false,
      write(t: string) {
        text += t;
        for (const line of t.split('\n')) {
          if (!line.includes('"event":"start"')) continue;
          const start = JSON.parse(line) as { metricsUrl: string; providers: { metricsUrl: string }[] };
          const urls = [start.metricsUrl, start.providers[0]!.metricsUrl];
          // A second in, every provider has a certificate and the controller has planned.
          scrapes.push(new Promise((r) => setTimeout(r, 1000)).then(() => Promise.all(urls.map(async (u) => (await fetch(u)).text()))));
        }
        return true;
      },
    },
  };
}

/** The `<path>` items Vega drew inside the mark group `<name>_marks` of an SVG it rendered. */
function itemsOf(svg: string, name: string): string[] {
  const open = new RegExp(`<g class="[^"]*\\b${name}_marks"[^>]*?(/>|>)`).exec(svg);
  if (open === null) throw new Error(`no ${name}_marks group in the SVG`);
  if (open[1] === '/>') return [];
  const body = svg.slice(open.index + open[0].length, svg.indexOf('</g>', open.index));
  return body.match(/<path [^>]*>/g) ?? [];
}

/** What the shortest run wrote: its exit code, stdout, stderr, the mid-run scrapes and the chart it drew. */
interface ShortestRun {
  readonly code: number;
  readonly text: string;
  readonly err: string;
  readonly scrapes: Promise<string[]>[];
  readonly chartFile: string;
}

describe('eso-mtls demo', () => {
  // One shortest run (about 45 s) serves the assertions on its output, its /metrics and its chart:
  // each is a separate test, so a failure names what broke.
  let dir: string;
  let run: ShortestRun;
  beforeAll(
    async () => {
      dir = await mkdtemp(join(tmpdir(), 'eso-mtls-demo-'));
      const chartFile = join(dir, 'demo.svg');
      const capture = captureWithScrape();
      let err = '';
      const argv = ['--duration', `${minDemoDuration(3) / 1000}s`, '--json', '--metrics-bind-address', '127.0.0.1:0', '--chart', chartFile];
      const code = await runDemoCommand(argv, { stdout: capture.out, stderr: { write: (t: string) => (err += t) } });
      run = { code, text: capture.text(), err, scrapes: capture.scrapes, chartFile };
    },
    minDemoDuration(3) + 60_000,
  );
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a shortest run shows every step with real mTLS calls, none failed, as JSON lines with ISO timestamps, and serves /metrics', async () => {
    const lines = run.text.split('\n').filter((l) => l !== '');
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const r of records) {
      expect(r.time).toMatch(ISO);
      expect(new Date(r.time as string).toISOString()).toBe(r.time);
    }
    expect(records[0]!.event).toBe('start');
    const summary = records.at(-1) as unknown as DemoSummary & { event: string };
    expect(summary.event).toBe('summary');
    // Nothing on stderr but the line naming the chart.
    expect(run.err).toBe(`rotation timeline drawn in ${run.chartFile}\n`);
    expect(summary.calls.failed).toBe(0);
    expect(summary.calls.made).toBeGreaterThan(0);
    expect(summary.handshakes).toBeGreaterThan(0);
    expect(summary.rotations).toMatchObject({ initial: 4, ca_rotated: 4, secret_missing: 1, dns_changed: 2 });
    expect(summary.rotations.forced).toBeGreaterThanOrEqual(3 * 3 + 1);
    expect(summary.caPhases).toMatchObject({ create: 1, prepare: 1, activate: 1, retire: 1 });
    expect(Object.values(summary.serverRotations).every((n) => n >= 3)).toBe(true);
    expect(summary.reloads).toBeGreaterThan(0);
    expect(summary.refusedReloads).toBeGreaterThanOrEqual(1);
    expect(summary.checks.filter((c) => !c.ok)).toEqual([]);
    expect(run.code).toBe(0);
    // Every event line says who did what and how many calls went by since the line before.
    const events = records.slice(1, -1);
    expect(events.length).toBeGreaterThan(20);
    for (const e of events)
      expect(e).toEqual(expect.objectContaining({ source: expect.any(String), event: expect.any(String), callsOk: expect.any(Number), callsFailed: 0 }));
    expect(events.some((e) => e.source === 'provider' && e.reason === 'garbage_pem')).toBe(true);

    const [controllerMetrics, providerMetrics] = await run.scrapes[0]!;
    expect(controllerMetrics).toContain(`${METRIC_NAMES.providerCertificateExpiry}{namespace="provider-aws",service="provider-aws"}`);
    expect(controllerMetrics).toContain(`${METRIC_NAMES.providerCertificateRotations}{namespace="provider-aws",service="provider-aws",reason="initial"} 1`);
    expect(providerMetrics).toContain(`${METRIC_NAMES.providerHotReloads}{namespace="provider-aws",service="provider-aws"}`);
  });

  it('--chart draws the run: two CA rows (the overlap rotation), a leaf row per Secret, a diamond per rotation by reason', async () => {
    expect(run.code).toBe(0);
    const summary = JSON.parse(run.text.trim().split('\n').at(-1)!) as DemoSummary;
    const svg = await readFile(run.chartFile, 'utf8');
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
  });

  it('refuses a chart file name it cannot write before the run, naming the value', async () => {
    let err = '';
    const code = await runDemoCommand(['--chart', 'timeline.pdf'], { stdout: { write: () => true }, stderr: { write: (t: string) => (err += t) } });
    expect(code).toBe(2);
    expect(err).toBe('eso-mtls demo: --chart: "timeline.pdf" is not a file name ending in .svg or .html\n');
  });

  it('a failed call fails the run: the failure is printed, counted, and the exit code is 1', async () => {
    let text = '';
    const summary = await runDemo({
      durationMs: 6000,
      providers: 2,
      seed: 7,
      json: false,
      metricsAddress: null,
      out: { write: (t: string) => (text += t) },
      // The fault: a provider goes away while ESO still calls it (no retries).
      onRunning: ({ providers }) => void setTimeout(() => void providers[1]!.close(), 1500),
    });
    expect(summary.calls.made).toBeGreaterThan(0);
    expect(summary.calls.failed).toBeGreaterThan(0);
    expect(demoExitCode(summary)).toBe(1);
    expect(text).toMatch(/provider-vault\.provider-vault\.svc:\d+: GetSecret FAILED: provider\.v1 GetSecret failed with UNAVAILABLE/);
    expect(text).toMatch(/calls failed +[1-9]/);
    expect(text).toContain('FAILED: ');
  }, 60_000);

  it.each([
    [['--duration', '20s'], /--duration: "20s" is too short to play every step with 3 providers; use at least 44s/],
    [['--duration', 'soon'], /--duration: "soon" is not a duration such as 2m or 90s/],
    [['--providers', '9'], /--providers: "9" is not a whole number from 2 to 5/],
    [['--seed', '-1'], /--seed: "-1" is not a whole number/],
    [['--metrics-bind-address', 'here'], /--metrics-bind-address: "here" is not host:port/],
    [['--json=maybe'], /--json: "maybe" is not true or false/],
    [['--frobnicate'], /unknown flag --frobnicate/],
  ])('refuses %j with exit code 2, naming the flag', async (argv, message) => {
    let err = '';
    let out = '';
    const code = await runDemoCommand(argv, { stdout: { write: (t: string) => (out += t) }, stderr: { write: (t: string) => (err += t) } });
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(message);
  });

  it('defaults: 2 minutes, 3 providers, seed 1, text, /metrics on a free loopback port; a bare :port stays on loopback', () => {
    expect(parseDemoArgs([])).toEqual({ durationMs: 120_000, providers: 3, seed: 1, json: false, metricsAddress: { host: '127.0.0.1', port: 0 } });
    expect(parseDemoArgs(['--metrics-bind-address', ':9099', '--providers=2'])).toMatchObject({
      providers: 2,
      metricsAddress: { host: '127.0.0.1', port: 9099 },
    });
    expect(parseDemoArgs(['--metrics-bind-address', '0'])).toMatchObject({ metricsAddress: null });
  });

  it('--help names every flag', async () => {
    let out = '';
    expect(await runDemoCommand(['--help'], { stdout: { write: (t: string) => (out += t) }, stderr: { write: () => true } })).toBe(0);
    for (const f of ['--duration', '--providers', '--seed', '--json', '--metrics-bind-address']) expect(out).toContain(f);
  });

  it("the controller accepts no compressed schedule: --demo-schedule is an unknown flag to it, its --propagation-delay refuses the demo's 3s, and it has no connection-age flag", () => {
    const parsed = parseControllerConfig(['--demo-schedule'], {});
    expect(parsed.kind).toBe('error');
    expect(parsed.kind === 'error' && parsed.error.message).toMatch(/unknown flag --demo-schedule/);
    const propagation = parseControllerConfig([`--propagation-delay=${DEMO_SCHEDULE.propagationDelay}ms`], {});
    expect(propagation.kind === 'error' && propagation.error.message).toMatch(/for --propagation-delay .*from 10s to 1h/);
    expect(parseControllerConfig(['--max-connection-age=8s'], {}).kind).toBe('error');
  });
});
