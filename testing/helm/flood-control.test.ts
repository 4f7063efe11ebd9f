import { afterAll, describe, expect, it } from '@jest/globals';
import type { V1Deployment } from '@kubernetes/client-node';
import { CONTROLLER_FLAGS } from '../../packages/controller/src/index.js';
import { find, kustomizeBuild } from '@eso-mtls/test-kit/manifests';
import { Helm, type Values, chartDir } from '@eso-mtls/test-kit/helm';
import { expectRefusals } from './support/refusals.js';
import { containerOf, flagsOf } from './support/pod-certificates.js';
import { parsedControllerConfig } from './support/release.js';

// The chart's floodControl values (docs/flood-control.md): each is its controller flag, the
// defaults are the controller's, and a value the controller would refuse fails the install.
const helm = new Helm();
afterAll(() => helm.remove());

const NAME = 'eso-mtls-controller';
const render = (values: Values) =>
  find<V1Deployment>(helm.template(chartDir, 'eso-mtls', 'external-secrets', { fullnameOverride: NAME, ...values }), 'Deployment', NAME);
const flags = (deployment: V1Deployment) => flagsOf(containerOf(deployment, 'controller').args ?? []);

describe('floodControl in the chart', () => {
  it("passes the controller's own defaults by default: the configuration deploy/base gives", () => {
    const deployment = render({});
    const defaults = Object.fromEntries(CONTROLLER_FLAGS.map((f) => [f.name, f.default]));
    expect(flags(deployment)).toMatchObject({
      'max-issuances-per-reconcile': defaults['max-issuances-per-reconcile'],
      'max-namespaces': defaults['max-namespaces'],
    });
    const base = parsedControllerConfig(find<V1Deployment>(kustomizeBuild('deploy'), 'Deployment', NAME));
    const chart = parsedControllerConfig(deployment);
    expect([chart.maxIssuancesPerReconcile, chart.maxNamespaces]).toEqual([1000, undefined]);
    expect([chart.maxIssuancesPerReconcile, chart.maxNamespaces]).toEqual([base.maxIssuancesPerReconcile, base.maxNamespaces]);
  });

  it('renders each value as its flag, in whole numbers the controller parses, 0 for none and up to a million', () => {
    const bounded = parsedControllerConfig(render({ floodControl: { maxIssuancesPerReconcile: 250, maxNamespaces: 40 } }));
    expect([bounded.maxIssuancesPerReconcile, bounded.maxNamespaces]).toEqual([250, 40]);
    // Helm reads numbers as floats: a million must not render as 1e+06, which the controller refuses.
    const extreme = render({ floodControl: { maxIssuancesPerReconcile: 0, maxNamespaces: 1_000_000 } });
    expect(flags(extreme)).toMatchObject({ 'max-issuances-per-reconcile': '0', 'max-namespaces': '1000000' });
    const parsed = parsedControllerConfig(extreme);
    expect([parsed.maxIssuancesPerReconcile, parsed.maxNamespaces]).toEqual([undefined, 1_000_000]);
  });

  it("sizes V8's old space from the memory limit (half), as deploy/base pins it for the shipped 256Mi", () => {
    const nodeOptions = (deployment: V1Deployment) => containerOf(deployment, 'controller').env?.find((e) => e.name === 'NODE_OPTIONS')?.value;
    const base = containerOf(find<V1Deployment>(kustomizeBuild('deploy'), 'Deployment', NAME), 'controller');
    expect(nodeOptions(render({}))).toBe(base.env?.find((e) => e.name === 'NODE_OPTIONS')?.value);
    expect(nodeOptions(render({}))).toBe('--max-semi-space-size=16 --max-old-space-size=128');
    const withLimit = (memory: string) => nodeOptions(render({ resources: { requests: { cpu: '50m', memory: '96Mi' }, limits: { cpu: '1', memory } } }));
    // 1G is 10^9 bytes, 953.7 MiB: half of it (every quantity form: memory-limit.test.ts).
    expect([withLimit('384Mi'), withLimit('1Gi'), withLimit('3000Mi'), withLimit('1G')]).toEqual(
      ['192', '512', '1500', '476'].map((mib) => `--max-semi-space-size=16 --max-old-space-size=${mib}`),
    );
  });

  it('refuses what the controller would refuse, naming the value', () => {
    const refusals: [Values, string][] = [
      [{ floodControl: { maxIssuancesPerReconcile: -1 } }, "at '/floodControl/maxIssuancesPerReconcile': minimum: got -1, want 0"],
      [{ floodControl: { maxNamespaces: 1_000_001 } }, "at '/floodControl/maxNamespaces': maximum: got 1.000001×10⁰⁶"],
      [{ floodControl: { maxNamespaces: 2.5 } }, "at '/floodControl/maxNamespaces': got number, want integer"],
      [{ floodControl: { maxIssuancesPerReconcile: '500' } }, "at '/floodControl/maxIssuancesPerReconcile': got string, want integer"],
      [{ floodControl: { maxNamespace: 5 } }, "additional properties 'maxNamespace' not allowed"],
    ];
    expectRefusals(render, refusals);
  });
});
