// The upstream CA source's problems, from the core's own plans, reported the way every standing
// condition is: a log line and a Warning Event on the CA Secret when one starts, one summary line
// per reconcile interval while any stands (never one per round), a line when it ends, and the
// gauge eso_ca_upstream_problem while it stands.
import { describe, expect, it } from '@jest/globals';
import {
  CertificateCache,
  type Instant,
  MemoryStore,
  type Plan,
  type UpstreamObservation,
  days,
  hours,
  issueCa,
  minutes,
  materializeCaRequest,
  planRotation,
  resolvePolicy,
} from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { ControllerMetrics } from '@eso-mtls/metrics';
import { RecordingLogger } from '@eso-mtls/test-kit/logger';
import type { EventReason, InvolvedObject } from '../src/index.js';
import { CertificateStatusView } from '../src/rounds/certificate-status.js';
import { ServiceDirectory } from '../src/events/service-directory.js';
import { PlanConditionReports } from '../src/rounds/plan-condition-reports.js';

const policy = resolvePolicy();
const INTERVAL = policy.reconcileInterval;
const T0 = Date.UTC(2026, 10, 1, 12, 0, 0);
const SOURCE = 'issuer/ClusterIssuer/org-ca';
const CA_SECRET: InvolvedObject = { kind: 'Secret', namespace: policy.esoNamespace, name: 'eso-provider-ca-internal' };
const crypto = createNodeCryptoBackend();
const cache = new CertificateCache(crypto.verifier);
const refs = new ServiceDirectory(new Map());

/** Events as the recorder would be asked for them. */
class RecordedEvents {
  readonly events: { ref: InvolvedObject; type: string; reason: EventReason; message: string }[] = [];
  record(ref: InvolvedObject, type: 'Normal' | 'Warning', reason: EventReason, message: string): void {
    this.events.push({ ref, type, reason, message });
  }
  reportFailure(count: () => void, objects: Iterable<InvolvedObject>, reason: EventReason, message: string): boolean {
    count();
    for (const ref of objects) this.record(ref, 'Warning', reason, message);
    return true;
  }
}

/** A cluster with one provider Service and an issuer source, planned by the core. */
class Cluster {
  readonly store = new MemoryStore();
  observation: UpstreamObservation = {
    kind: 'issuer',
    source: SOURCE,
    anchors: { ok: false, message: 'ConfigMap external-secrets-system/org-roots does not exist; create it with the PEM roots' },
    issuer: { state: 'missing', message: 'ClusterIssuer org-ca does not exist' },
    requestedValidity: days(365),
    requestDeadline: hours(1),
  };
  constructor() {
    this.store.setServices('team-a', [{ name: 'vault' }]);
  }
  plan(now: Instant): Plan {
    return planRotation({ ...this.store.snapshot(), upstream: this.observation }, { now, policy, cache });
  }
}

function setUp(caSecret: InvolvedObject | undefined) {
  const logger = new RecordingLogger();
  const events = new RecordedEvents();
  const reports = new PlanConditionReports(logger, events, {}, INTERVAL, caSecret);
  const view = new CertificateStatusView(
    () => [],
    () => true,
    () => new Map(),
  );
  const metrics = new ControllerMetrics({ now: () => T0, source: view });
  const round = (plan: Plan, now: Instant): void => {
    view.update(plan);
    reports.report(plan, now, refs);
  };
  const upstreamLines = () => logger.lines.filter((l) => l.message.includes('upstream CA problem'));
  // The plan's other conditions (a leaf waiting for a CA) have Events of their own.
  const upstreamEvents = () => events.events.filter((e) => e.reason === 'CaUpstreamProblem');
  return { logger, reports, view, metrics, round, upstreamLines, upstreamEvents };
}

