// The alert rule file, read as data.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ALERTS_PATH } from '@eso-mtls/test-kit/alert-test';
import { repoRoot } from '@eso-mtls/test-kit/repo';

export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface RuleGroup {
  name: string;
  rules: AlertRule[];
}

export const ALERTS_TEST_PATH = 'deploy/prometheus/alerts.test.yaml';

export function readYaml<T>(relativePath: string): T {
  return parse(readFileSync(join(repoRoot, relativePath), 'utf8')) as T;
}

export function alertGroups(): RuleGroup[] {
  return readYaml<{ groups: RuleGroup[] }>(ALERTS_PATH).groups;
}

export function alertRules(): AlertRule[] {
  return alertGroups().flatMap((g) => g.rules);
}

/** Metric names an expression reads (our metrics all start with `eso_`). */
export function metricsReadBy(expr: string): string[] {
  return [...new Set(expr.match(/\beso_[a-z0-9_]+/g) ?? [])].sort();
}
