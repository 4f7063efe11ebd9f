// Replays scrapes of real metrics (a ControllerMetrics registry, or a pod's /metrics) through
// promtool and the shipped alert rules: one scrape per minute of input series, so an alert fires
// only if the exported series do.
import { promtoolAlertTest } from './alert-test.js';
import { parseExposition } from './exposition.js';
import type { PromtoolResult } from './promtool.js';

/** What is scraped: a prom-client Registry, or anything else that answers with exposition text. */
export interface MetricsSource {
  metrics(): Promise<string>;
}

/** The labels Prometheus's discovery attaches to a scrape target's samples. */
export interface ScrapeTarget {
  readonly job: string;
  readonly instance: string;
}

const CONTROLLER: ScrapeTarget = { job: 'eso-mtls-controller', instance: 'controller-0:8080' };

/** The scrapes of one target, one per minute. */
export class ScrapeRecorder {
  private readonly scrapes: Map<string, number>[] = [];

  constructor(
    private readonly source: MetricsSource,
    readonly target: ScrapeTarget = CONTROLLER,
  ) {}

  /** Scrapes the source now; the scrape stands for the next minute of the replay. */
  async scrape(): Promise<void> {
    const samples = parseExposition(await this.source.metrics());
    this.scrapes.push(new Map(samples.map((s) => [seriesName(s.name, { ...s.labels, ...this.target }), s.value])));
  }

  get minutes(): number {
    return this.scrapes.length;
  }

  /** Runs promtool on the scrapes; expects exactly `expected` (label sets) of `alertname` firing at the last minute. */
  expectFiring(alertname: string, expected: Record<string, string>[]): PromtoolResult {
    const names = new Set(this.scrapes.flatMap((s) => [...s.keys()]));
    const inputSeries = [...names].map((series) => ({
      series,
      values: this.scrapes.map((s) => (s.has(series) ? String(s.get(series)) : '_')).join(' '),
    }));
    const expr = `ALERTS{alertname="${alertname}",alertstate="firing"}`;
    return promtoolAlertTest(
      inputSeries,
      expr,
      this.scrapes.length - 1,
      expected.map((labels) => ({ labels: seriesName('ALERTS', { alertname, alertstate: 'firing', severity: 'warning', ...labels }), value: 1 })),
    );
  }
}

function seriesName(name: string, labels: Record<string, string>): string {
  return `${name}{${Object.keys(labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`)
    .join(',')}}`;
}
