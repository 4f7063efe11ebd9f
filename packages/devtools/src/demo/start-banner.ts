import { DEFAULT_POLICY, type Policy, formatDuration } from '@eso-mtls/core';
import type { DemoProvider } from './provider-fleet.js';
import { DEMO_SCHEDULE } from './schedule.js';

/** What the banner describes. */
export interface StartFacts {
  readonly options: { readonly durationMs: number; readonly providers: number; readonly seed: number };
  readonly policy: Policy;
  /** The folder holding every mounted Secret folder. */
  readonly root: string;
  readonly metricsUrl: string | undefined;
  readonly providers: readonly DemoProvider[];
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1).replace(/\.0$/, '')}s`;

/** The lines printed before the timeline (text), and the same facts as the first JSON line. */
export function formatStart(f: StartFacts): { text: string; json: Record<string, unknown> } {
  const d = formatDuration;
  const p = f.policy;
  const { min, max } = DEMO_SCHEDULE.deliveryDelayMs;
  const lines = [
    `eso-mtls demo: ${f.providers.length} providers on loopback; ESO's client calls GetSecret on each over mTLS, without retries, for ${seconds(f.options.durationMs)} (seed ${f.options.seed})`,
    `  cluster    in memory, reconciled by the controller's own planner and executor (no Kubernetes, no Go)`,
    `  folders    ${f.root}: one per mounted Secret, updated kubelet-style (..data swaps) ${seconds(min)}-${seconds(max)} after each change`,
    `  lifetimes  CA ${d(p.caValidity)}, leaves ${d(p.leafValidity)}, checked against the real clock: the scenario forces every change`,
    `  schedule   demo only: propagation delay ${d(p.propagationDelay)}, max connection age ${d(p.maxConnectionAge)} (the controller's: ${d(DEFAULT_POLICY.propagationDelay)}, ${d(DEFAULT_POLICY.maxConnectionAge)})`,
    `  metrics    ${f.metricsUrl === undefined ? 'controller: not served (--metrics-bind-address 0)' : `controller: ${f.metricsUrl}`}`,
    ...f.providers.map((x) => `             ${x.namespace}: ${x.metricsUrl}`),
    ...f.providers.map((x, i) => `  ${i === 0 ? 'providers ' : '          '} ${x.service}.${x.namespace}.svc -> 127.0.0.1:${x.server.port}`),
    '',
  ];
  const json = {
    event: 'start',
    durationMs: f.options.durationMs,
    providers: f.providers.map((x) => ({ namespace: x.namespace, service: x.service, port: x.server.port, metricsUrl: x.metricsUrl })),
    seed: f.options.seed,
    folders: f.root,
    propagationDelayMs: p.propagationDelay,
    maxConnectionAgeMs: p.maxConnectionAge,
    metricsUrl: f.metricsUrl ?? null,
  };
  return { text: lines.join('\n'), json };
}
