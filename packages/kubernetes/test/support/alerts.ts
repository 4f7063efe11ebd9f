// Replays scrapes of a real ControllerMetrics registry through promtool and the shipped alert
// rules: one scrape per minute of input series, so an alert fires only if the exported series do.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ControllerMetrics } from '@eso-mtls/metrics';
import { stringify } from 'yaml';
import { parseExposition } from '../../../metrics/test/support/exposition.js';
import { type PromtoolResult, promtool, repoRoot } from '../../../metrics/test/support/promtool.js';
import { ALERTS_PATH } from '../../../metrics/test/support/rules.js';

type Registry = ControllerMetrics['registry'];

const TARGET = { job: 'eso-mtls-controller', instance: 'controller-0:8080' };

/** The scrapes of one registry, one per minute. */
export class ScrapeRecorder {
  private readonly scrapes: Map<string, number>[] = [];

  constructor(private readonly registry: Registry) {}

  /** Scrapes the registry now; the scrape stands for the next minute of the replay. */
  async scrape(): Promise<void> {
    const samples = parseExposition(await this.registry.metrics());
    this.scrapes.push(new Map(samples.map((s) => [seriesName(s.name, { ...s.labels, ...TARGET }), s.value])));
  }

  get minutes(): number {
    return this.scrapes.length;
  }

  /** Runs promtool on the scrapes; expects exactly `expected` (label sets) of `alertname` firing at the last minute. */
  expectFiring(alertname: string, expected: Record<string, string>[]): PromtoolResult {
    const names = new Set(this.scrapes.flatMap((s) => [...s.keys()]));
    const inputSeries = [...names].map((series) => ({
      series, values: this.scrapes.map((s) => (s.has(series) ? String(s.get(series)) : '_')).join(' '),
    }));
    const dir = mkdtempSync(join(tmpdir(), 'eso-alerts-replay-'));
    try {
      const test = {
        rule_files: [join(repoRoot, ALERTS_PATH)],
        evaluation_interval: '1m',
        tests: [{
          interval: '1m',
          input_series: inputSeries,
          promql_expr_test: [{
            expr: `ALERTS{alertname="${alertname}",alertstate="firing"}`,
            eval_time: `${this.scrapes.length - 1}m`,
            exp_samples: expected.map((labels) => ({ labels: seriesName('ALERTS', { alertname, alertstate: 'firing', severity: 'warning', ...labels }), value: 1 })),
          }],
        }],
      };
      writeFileSync(join(dir, 'test.yaml'), stringify(test));
      return promtool(['test', 'rules', join(dir, 'test.yaml')]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

function seriesName(name: string, labels: Record<string, string>): string {
  return `${name}{${Object.keys(labels).sort().map((k) => `${k}=${JSON.stringify(labels[k])}`).join(',')}}`;
}
