// deploy/grafana/eso-mtls.json held to the system: every panel's query is run by a real Prometheus
// over scrapes recorded from the real controller and a real provider (backfilled with promtool),
// with the real alert rules loaded; every query must parse and return series, every metric it names
// must be one an exporter emits, and the JSON must be a dashboard Grafana can load.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { repoRoot } from '@eso-mtls/test-kit/repo';
import { type Panel, type Substitution, panelQueries, parseLabelValues, readDashboard, substitute, variableQuery } from './support/dashboard-model.js';
import { PROMETHEUS_OWN_SERIES, PromqlTokenError, metricNamesIn, readableNames } from './support/promql-names.js';
import { PrometheusQueryError, PrometheusServer, type QuerySeries } from './support/prometheus-server.js';
import { CONFLICTED, PROVIDER, type Recording, recordSystem } from './support/recorded-system.js';

const dashboard = readDashboard();
const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };
/** Panel types of Grafana 11 and 12's core. */
const CORE_PANEL_TYPES = ['timeseries', 'table', 'stat', 'bargauge', 'gauge', 'state-timeline', 'text', 'row'];

/** The selections the queries run with: All (Grafana's allValue), and the recorded provider. */
const SELECTIONS: readonly (Substitution & { readonly name: string })[] = [
  { name: 'All', namespace: '.*', service: '.*', rateInterval: '1m', range: '5m' },
  { name: `${PROVIDER.namespace}/${PROVIDER.service}`, namespace: PROVIDER.namespace, service: PROVIDER.service, rateInterval: '1m', range: '5m' },
];

/**
 * What each panel must show over the recording, beyond returning series: the event the recording
 * made happen, as a series label set and a value above 0 somewhere in the range (or, for the
 * alerts, now). Keyed by panel title; a panel missing here fails the test.
 */
const SHOWS: Record<string, { readonly refId: string; readonly labels: Record<string, string>; readonly why: string }[]> = {
  'Certificate expiry: provider servers and the ESO client': [
    { refId: 'A', labels: PROVIDER, why: "the provider's server certificate" },
    { refId: 'B', labels: {}, why: "ESO's client certificate" },
  ],
  'CA expiry by state': [{ refId: 'A', labels: { state: 'active' }, why: 'the active CA' }],
  'Rotations by reason': [{ refId: 'A', labels: { reason: 'forced' }, why: 'the second forced rotation' }],
  'Rotation and CA failures': [{ refId: 'A', labels: CONFLICTED, why: "the conflict on team-b's Secret" }],
  'Hot reloads and refused reloads per provider': [
    { refId: 'A', labels: PROVIDER, why: 'the reloads after each forced rotation' },
    { refId: 'B', labels: PROVIDER, why: 'the mismatched key the provider refused' },
  ],
  'Served versus issued: lag per provider': [{ refId: 'A', labels: PROVIDER, why: 'the seconds before the provider reloaded a rotated certificate' }],
  'Pod certificates: share of life left': [{ refId: 'A', labels: PROVIDER, why: 'the pod-certificate replica serving its certificate' }],
  Alerts: [
    { refId: 'A', labels: { alertname: 'EsoProviderCertificateHotReloadFailed', alertstate: 'firing', ...PROVIDER }, why: 'the refused reload' },
    { refId: 'A', labels: { alertname: 'EsoProviderCertificateRotationFailed', alertstate: 'firing', ...CONFLICTED }, why: 'the conflict' },
  ],
};

const matches = (metric: Record<string, string>, labels: Record<string, string>) => Object.entries(labels).every(([k, v]) => metric[k] === v);
const positive = (s: QuerySeries) => s.values.some(([, v]) => Number(v) > 0);

