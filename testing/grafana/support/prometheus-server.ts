// Debian's Prometheus server on loopback, over a TSDB backfilled with `promtool tsdb
// create-blocks-from openmetrics`, with our alert rules loaded, queried through its HTTP API.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '@eso-mtls/test-kit/ports';
import { repoRoot } from '@eso-mtls/test-kit/repo';
import { promtool } from '@eso-mtls/test-kit/promtool';

/** One series of a query's answer. */
export interface QuerySeries {
  readonly metric: Record<string, string>;
  /** [unix seconds, value] pairs: one for an instant query, many for a range query. */
  readonly values: readonly (readonly [number, string])[];
}

/** A query Prometheus refused; `error` is Prometheus's own message (e.g. a parse error). */
export class PrometheusQueryError extends Error {
  override readonly name = 'PrometheusQueryError';
}

function prometheusPath(): string {
  try {
    return execFileSync('bash', [resolve(repoRoot, 'scripts/ensure-prometheus.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
      .trim()
      .split('\n')
      .pop()!;
  } catch (e) {
    throw new Error(
      `the dashboard tests need a Prometheus server and scripts/ensure-prometheus.sh could not provide one: ${String((e as { stderr?: string }).stderr ?? e)}`,
      {
        cause: e,
      },
    );
  }
}

/**
 * Backfill pitfalls, solved here: the blocks are written before Prometheus starts, so they never
 * overlap a head Prometheus is still writing (promtool's docs warn against backfilling the last
 * 3 hours into a running server); the head then accepts only samples newer than the blocks, which
 * the rule manager's ALERTS series (stamped with the evaluation time, after the recording) are.
 * OpenMetrics carries timestamps in seconds and ends with `# EOF`; the text is written without
 * HELP/TYPE lines, since the blocks keep samples only and OpenMetrics would name a counter family
 * without its `_total`.
 */
export class PrometheusServer {
  private child: ChildProcess | undefined;
  private log = '';
  readonly url: string;

  private constructor(
    private readonly home: string,
    readonly port: number,
  ) {
    this.url = `http://127.0.0.1:${port}`;
  }

  /** Backfills `openMetrics` into a fresh TSDB, then starts Prometheus on it with `ruleFiles`. */
  static async start(openMetrics: string, ruleFiles: readonly string[], readyTimeoutMs = 60_000): Promise<PrometheusServer> {
    const home = mkdtempSync(join(tmpdir(), 'eso-mtls-prometheus-'));
    const server = new PrometheusServer(home, await freePort());
    try {
      const input = join(home, 'recorded.om.txt');
      writeFileSync(input, openMetrics);
      const data = join(home, 'data');
      const r = promtool(['tsdb', 'create-blocks-from', 'openmetrics', input, data]);
      if (r.status !== 0) throw new Error(`promtool tsdb create-blocks-from openmetrics failed: ${r.stdout}${r.stderr}`);
      const config = join(home, 'prometheus.yml');
      // Rules every second, so ALERTS appears soon after start; no scrape job: the data is the backfill.
      writeFileSync(config, `global:\n  evaluation_interval: 1s\nrule_files:\n${ruleFiles.map((f) => `  - ${JSON.stringify(f)}\n`).join('')}`);
      server.child = spawn(
        prometheusPath(),
        [`--config.file=${config}`, `--storage.tsdb.path=${data}`, `--web.listen-address=127.0.0.1:${server.port}`, '--log.level=warn'],
        { cwd: home, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      server.child.stderr!.setEncoding('utf8').on('data', (d: string) => {
        server.log = (server.log + d).slice(-20_000);
      });
      await server.waitReady(readyTimeoutMs);
      return server;
    } catch (e) {
      await server.stop();
      throw e;
    }
  }

  /** Prometheus's stderr (warnings and errors), for failure messages. */
  get stderr(): string {
    return this.log;
  }

  // A deadline, not a speed bound: a loaded machine may take long to replay the TSDB.
  private async waitReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.child?.exitCode !== null || this.child.signalCode !== null) {
        throw new Error(`prometheus exited before it was ready: ${this.log}`);
      }
      try {
        const res = await fetch(`${this.url}/-/ready`, { signal: AbortSignal.timeout(5_000) });
        if (res.ok) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`prometheus at ${this.url} was not ready within ${timeoutMs} ms: ${this.log}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  private async api(path: string, params: Record<string, string | string[]>): Promise<unknown> {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) for (const one of Array.isArray(v) ? v : [v]) body.append(k, one);
    const res = await fetch(`${this.url}/api/v1/${path}`, { method: 'POST', body, signal: AbortSignal.timeout(30_000) });
    const answer = (await res.json()) as { status: string; data?: unknown; errorType?: string; error?: string };
    if (answer.status !== 'success') throw new PrometheusQueryError(`${answer.errorType}: ${answer.error} (${JSON.stringify(params)})`);
    return answer.data;
  }

  /** An instant query at `time` (unix seconds). */
  async query(expr: string, time: number): Promise<QuerySeries[]> {
    const data = (await this.api('query', { query: expr, time: String(time) })) as {
      resultType: string;
      result: { metric: Record<string, string>; value: [number, string] }[];
    };
    if (data.resultType !== 'vector') throw new PrometheusQueryError(`${expr} answered a ${data.resultType}, not an instant vector`);
    return data.result.map((r) => ({ metric: r.metric, values: [r.value] }));
  }

  /** A range query from `start` to `end` (unix seconds) every `step` seconds. */
  async queryRange(expr: string, start: number, end: number, step: number): Promise<QuerySeries[]> {
    const data = (await this.api('query_range', { query: expr, start: String(start), end: String(end), step: String(step) })) as {
      result: { metric: Record<string, string>; values: [number, string][] }[];
    };
    return data.result.map((r) => ({ metric: r.metric, values: r.values }));
  }

  /** The label sets of the series matching `selector` between `start` and `end`. */
  async series(selector: string, start: number, end: number): Promise<Record<string, string>[]> {
    return (await this.api('series', { 'match[]': selector, start: String(start), end: String(end) })) as Record<string, string>[];
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(this.home, { recursive: true, force: true });
  }
}
