// The metric names a PromQL expression reads: a small tokenizer that skips what is not a metric
// name (strings, label matchers, durations, numbers, function and aggregation names, keywords and
// the label lists of by/without/on/ignoring/group_left/group_right).

const AGGREGATIONS = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
]);
/** Keywords followed by a parenthesised list of label names. */
const LABEL_LIST_KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const KEYWORDS = new Set(['bool', 'and', 'or', 'unless', 'offset', 'atan2', 'inf', 'nan', 'start', 'end']);

const IDENTIFIER = /[a-zA-Z_:][a-zA-Z0-9_:]*/y;
const NAME_MATCHER = /__name__\s*=\s*"((?:[^"\\]|\\.)*)"/g;

/** An expression this tokenizer cannot read; the message names the expression and the place. */
export class PromqlTokenError extends Error {
  override readonly name = 'PromqlTokenError';
}

/** The index just past the bracket that closes the one at `open`, skipping strings inside. */
function closing(expr: string, open: number, pair: '()' | '{}' | '[]'): number {
  let depth = 0;
  for (let i = open; i < expr.length; i++) {
    const c = expr[i]!;
    if (c === '"' || c === "'" || c === '`') i = stringEnd(expr, i) - 1;
    else if (c === pair[0]) depth++;
    else if (c === pair[1] && --depth === 0) return i + 1;
  }
  throw new PromqlTokenError(`unclosed ${pair[0]} at ${open} in ${JSON.stringify(expr)}`);
}

function stringEnd(expr: string, open: number): number {
  const quote = expr[open]!;
  for (let i = open + 1; i < expr.length; i++) {
    if (expr[i] === '\\' && quote !== '`') i++;
    else if (expr[i] === quote) return i + 1;
  }
  throw new PromqlTokenError(`unclosed string at ${open} in ${JSON.stringify(expr)}`);
}

function nextNonSpace(expr: string, from: number): number {
  let i = from;
  while (i < expr.length && /\s/.test(expr[i]!)) i++;
  return i;
}

/** Metric names `expr` reads, sorted and unique. Grafana variables must be substituted first. */
export function metricNamesIn(expr: string): string[] {
  if (expr.includes('$')) throw new PromqlTokenError(`substitute the Grafana variables first: ${JSON.stringify(expr)}`);
  const names = new Set<string>();
  let i = 0;
  while (i < expr.length) {
    const c = expr[i]!;
    if (c === '"' || c === "'" || c === '`') {
      i = stringEnd(expr, i);
    } else if (c === '{') {
      const end = closing(expr, i, '{}');
      // {__name__="x"} names a metric without writing it in front of the braces.
      for (const m of expr.slice(i, end).matchAll(NAME_MATCHER)) names.add(m[1]!);
      i = end;
    } else if (c === '[') {
      i = closing(expr, i, '[]'); // a range or subquery: durations only
    } else if (/[0-9.]/.test(c)) {
      while (i < expr.length && /[0-9a-zA-Z.+]/.test(expr[i]!)) i++; // 3e5, 0x1f, 1.5, 5m (offset)
    } else if (/[a-zA-Z_:]/.test(c)) {
      IDENTIFIER.lastIndex = i;
      const word = IDENTIFIER.exec(expr)![0];
      i += word.length;
      const after = nextNonSpace(expr, i);
      const lower = word.toLowerCase();
      if (LABEL_LIST_KEYWORDS.has(lower)) {
        if (expr[after] === '(') i = closing(expr, after, '()');
      } else if (AGGREGATIONS.has(lower) || KEYWORDS.has(lower) || expr[after] === '(') {
        // an aggregation, a keyword or a function call: not a metric
      } else {
        names.add(word);
      }
    } else {
      i++;
    }
  }
  return [...names].sort();
}

/** Series Prometheus writes itself (the rule manager's alert state), which no exporter emits. */
export const PROMETHEUS_OWN_SERIES: Readonly<Record<string, string>> = Object.freeze({
  ALERTS: "the rule manager's alert state, from the rules of deploy/prometheus/alerts.yaml",
});

/**
 * The names a PromQL query may read for what an exposition holds: every sample name, and for each
 * family its type's series (`_total` for a counter; `_bucket`, `_sum`, `_count` for a histogram;
 * `_sum`, `_count` for a summary).
 */
export function readableNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const line of exposition.split('\n')) {
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)/.exec(line);
    if (type) {
      const [, family, kind] = type as unknown as [string, string, string];
      const suffixes: Record<string, string[]> = { counter: ['_total'], histogram: ['_bucket', '_sum', '_count'], summary: ['', '_sum', '_count'] };
      for (const s of suffixes[kind] ?? ['']) names.add(family.replace(/_total$/, '') + s);
      continue;
    }
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)[{\s]/.exec(line);
    if (sample && !line.startsWith('#')) names.add(sample[1]!);
  }
  return names;
}
