// deploy/grafana/eso-mtls.json read as data: its panels, their queries, its template variables, and
// the queries with Grafana's variables replaced the way Grafana's Prometheus data source does.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { repoRoot } from '@eso-mtls/test-kit/repo';

/** Where the dashboard lives; the chart's files/eso-mtls.json links to it. */
export const DASHBOARD_PATH = resolve(repoRoot, 'deploy/grafana/eso-mtls.json');

/** A data source reference: `{ type: 'prometheus', uid: '${datasource}' }` for ours. */
export interface DatasourceRef {
  readonly type?: string;
  readonly uid?: string;
}

/** One query of a panel. */
export interface Target {
  readonly refId: string;
  readonly expr: string;
  readonly datasource?: DatasourceRef;
  readonly instant?: boolean;
  readonly range?: boolean;
  readonly legendFormat?: string;
}

/** The fields of a panel the tests read. */
export interface Panel {
  readonly id: number;
  readonly type: string;
  readonly title: string;
  readonly description?: string;
  readonly datasource?: DatasourceRef;
  readonly gridPos?: { readonly h: number; readonly w: number; readonly x: number; readonly y: number };
  readonly targets?: readonly Target[];
  readonly fieldConfig?: { readonly defaults?: { readonly thresholds?: { readonly steps: readonly { readonly value: number | null }[] } } };
}

/** A template variable. */
export interface Variable {
  readonly name: string;
  readonly type: string;
  readonly query?: string | { readonly query: string };
  readonly definition?: string;
  readonly datasource?: DatasourceRef;
  readonly includeAll?: boolean;
  readonly allValue?: string;
  readonly multi?: boolean;
}

/** The dashboard as stored. */
export interface Dashboard {
  readonly uid: string;
  readonly title: string;
  readonly schemaVersion: number;
  readonly panels: readonly Panel[];
  readonly templating: { readonly list: readonly Variable[] };
}

export function readDashboard(path = DASHBOARD_PATH): Dashboard {
  return JSON.parse(readFileSync(path, 'utf8')) as Dashboard;
}

/** Every query of every panel, with its panel. */
export function panelQueries(dashboard: Dashboard): { panel: Panel; target: Target }[] {
  return dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => ({ panel, target })));
}

/** The text of a query variable's query (`label_values(...)`). */
export function variableQuery(v: Variable): string {
  return typeof v.query === 'string' ? v.query : (v.query?.query ?? v.definition ?? '');
}

/** What the test puts in place of Grafana's variables. */
export interface Substitution {
  /** Regex of the selected namespaces: `.*` for All, or one name. */
  readonly namespace: string;
  readonly service: string;
  /** `$__rate_interval`, e.g. `1m`. */
  readonly rateInterval: string;
  /** `$__range`, the dashboard's time range as a duration, e.g. `60s`. */
  readonly range: string;
}

/**
 * `expr` as Grafana sends it: `$namespace`, `${namespace}` and the built-in `$__…` variables
 * replaced. Throws naming any variable left, so a new variable cannot slip past the test.
 */
export function substitute(expr: string, s: Substitution): string {
  const values: Record<string, string> = {
    namespace: s.namespace,
    service: s.service,
    __rate_interval: s.rateInterval,
    __interval: s.rateInterval,
    __range: s.range,
  };
  const out = expr.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (whole, name: string) => {
    const v = values[name];
    if (v === undefined) throw new Error(`query ${JSON.stringify(expr)} uses variable ${whole}, which the test does not know: add it to substitute()`);
    return v;
  });
  return out;
}

/** `label_values(selector, label)`, the form of our variables' queries. */
export function parseLabelValues(query: string): { selector: string; label: string } {
  const m = /^label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\)$/s.exec(query.trim());
  if (!m) throw new Error(`variable query ${JSON.stringify(query)} is not label_values(<selector>, <label>)`);
  return { selector: m[1]!.trim(), label: m[2]! };
}