describe('the Grafana dashboard model', () => {
  const panels = dashboard.panels;
  const variables = dashboard.templating.list;

  it('is a dashboard Grafana 11 and 12 load: unique ids, a grid position each, core panel types, a current schema', () => {
    expect(dashboard.uid).toBe('eso-mtls');
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(39); // Grafana 11.0's
    const ids = panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of panels) {
      expect({ panel: p.title, id: Number.isInteger(p.id) && p.id > 0 }).toEqual({ panel: p.title, id: true });
      const g = p.gridPos;
      expect({
        panel: p.title,
        gridPos: g && [g.h, g.w, g.x, g.y].every((n) => Number.isInteger(n) && n >= 0) && g.x + g.w <= 24 && g.h > 0 && g.w > 0,
      }).toEqual({
        panel: p.title,
        gridPos: true,
      });
      expect(CORE_PANEL_TYPES).toContain(p.type);
    }
    // No two panels overlap on the 24-column grid.
    const cells = new Set<string>();
    for (const { gridPos: g, title } of panels) {
      for (let x = g!.x; x < g!.x + g!.w; x++) {
        for (let y = g!.y; y < g!.y + g!.h; y++) {
          expect({ title, cell: `${x},${y}`, taken: cells.has(`${x},${y}`) }).toEqual({ title, cell: `${x},${y}`, taken: false });
          cells.add(`${x},${y}`);
        }
      }
    }
  });

  it("queries through the ${datasource} variable in every panel and every query, and says each panel's question", () => {
    for (const p of panels) {
      expect({ panel: p.title, datasource: p.datasource }).toEqual({ panel: p.title, datasource: DATASOURCE });
      expect({ panel: p.title, targets: (p.targets ?? []).length > 0 }).toEqual({ panel: p.title, targets: true });
      for (const t of p.targets ?? [])
        expect({ panel: p.title, refId: t.refId, datasource: t.datasource }).toEqual({ panel: p.title, refId: t.refId, datasource: DATASOURCE });
      expect({ panel: p.title, question: /\?/.test(p.description ?? '') }).toEqual({ panel: p.title, question: true });
    }
    const ds = variables.find((v) => v.name === 'datasource');
    expect(ds).toMatchObject({ type: 'datasource', query: 'prometheus' });
  });

  it('has namespace and service variables from label_values of our metrics, each used by the panels', () => {
    const ns = variables.find((v) => v.name === 'namespace');
    const svc = variables.find((v) => v.name === 'service');
    for (const v of [ns, svc]) {
      expect(v).toMatchObject({ type: 'query', datasource: DATASOURCE, includeAll: true, allValue: '.*', multi: true });
      const { selector } = parseLabelValues(variableQuery(v!));
      expect(metricNamesIn(selector.replace(/\$namespace/g, '.*'))).toEqual(['eso_provider_certificate_expiry_seconds']);
    }
    expect(parseLabelValues(variableQuery(ns!)).label).toBe('namespace');
    expect(parseLabelValues(variableQuery(svc!))).toEqual({ selector: 'eso_provider_certificate_expiry_seconds{namespace=~"$namespace"}', label: 'service' });
    const exprs = panelQueries(dashboard).map(({ target }) => target.expr);
    for (const name of ['namespace', 'service']) {
      const users = exprs.filter((e) => new RegExp(`\\$\\{?${name}\\b`).test(e));
      expect({ variable: name, panelQueriesUsingIt: users.length >= 5 }).toEqual({ variable: name, panelQueriesUsingIt: true });
    }
  });

  it('draws the 3-day and 35-day lines on the certificate expiry panel, and the alerts thresholds on the CA, lag and pod-certificate panels', () => {
    const steps = (title: string) => (panels.find((p) => p.title === title) as Panel).fieldConfig!.defaults!.thresholds!.steps.map((s) => s.value);
    expect(steps('Certificate expiry: provider servers and the ESO client')).toEqual([null, 3 * 86_400, 35 * 86_400]);
    expect(steps('CA expiry by state')).toEqual([null, 30 * 86_400, 60 * 86_400]);
    expect(steps('Served versus issued: lag per provider')).toEqual([null, 300]);
    expect(steps('Pod certificates: share of life left')).toEqual([null, 1 / 4, 1 / 3]);
  });

  it('names in SHOWS exactly the panels it has, and docs/metrics.md names each with its question', () => {
    expect(panels.map((p) => p.title).sort()).toEqual(Object.keys(SHOWS).sort());
    const docs = readFileSync(resolve(repoRoot, 'docs/metrics.md'), 'utf8');
    for (const p of panels) {
      const question = /[^.?]*\?/.exec(p.description ?? '')![0].trim();
      expect({ panel: p.title, documented: docs.includes(`| ${p.title} | ${question} |`) }).toEqual({ panel: p.title, documented: true });
    }
  });
});

describe('the PromQL metric-name reader', () => {
  it('finds metric names and skips functions, aggregations, keywords, labels, strings and durations', () => {
    expect(
      metricNamesIn(
        'max by (namespace, service) (a_seconds{namespace=~"x|y", service="by"} + timestamp(a_seconds)) - on (namespace) group_right (pod) b_total offset 5m > bool 3e5',
      ),
    ).toEqual(['a_seconds', 'b_total']);
    expect(metricNamesIn('sum without (instance) (rate({__name__="c_total", job="j"}[5m])) or vector(0) and d unless on() absent(e)')).toEqual([
      'c_total',
      'd',
      'e',
    ]);
    expect(metricNamesIn('topk(3, f) / ignoring(x) g[1m:10s]')).toEqual(['f', 'g']);
    expect(() => metricNamesIn('sum(x{a="1"')).toThrow(PromqlTokenError);
    expect(() => metricNamesIn('x{namespace=~"$namespace"}')).toThrow('substitute the Grafana variables first');
  });

  it('reads counters with _total and histograms with _bucket, _sum and _count from an exposition', () => {
    const names = readableNames(
      ['# TYPE a_total counter', 'a_total 1', '# TYPE h histogram', 'h_bucket{le="1"} 1', 'h_sum 1', 'h_count 1', '# TYPE g gauge', 'g{x="1"} 2'].join('\n'),
    );
    expect([...names].sort()).toEqual(['a_total', 'g', 'h_bucket', 'h_count', 'h_sum']);
  });
});

