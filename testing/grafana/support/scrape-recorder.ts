// Scrapes real /metrics endpoints over HTTP on a timer, as Prometheus would with honor_labels:
// true (the exporters' own namespace/service labels win; job and instance are added), and writes
// what it saw as timestamped OpenMetrics text for `promtool tsdb create-blocks-from openmetrics`.
import { type Sample, parseExposition } from '@eso-mtls/test-kit/exposition';

/** One scrape target and the labels Prometheus's discovery would attach. */
export interface ScrapeTarget {
  readonly url: string;
  readonly job: string;
  readonly instance: string;
}

interface RecordedScrape {
  readonly target: ScrapeTarget;
  /** Unix milliseconds at which the scrape began (Prometheus stamps samples the same way). */
  readonly time: number;
  readonly body: string;
  readonly samples: readonly Sample[];
}

const escapeLabel = (v: string): string => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

export class ScrapeRecorder {
  private readonly scrapes: RecordedScrape[] = [];
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> = Promise.resolve();
  private failure: Error | undefined;

  constructor(private readonly targets: readonly ScrapeTarget[]) {}

  /** Scrapes every target now, then every `intervalMs` until stop(). */
  start(intervalMs: number): void {
    const tick = (): void => {
      this.inFlight = this.inFlight.then(() => this.scrapeAll()).catch((e: Error) => void (this.failure ??= e));
    };
    tick();
    this.timer = setInterval(tick, intervalMs);
  }

  /** Scrapes every target once more, waits for it, and stops the timer. Throws the first failed scrape. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.inFlight = this.inFlight.then(() => this.scrapeAll());
    await this.inFlight;
    if (this.failure) throw this.failure;
  }

  private async scrapeAll(): Promise<void> {
    for (const target of this.targets) {
      const time = Date.now();
      const res = await fetch(target.url, { signal: AbortSignal.timeout(10_000) });
      const body = await res.text();
      if (res.status !== 200) throw new Error(`scrape of ${target.url} answered ${res.status}: ${body.slice(0, 500)}`);
      this.scrapes.push({ target, time, body, samples: parseExposition(body) });
    }
  }

  /** Unix milliseconds of the first and last scrape. */
  get span(): { first: number; last: number } {
    if (this.scrapes.length === 0) throw new Error('nothing was scraped');
    return { first: this.scrapes[0]!.time, last: this.scrapes[this.scrapes.length - 1]!.time };
  }

  /** Every exposition body as received, for the metric-name check. */
  get bodies(): string[] {
    return this.scrapes.map((s) => s.body);
  }

  /** How many scrapes were taken per target. */
  get count(): number {
    return this.scrapes.length / this.targets.length;
  }

  /**
   * The recording as OpenMetrics: one series' samples together, in time order (the order both
   * OpenMetrics and a TSDB block need), then `# EOF`.
   */
  openMetrics(): string {
    const series = new Map<string, string[]>();
    for (const s of this.scrapes) {
      for (const sample of s.samples) {
        // honor_labels: true: the exporter's labels are kept; job and instance are added.
        const labels: Record<string, string> = { job: s.target.job, instance: s.target.instance, ...sample.labels };
        const text = Object.keys(labels)
          .sort()
          .map((k) => `${k}="${escapeLabel(labels[k]!)}"`)
          .join(',');
        const key = `${sample.name}{${text}}`;
        const lines = series.get(key) ?? [];
        lines.push(`${key} ${String(sample.value)} ${(s.time / 1000).toFixed(3)}`);
        series.set(key, lines);
      }
    }
    return `${[...series.keys()]
      .sort()
      .flatMap((k) => series.get(k)!)
      .join('\n')}\n# EOF\n`;
  }
}
