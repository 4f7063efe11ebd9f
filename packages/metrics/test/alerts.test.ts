import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from '@jest/globals';
import { promtool, promtoolVersion } from '@eso-mtls/test-kit/promtool';
import { repoRoot } from '@eso-mtls/test-kit/repo';
import { ALERTS_PATH } from '@eso-mtls/test-kit/alert-test';
import { ALERTS_TEST_PATH, alertGroups, alertRules, metricsReadBy, readYaml } from './support/rules.js';

const RUNBOOK = 'https://github.com/eso-mtls/eso-mtls/blob/main/docs/operations.md#';
// Metrics whose series carry namespace and service; an alert on them must name both.
const PER_SERVICE = /^eso_provider_/;

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
function githubAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

describe('deploy/prometheus/alerts.yaml under promtool', () => {
  it('is accepted by promtool check rules, every rule counted', () => {
    expect(promtoolVersion()).toMatch(/^promtool, version \d+\.\d+/);
    const r = promtool(['check', 'rules', ALERTS_PATH]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`SUCCESS: ${alertRules().length} rules found`);
  });

  it('fails promtool check rules when an expression is broken (the check is real)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'eso-alerts-'));
    try {
      const broken = readFileSync(join(repoRoot, ALERTS_PATH), 'utf8').replace(
        'eso_client_certificate_expiry_seconds < 3 * 86400',
        'eso_client_certificate_expiry_seconds < < 3',
      );
      writeFileSync(join(dir, 'alerts.yaml'), broken);
      const r = promtool(['check', 'rules', join(dir, 'alerts.yaml')]);
      expect(r.status).not.toBe(0);
      expect(r.stdout + r.stderr).toMatch(/FAILED|error/i);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('passes its promtool unit tests', () => {
    const r = promtool(['test', 'rules', ALERTS_TEST_PATH]);
    const output = r.stdout + r.stderr;
    expect(output).not.toContain('FAILED');
    expect(r.status).toBe(0);
    expect(output).toMatch(/Unit Testing:\s+deploy\/prometheus\/alerts\.test\.yaml\s+SUCCESS/);
  });

  it('has unit tests that fire, and tests that do not fire, every alert', () => {
    type Case = { alertname: string; exp_alerts?: unknown[] };
    const tests = readYaml<{ tests: { alert_rule_test?: Case[] }[] }>(ALERTS_TEST_PATH).tests;
    const cases = tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const { alert } of alertRules()) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect([alert, mine.some((c) => (c.exp_alerts ?? []).length > 0)]).toEqual([alert, true]);
      expect([alert, mine.some((c) => (c.exp_alerts ?? []).length === 0)]).toEqual([alert, true]);
    }
    const names = new Set(alertRules().map((r) => r.alert));
    for (const c of cases) expect(names).toContain(c.alertname); // no test of a renamed alert
  });
});

describe('every alert', () => {
  const operations = readFileSync(join(repoRoot, 'docs/operations.md'), 'utf8');
  const anchors = new Set([...operations.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => githubAnchor(m[1]!)));

  it('has a severity, a summary and a description naming namespace and service where its metrics have them', () => {
    expect(alertRules().length).toBe(19);
    for (const rule of alertRules()) {
      expect([rule.alert, rule.labels.severity]).toEqual([rule.alert, expect.stringMatching(/^(warning|critical)$/)]);
      expect(rule.annotations.summary?.length).toBeGreaterThan(10);
      expect(rule.annotations.description?.length).toBeGreaterThan(20);
      const perService = metricsReadBy(rule.expr).some((m) => PER_SERVICE.test(m));
      if (perService) {
        expect([rule.alert, rule.annotations.description]).toEqual([rule.alert, expect.stringContaining('{{ $labels.namespace }}')]);
        expect([rule.alert, rule.annotations.description]).toEqual([rule.alert, expect.stringContaining('{{ $labels.service }}')]);
      }
    }
  });

  it('has a runbook_url pointing to a section of docs/operations.md that exists', () => {
    for (const rule of alertRules()) {
      const url = rule.annotations.runbook_url ?? '';
      expect([rule.alert, url.startsWith(RUNBOOK)]).toEqual([rule.alert, true]);
      const anchor = url.slice(RUNBOOK.length);
      expect([rule.alert, anchors.has(anchor)]).toEqual([rule.alert, true]);
    }
    expect(anchors.has(githubAnchor('After a suspected CA key compromise'))).toBe(true);
    expect(anchors.has(githubAnchor('Forcing a rotation'))).toBe(true);
  });

  it('is documented with how to force a rotation and the emergency cut-over', () => {
    expect(operations).toMatch(/kubectl annotate service -n \S+ \S+ eso-mtls\.io\/rotate=/);
    expect(operations).toMatch(/kubectl annotate secret -n external-secrets-system eso-provider-ca-internal eso-mtls\.io\/rotate=emergency/);
  });
});

describe('the opt-in PrometheusRule', () => {
  it('holds exactly the groups of alerts.yaml', () => {
    const rule = readYaml<{ apiVersion: string; kind: string; spec: { groups: unknown } }>('deploy/prometheus/prometheusrule.yaml');
    expect(rule.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(rule.kind).toBe('PrometheusRule');
    expect(rule.spec.groups).toEqual(alertGroups());
  });

  it('is what the generator writes (regenerate with node deploy/prometheus/generate-prometheusrule.mjs)', () => {
    expect(() => execFileSync('node', ['deploy/prometheus/generate-prometheusrule.mjs', '--check'], { cwd: repoRoot, stdio: 'pipe' })).not.toThrow();
  });
});