describe('the dashboard over a real Prometheus, backfilled with scrapes of the real controller and provider', () => {
  let recording: Recording;
  let prometheus: PrometheusServer;
  /** Unix seconds at which the alert rules had evaluated over the backfill. */
  let alertsAt: number;

  beforeAll(async () => {
    recording = await recordSystem();
    prometheus = await PrometheusServer.start(recording.openMetrics, [resolve(repoRoot, 'deploy/prometheus/alerts.yaml')]);
    // The rules run every second from start-up over the backfilled (recent) data; wait for the
    // firing alerts the recording caused. A deadline, not a speed bound.
    const deadline = Date.now() + 60_000;
    for (;;) {
      alertsAt = Date.now() / 1000;
      const firing = await prometheus.query('ALERTS{alertstate="firing"}', alertsAt);
      if (firing.length >= 2) break;
      if (Date.now() > deadline) throw new Error(`no firing alerts within 60 s: ${JSON.stringify(firing)}; prometheus: ${prometheus.stderr}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }, 240_000);
  afterAll(async () => {
    await prometheus?.stop();
  });

  it('recorded several scrapes of every exporter over some seconds', () => {
    expect(recording.scrapes).toBeGreaterThanOrEqual(10);
    expect(recording.end - recording.start).toBeGreaterThanOrEqual(10);
  });

  it('reads only metric names the exporters emit (or that Prometheus writes itself, named with a reason)', () => {
    const emitted = new Set(recording.bodies.flatMap((b) => [...readableNames(b)]));
    const read = new Set<string>();
    for (const { panel, target } of panelQueries(dashboard)) {
      for (const name of metricNamesIn(substitute(target.expr, SELECTIONS[0]!))) {
        read.add(name);
        const known = emitted.has(name) || name in PROMETHEUS_OWN_SERIES;
        expect({ panel: panel.title, refId: target.refId, metric: name, emitted: known }).toEqual({
          panel: panel.title,
          refId: target.refId,
          metric: name,
          emitted: true,
        });
      }
    }
    for (const v of dashboard.templating.list.filter((v) => v.type === 'query')) {
      for (const name of metricNamesIn(substitute(parseLabelValues(variableQuery(v)).selector, SELECTIONS[0]!))) {
        expect({ variable: v.name, metric: name, emitted: emitted.has(name) }).toEqual({ variable: v.name, metric: name, emitted: true });
      }
    }
    // The check can fail: a name no exporter emits is caught.
    expect(emitted.has('eso_provider_certificate_expiry_days')).toBe(false);
    expect(read.size).toBeGreaterThanOrEqual(8);
  });

  it("gives the namespace and service variables their values from Prometheus's series", async () => {
    for (const v of dashboard.templating.list.filter((v) => v.type === 'query')) {
      const { selector, label } = parseLabelValues(variableQuery(v));
      const series = await prometheus.series(substitute(selector, SELECTIONS[0]!), recording.start, recording.end);
      const values = [...new Set(series.map((s) => s[label]))].sort();
      expect({ variable: v.name, values }).toEqual({
        variable: v.name,
        values: v.name === 'namespace' ? [PROVIDER.namespace, CONFLICTED.namespace].sort() : [CONFLICTED.service, PROVIDER.service].sort(),
      });
    }
  });

  for (const selection of SELECTIONS) {
    it(`runs every panel's query for ${selection.name}: each parses and returns series, and shows what the recording did`, async () => {
      for (const { panel, target } of panelQueries(dashboard)) {
        const expr = substitute(target.expr, selection);
        let result: QuerySeries[];
        try {
          result = target.instant ? await prometheus.query(expr, alertsAt) : await prometheus.queryRange(expr, recording.start, recording.end, 1);
        } catch (e) {
          if (e instanceof PrometheusQueryError)
            throw new Error(`panel "${panel.title}" query ${target.refId} was refused by Prometheus: ${e.message}`, { cause: e });
          throw e;
        }
        expect({ panel: panel.title, refId: target.refId, series: result.length > 0 }).toEqual({ panel: panel.title, refId: target.refId, series: true });
        for (const show of SHOWS[panel.title]!.filter((s) => s.refId === target.refId)) {
          // The conflicted namespace is outside the single-provider selection.
          if (selection.namespace !== '.*' && show.labels.namespace !== undefined && show.labels.namespace !== selection.namespace) continue;
          const found = result.some((s) => matches(s.metric, show.labels) && positive(s));
          expect({ panel: panel.title, shows: show.why, found }).toEqual({ panel: panel.title, shows: show.why, found: true });
        }
      }
    });
  }

  it('refuses, through the same path, a query Prometheus cannot parse (the check can fail)', async () => {
    await expect(prometheus.query('sum by (namespace (eso_provider_certificate_expiry_seconds)', alertsAt)).rejects.toThrow(PrometheusQueryError);
  });
});
