import { afterAll, describe, expect, it } from '@jest/globals';
import type { V1Deployment } from '@kubernetes/client-node';
import { find } from '@eso-mtls/test-kit/manifests';
import { Helm, type Values, chartDir } from '@eso-mtls/test-kit/helm';
import { expectRefusals } from './support/refusals.js';
import { containerOf } from './support/pod-certificates.js';

// The chart sizes the controller's V8 old space from resources.limits.memory (half of it): the real helm reads the limit in every form of a Kubernetes quantity, and refuses a
// limit the controller cannot run under, or one that is no memory quantity, naming it.
const helm = new Helm();
afterAll(() => helm.remove());

const NAME = 'eso-mtls-controller';
const MiB = 1024 * 1024;
const render = (values: Values) =>
  find<V1Deployment>(helm.template(chartDir, 'eso-mtls', 'external-secrets', { fullnameOverride: NAME, ...values }), 'Deployment', NAME);
const withMemory = (memory: string | number): Values => ({ resources: { requests: { cpu: '50m', memory: '96Mi' }, limits: { cpu: '1', memory } } });
const oldSpace = (memory: string | number): number => {
  const options = containerOf(render(withMemory(memory)), 'controller').env?.find((e) => e.name === 'NODE_OPTIONS')?.value ?? '';
  return Number(/--max-old-space-size=(\d+)/.exec(options)?.[1]);
};
/** What the template must give: half the limit in whole MiB. */
const half = (bytes: number): number => Math.floor(bytes / 2 / MiB);

describe("the chart's Node heap from resources.limits.memory", () => {
  it.each([
    ['1.5Gi', 1.5 * 1024 * MiB],
    ['2G', 2e9],
    ['600000Ki', 600_000 * 1024],
    ['1e9', 1e9],
    ['1E+9', 1e9],
    ['1e09', 1e9],
    ['2.5e+09', 2.5e9],
    ['2147483648', 2_147_483_648],
    ['1000M', 1e9],
    ['3000Mi', 3000 * MiB],
    ['2Gi', 2048 * MiB],
    ['0.75Gi', 0.75 * 1024 * MiB],
    ['.5Ti', 0.5 * 1024 * 1024 * MiB],
    ['4000000k', 4e9],
    ['1T', 1e12],
  ])('reads %s as %d bytes', (memory, bytes) => {
    expect(oldSpace(memory)).toBe(half(bytes));
  });

  it('reads a limit YAML gives as a number (helm reads it as a float: 2.147483648e+09)', () => {
    expect(oldSpace(2_147_483_648)).toBe(1024);
  });

  it('gives half the limit at the smallest and the default limits too, the default limit staying when only requests are set', () => {
    expect([oldSpace('256Mi'), oldSpace('512Mi'), oldSpace('128Mi')]).toEqual([128, 256, 64]);
    const requestsOnly = containerOf(render({ resources: { requests: { memory: '96Mi' } } }), 'controller');
    expect(requestsOnly.env?.find((e) => e.name === 'NODE_OPTIONS')?.value).toBe('--max-semi-space-size=16 --max-old-space-size=128');
  });

  it('refuses a limit too small to run the controller, or in fractions of a byte, naming the value and what to do', () => {
    const tooSmall = 'the controller needs at least 128Mi (about 75 MiB loaded and idle, and up to 32 MiB more for its young generation); raise the limit';
    expectRefusals(render, [
      [withMemory('10Mi'), `resources.limits.memory 10Mi is 10.0 MiB: ${tooSmall}`],
      [withMemory('127Mi'), `resources.limits.memory 127Mi is 127.0 MiB: ${tooSmall}`],
      [withMemory('100M'), `resources.limits.memory 100M is 95.4 MiB: ${tooSmall}`],
      [withMemory('1e6'), `resources.limits.memory 1e6 is 1.0 MiB: ${tooSmall}`],
      [
        withMemory('500m'),
        'resources.limits.memory "500m" counts in thousandths of a byte (suffix m): a memory limit is in bytes; write it with Mi or Gi, such as 256Mi',
      ],
      [withMemory('1e-3'), `resources.limits.memory 1e-3 is 0.0 MiB: ${tooSmall}`],
    ]);
    // 128Mi exactly is the floor, and runs.
    expect(oldSpace('128Mi')).toBe(64);
  });

  it('refuses what is no quantity with the schema, before the template reads it', () => {
    expectRefusals(render, [
      [withMemory('256MB'), "at '/resources/limits/memory'"],
      [withMemory('1.5 Gi'), "at '/resources/limits/memory'"],
    ]);
  });
});
