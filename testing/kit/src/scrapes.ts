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

/** One target to scrape: where its metrics come from and the labels discovery gives them. */
export interface ScrapedTarget {
  readonly source: MetricsSource;
  readonly target: ScrapeTarget;
}

/** The scrapes of one or more targets, one round of every target per minute. */
export class ScrapeRecorder {
  private readonly scrapes: Map<string, number>[] = [];
  private readonly targets: readonly ScrapedTarget[];

  /** One target (the controller by default), or several with their own labels. */
  constructor(source: MetricsSource | readonly ScrapedTarget[], target: ScrapeTarget = CONTROLLER) {
    this.targets = Array.isArray(source) ? source : [{ source: source as MetricsSource, target }];
  }

  /** Scrapes every target now; the round stands for the next minute of the replay. */
  async scrape(): Promise<void> {
    const minute = new Map<string, number>();
    for (const { source, target } of this.targets) {
      for (const s of parseExposition(await source.metrics())) minute.set(seriesName(s.name, { ...s.labels, ...target }), s.value);
    }
    this.scrapes.push(minute);
  }

  /** The labels of the first (or only) target. */
  get target(): ScrapeTarget {
    return this.targets[0]!.target;
  }

  get minutes(): number {
    return this.scrapes.length;
  }

  /** Runs promtool on the scrapes; expects exactly `expected` (label sets) of `alertname` firing at the last minute. */
  expectFiring(alertname: string, expected: Record<string, string>[]): PromtoolResult {
    return this.replay(
      `ALERTS{alertname="${alertname}",alertstate="firing"}`,
      expected.map((labels) => ({ labels: seriesName('ALERTS', { alertname, alertstate: 'firing', severity: 'warning', ...labels }), value: 1 })),
    );
  }

  /** Runs promtool on the scrapes; expects no alert of the shipped rules firing at any minute of them. */
  expectNoneFiring(): PromtoolResult {
    return this.replay(`max_over_time(ALERTS{alertstate="firing"}[${this.scrapes.length}m])`, []);
  }

  private replay(expr: string, expected: Parameters<typeof promtoolAlertTest>[3]): PromtoolResult {
    const names = new Set(this.scrapes.flatMap((s) => [...s.keys()]));
    const inputSeries = [...names].map((series) => ({
      series,
      values: this.scrapes.map((s) => (s.has(series) ? String(s.get(series)) : '_')).join(' '),
    }));
    return promtoolAlertTest(inputSeries, expr, this.scrapes.length - 1, expected);
  }
}

function seriesName(name: string, labels: Record<string, string>): string {
  return `${name}{${Object.keys(labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`)
    .join(',')}}`;
}