describe('upstream CA problems from real plans', () => {
  it('are logged and evented once when they start, summarised once per interval over many rounds, and resolved one by one', async () => {
    const c = new Cluster();
    const { upstreamEvents, metrics, round, upstreamLines } = setUp(CA_SECRET);
    const first = c.plan(T0);
    expect(first.upstream?.problems.map((p) => p.reason)).toEqual(['anchors_unreadable', 'issuer_missing']);

    // A round on every event: 120 rounds within one interval say it once.
    for (let i = 0; i < 120; i++) round(c.plan(T0 + i * 1000), T0 + i * 1000);
    expect(upstreamLines().map((l) => [l.level, l.fields])).toEqual([
      ['warn', { source: SOURCE, kind: 'issuer', reason: 'anchors_unreadable' }],
      ['warn', { source: SOURCE, kind: 'issuer', reason: 'issuer_missing' }],
    ]);
    expect(upstreamLines()[0]!.message).toBe(`upstream CA problem: ${first.upstream!.problems[0]!.message}`);
    expect(upstreamEvents().map((e) => [e.ref, e.type, e.reason])).toEqual([
      [CA_SECRET, 'Warning', 'CaUpstreamProblem'],
      [CA_SECRET, 'Warning', 'CaUpstreamProblem'],
    ]);
    expect(upstreamEvents()[1]!.message).toBe(
      `${SOURCE} (issuer_missing): ${SOURCE}: ClusterIssuer org-ca does not exist (docs/operations.md#esocaupstreamproblem)`,
    );
    let exposition = await metrics.registry.metrics();
    expect(exposition).toContain(`eso_ca_upstream_info{source="${SOURCE}",kind="issuer"} 1`);
    expect(exposition).toContain(`eso_ca_upstream_problem{source="${SOURCE}",reason="anchors_unreadable"} 1`);
    expect(exposition).toContain(`eso_ca_upstream_problem{source="${SOURCE}",reason="issuer_missing"} 1`);

    // Each interval after: one summary line, and each problem's Event again (the recorder folds it into its count).
    for (let interval = 1; interval <= 3; interval++) {
      for (let i = 0; i < 60; i++) round(c.plan(T0 + interval * INTERVAL + i * 1000), T0 + interval * INTERVAL + i * 1000);
      expect(upstreamLines()).toHaveLength(2 + interval);
      expect(upstreamEvents()).toHaveLength(2 + 2 * interval);
    }
    expect(upstreamLines().at(-1)).toEqual({
      level: 'warn',
      message: `2 upstream CA problems stand with ${SOURCE}: anchors_unreadable, issuer_missing (docs/operations.md#esocaupstreamproblem)`,
      fields: { source: SOURCE, kind: 'issuer', problems: 2, reasons: ['anchors_unreadable', 'issuer_missing'], wants: expect.stringContaining(SOURCE) },
    });

    // The issuer is created and Ready: that problem ends, the anchors' stands.
    c.observation = { ...c.observation, issuer: { state: 'ready', message: 'Signing CA verified' } };
    const at = T0 + 3 * INTERVAL + minutes(2); // between two summaries
    round(c.plan(at), at);
    round(c.plan(at + 1000), at + 1000);
    expect(upstreamLines().slice(-1)).toEqual([
      { level: 'info', message: 'upstream CA problem resolved', fields: { source: SOURCE, kind: 'issuer', reason: 'issuer_missing' } },
    ]);
    exposition = await metrics.registry.metrics();
    expect(exposition).not.toContain('reason="issuer_missing"');
    expect(exposition).toContain('reason="anchors_unreadable"');
  });

  it('reports a denied request, then an overdue one, each once, from the request the core asked for', async () => {
    const c = new Cluster();
    // Anchors that read (any CA certificate will do to judge a request's state) and a Ready issuer.
    const root = await issueCa({ crypto, policy, now: T0 });
    c.observation = { ...c.observation, anchors: { ok: true, text: root.certificate.pem }, issuer: { state: 'ready', message: 'Signing CA verified' } };
    const { upstreamEvents, round, upstreamLines, view } = setUp(CA_SECRET);

    const asking = c.plan(T0);
    expect(asking.upstream?.request?.kind).toBe('create');
    const material = await materializeCaRequest(asking, c.store.get('ca'), crypto);
    c.store.apply(material.write!);
    round(asking, T0);
    expect(upstreamLines()).toEqual([]);

    c.observation = {
      ...c.observation,
      request: { name: material.name, state: 'denied', since: T0 + 1000, message: 'policy org-ca-approval: isCA is not allowed' },
    };
    for (let i = 1; i < 30; i++) round(c.plan(T0 + i * 1000), T0 + i * 1000);
    expect(upstreamLines().map((l) => [l.level, l.fields.reason, l.message])).toEqual([
      ['warn', 'request_denied', `upstream CA problem: CertificateRequest ${material.name} was denied: policy org-ca-approval: isCA is not allowed`],
    ]);
    expect(upstreamEvents().map((e) => e.reason)).toEqual(['CaUpstreamProblem']);
    expect([...view.upstreamProblems()]).toEqual([{ source: SOURCE, reason: 'request_denied' }]);

    // After the back-off the core asks again; the new request waits past its deadline.
    const later = T0 + hours(1) + 2000;
    const again = c.plan(later);
    expect(again.upstream?.request?.kind).toBe('create');
    const second = await materializeCaRequest(again, c.store.get('ca'), crypto);
    c.store.apply(second.write!);
    c.observation = { ...c.observation, request: { name: second.name, state: 'pending', since: later, message: 'waiting for approval' } };
    round(c.plan(later), later);
    expect(upstreamLines().at(-1)).toMatchObject({ level: 'info', message: 'upstream CA problem resolved', fields: { reason: 'request_denied' } });
    const overdue = later + hours(1);
    for (let i = 0; i < 30; i++) round(c.plan(overdue + i * 1000), overdue + i * 1000);
    expect(
      upstreamLines()
        .filter((l) => l.fields.reason === 'request_overdue')
        .map((l) => l.level),
    ).toEqual(['warn']);
    expect(upstreamEvents().map((e) => e.reason)).toEqual(['CaUpstreamProblem', 'CaUpstreamProblem']);
    expect(upstreamEvents()[1]!.message).toContain(`CertificateRequest ${second.name} has been pending for over 1h`);
  });

  it('leaves what it reported as it was when a plan judged no upstream (the CA Secret is not ours), and logs only without a CA Secret to put Events on', () => {
    const c = new Cluster();
    const { upstreamEvents, round, upstreamLines, view } = setUp(undefined);
    round(c.plan(T0), T0);
    expect(upstreamLines()).toHaveLength(2);
    expect(upstreamEvents()).toEqual([]);
    c.store.put('ca', { data: { 'ca.crt': 'theirs' }, ownership: 'foreign', annotations: {} });
    const foreign = c.plan(T0 + 1000);
    expect(foreign.upstream).toBeUndefined();
    round(foreign, T0 + 1000);
    expect(upstreamLines()).toHaveLength(2); // nothing "resolved"
    expect([...view.upstreamProblems()].map((p) => p.reason)).toEqual(['anchors_unreadable', 'issuer_missing']);
    expect(view.upstreamSource()).toEqual({ source: SOURCE, kind: 'issuer' });
  });

  it('stays silent, with no upstream series, for the self-signed CA', async () => {
    const c = new Cluster();
    const { upstreamEvents, metrics, logger, view, reports } = setUp(CA_SECRET);
    const plan = planRotation(c.store.snapshot(), { now: T0, policy, cache });
    expect(plan.upstream).toBeUndefined();
    view.update(plan);
    reports.report(plan, T0, refs);
    expect(logger.lines.filter((l) => l.message.includes('upstream'))).toEqual([]);
    expect(upstreamEvents()).toEqual([]);
    expect(await metrics.registry.metrics()).not.toMatch(/^eso_ca_upstream_(info|problem)\{/m);
  });
});
