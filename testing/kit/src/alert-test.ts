// A promtool unit test of the shipped alert rules, written to a temporary folder and run.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { type PromtoolResult, promtool } from './promtool.js';
import { repoRoot } from './repo.js';

/** The shipped alert rules, from the repository root. */
export const ALERTS_PATH = 'deploy/prometheus/alerts.yaml';

/**
 * Runs a promtool unit test of the shipped alert rules over `inputSeries` (one sample a minute):
 * `expr` must give exactly `expected` at minute `evalMinute`. Returns promtool's result.
 */
export function promtoolAlertTest(
  inputSeries: readonly { readonly series: string; readonly values: string }[],
  expr: string,
  evalMinute: number,
  expected: readonly { readonly labels: string; readonly value: number }[],
): PromtoolResult {
  const dir = mkdtempSync(join(tmpdir(), 'eso-alerts-'));
  try {
    const test = {
      rule_files: [join(repoRoot, ALERTS_PATH)],
      evaluation_interval: '1m',
      tests: [{ interval: '1m', input_series: inputSeries, promql_expr_test: [{ expr, eval_time: `${evalMinute}m`, exp_samples: expected }] }],
    };
    writeFileSync(join(dir, 'test.yaml'), stringify(test));
    return promtool(['test', 'rules', join(dir, 'test.yaml')]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
