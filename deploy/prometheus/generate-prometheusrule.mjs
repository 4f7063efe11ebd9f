// Writes prometheusrule.yaml: the groups of alerts.yaml wrapped in a Prometheus operator
// PrometheusRule. Run after editing alerts.yaml: `node deploy/prometheus/generate-prometheusrule.mjs`.
// `--check` exits 1 instead of writing when the file is out of date (a test runs the same comparison).
import { readFileSync, writeFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';

const here = new URL('./', import.meta.url);
const groups = parse(readFileSync(new URL('alerts.yaml', here), 'utf8')).groups;

const rule = {
  apiVersion: 'monitoring.coreos.com/v1',
  kind: 'PrometheusRule',
  // The chart's name for it (its fullname, as deploy/base names every object), so that moving between
  // the kustomize install and the chart hands this rule over instead of leaving a duplicate.
  metadata: {
    name: 'eso-mtls-controller',
    namespace: 'external-secrets-system',
    labels: { 'app.kubernetes.io/name': 'eso-mtls-controller', 'app.kubernetes.io/part-of': 'eso-mtls', 'app.kubernetes.io/component': 'alerts' },
  },
  spec: { groups },
};

const text = [
  '# GENERATED from alerts.yaml by generate-prometheusrule.mjs; do not edit by hand.',
  "# Opt-in: needs the Prometheus operator's CRD. Add labels matching your Prometheus's ruleSelector",
  '# (kube-prometheus-stack selects `release: <its release name>` by default).',
  stringify(rule, { lineWidth: 0 }),
].join('\n');

const target = new URL('prometheusrule.yaml', here);
if (process.argv.includes('--check')) {
  const current = readFileSync(target, 'utf8');
  if (current !== text) {
    console.error('deploy/prometheus/prometheusrule.yaml is out of date: run node deploy/prometheus/generate-prometheusrule.mjs');
    process.exit(1);
  }
} else {
  writeFileSync(target, text);
}
