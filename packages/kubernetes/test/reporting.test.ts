// The once-per-state reporting of a round: conflicts, leaves waiting for a CA and refused Services
// are logged and given Events when they start or change, with one summary per reconcile interval,
// never once per round (2,000 waiting Services once gave 3.6 MB of logs in 11 s).
import { describe, expect, it } from '@jest/globals';
import type { Conflict, Plan, RefusedService, WaitingLeaf } from '@eso-mtls/core';
import { minutes } from '@eso-mtls/core';
import { ControllerMetrics } from '@eso-mtls/metrics';
import type { EventReason, InvolvedObject } from '../src/index.js';
import { CertificateStatusView } from '../src/rounds/certificate-status.js';
import { ServiceDirectory } from '../src/events/service-directory.js';
import { PlanConditionReports } from '../src/rounds/plan-condition-reports.js';
import { StandingStates } from '../src/rounds/standing-states.js';
import { RecordingLogger } from '@eso-mtls/test-kit/logger';

const INTERVAL = minutes(10);
const T0 = Date.UTC(2026, 10, 1, 12, 0, 0);

/** Events as the recorder would be asked for them. */
class RecordedEvents {
  readonly events: { ref: InvolvedObject; type: string; reason: EventReason; message: string }[] = [];
  record(ref: InvolvedObject, type: 'Normal' | 'Warning', reason: EventReason, message: string): void {
    this.events.push({ ref, type, reason, message });
  }
  reportFailure(count: () => void, refs: Iterable<InvolvedObject>, reason: EventReason, message: string): boolean {
    count();
    for (const ref of refs) this.record(ref, 'Warning', reason, message);
    return true;
  }
}

function setUp() {
  const logger = new RecordingLogger();
  const events = new RecordedEvents();
  const failures: { namespace: string; services: readonly string[] }[] = [];
  const reports = new PlanConditionReports(logger, events, { onRotationFailure: (namespace, services) => failures.push({ namespace, services }) }, INTERVAL);
  // No Service in the cache: Events carry no uid.
  const refs = new ServiceDirectory(new Map());
  const plan = (p: { conflicts?: Conflict[]; waiting?: WaitingLeaf[]; refused?: RefusedService[] }): Pick<Plan, 'conflicts' | 'waiting' | 'refused'> => ({
    conflicts: p.conflicts ?? [],
    waiting: p.waiting ?? [],
    refused: p.refused ?? [],
  });
  return { logger, events, failures, reports, refs, plan };
}

const services = (n: number): string[] => Array.from({ length: n }, (_, i) => `svc-${i}`);

describe('a standing state is reported when it starts and when it changes, not every round', () => {
  it('logs each of 2,000 waiting Services once over 50 rounds, with one Event each, and one summary per interval', () => {
    const { logger, events, reports, refs, plan } = setUp();
    const until = T0 + minutes(5);
    const waiting: WaitingLeaf[] = [
      {
        target: { namespace: 'big' },
        services: services(2000),
        reason: 'secret_missing',
        message: 'namespace big: the Secret is missing (waiting: no CA signs until the new one is activated)',
        until,
      },
      { target: 'client', services: [], reason: 'forced', message: 'the client certificate: forced by an emergency CA rotation (waiting)', until },
    ];
    for (let round = 0; round < 50; round++) reports.report(plan({ waiting }), T0 + round * 1000, refs);

    const perService = logger.lines.filter((l) => l.message.startsWith('waiting for the new CA'));
    expect(perService).toHaveLength(2001); // each Service of big once, and the client once
    expect(perService[0]!.fields).toEqual({
      target: 'namespace/big',
      namespace: 'big',
      service: 'svc-0',
      reason: 'secret_missing',
      until: new Date(until).toISOString().replace('.000Z', 'Z'),
    });
    expect(logger.lines.filter((l) => l.message === '2 leaves waiting for the new CA')).toHaveLength(1);
    expect(logger.lines).toHaveLength(2002);
    expect(events.events).toHaveLength(2000);
    expect(events.events[0]).toEqual({
      ref: { namespace: 'big', name: 'svc-0' },
      type: 'Warning',
      reason: 'WaitingForCA',
      message: expect.stringContaining(`no CA signs until ${new Date(until).toISOString().replace('.000Z', 'Z')}`),
    });

    // One reconcile interval later the wait still stands: one summary line, nothing per Service.
    reports.report(plan({ waiting }), T0 + INTERVAL + 1000, refs);
    expect(logger.lines).toHaveLength(2003);
    expect(logger.lines.at(-1)!.message).toBe('2 leaves waiting for the new CA');
    expect(events.events).toHaveLength(2000);
  });

  it('reports a waiting Service again when its reason or its until changes, and a Service that joins the wait', () => {
    const { logger, events, reports, refs, plan } = setUp();
    const leaf = (until: number, names: string[], reason: WaitingLeaf['reason'] = 'secret_missing'): WaitingLeaf => ({
      target: { namespace: 'ns' },
      services: names,
      reason,
      message: 'namespace ns: waiting',
      until,
    });
    reports.report(plan({ waiting: [leaf(T0 + 1000, ['a'])] }), T0, refs);
    reports.report(plan({ waiting: [leaf(T0 + 1000, ['a'])] }), T0 + 1, refs);
    expect(events.events.map((e) => e.ref.name)).toEqual(['a']);
    reports.report(plan({ waiting: [leaf(T0 + 2000, ['a'])] }), T0 + 2, refs); // a later CA: new until
    reports.report(plan({ waiting: [leaf(T0 + 2000, ['a', 'b'])] }), T0 + 3, refs); // b joins
    reports.report(plan({ waiting: [leaf(T0 + 2000, ['a', 'b'], 'forced')] }), T0 + 4, refs);
    expect(events.events.map((e) => e.ref.name)).toEqual(['a', 'a', 'b', 'a', 'b']);
    expect(logger.lines.filter((l) => l.message.startsWith('waiting for the new CA')).map((l) => l.fields.service)).toEqual(['a', 'a', 'b', 'a', 'b']);

    // The wait ends and starts again: reported again.
    reports.report(plan({}), T0 + 5, refs);
    reports.report(plan({ waiting: [leaf(T0 + 2000, ['a'], 'forced')] }), T0 + 6, refs);
    expect(events.events.map((e) => e.ref.name)).toEqual(['a', 'a', 'b', 'a', 'b', 'a']);
  });

  it('gives a refused Service one Warning Event and one log line per refusal, and logs once when it ends', () => {
    const { logger, events, reports, refs, plan } = setUp();
    const refused: RefusedService[] = [
      {
        namespace: 'ns',
        service: 'ticket',
        reason: 'rotate_request_too_large',
        message: 'Service ns/ticket: the eso-mtls.io/rotate value (300000 bytes) is over 256 bytes and is ignored',
      },
      {
        namespace: 'ns',
        service: 'big',
        reason: 'certificate_too_large',
        message: 'Service ns/big: its DNS names would make the certificate too large; left out',
      },
    ];
    for (let round = 0; round < 20; round++) reports.report(plan({ refused }), T0 + round, refs);
    expect(events.events.map((e) => [e.ref.name, e.type, e.reason])).toEqual([
      ['ticket', 'Warning', 'RotateRequestRefused'],
      ['big', 'Warning', 'NamesRefused'],
    ]);
    const lines = logger.lines.filter((l) => l.message.startsWith('refused: '));
    expect(lines.map((l) => l.fields)).toEqual([
      { namespace: 'ns', service: 'ticket', reason: 'rotate_request_too_large' },
      { namespace: 'ns', service: 'big', reason: 'certificate_too_large' },
    ]);
    expect(logger.lines.filter((l) => l.message === '2 Services refused')).toHaveLength(1);

    reports.report(plan({ refused: [refused[1]!] }), T0 + 100, refs);
    reports.report(plan({ refused: [refused[1]!] }), T0 + 101, refs);
    expect(logger.lines.filter((l) => l.message === 'no longer refused').map((l) => l.fields)).toEqual([
      { namespace: 'ns', service: 'ticket', reason: 'rotate_request_too_large' },
    ]);
    expect(events.events).toHaveLength(2);
  });

  it('keeps reporting a conflict once per reconcile interval, counted as a failure each time', () => {
    const { logger, events, failures, reports, refs, plan } = setUp();
    const conflicts: Conflict[] = [
      {
        target: { namespace: 'ns' },
        services: ['a'],
        message: 'namespace ns: Secret external-secrets-provider-tls exists but was not written by this installation',
      },
    ];
    for (let round = 0; round < 30; round++) reports.report(plan({ conflicts }), T0 + round * 1000, refs);
    expect(logger.lines).toHaveLength(1);
    expect(failures).toHaveLength(1);
    reports.report(plan({ conflicts }), T0 + INTERVAL, refs);
    expect(logger.lines).toHaveLength(2);
    expect(failures).toHaveLength(2);
    expect(events.events.map((e) => e.reason)).toEqual(['Conflict', 'Conflict']);
  });
});

describe('StandingStates', () => {
  it('forgets ended states, so memory follows what stands now', () => {
    const reporter = new StandingStates();
    const key = (s: string): string => s;
    expect(reporter.track(['a', 'b', 'a'], key, () => 'x', T0).report).toEqual(['a', 'b']);
    expect(reporter.track(['b'], key, () => 'x', T0)).toEqual({ report: [], ended: ['a'], summarize: false });
    expect(reporter.track(['a'], key, () => 'x', T0)).toEqual({ report: ['a'], ended: ['b'], summarize: false });
  });
});

describe('the refused gauge and the signing pause, from the status view', () => {
  it('exports 1 per refused Service while refused, and the pause as a Unix time, both gone when they end', async () => {
    const view = new CertificateStatusView(
      () => [],
      () => true,
      () => new Map(),
    );
    const metrics = new ControllerMetrics({ now: () => T0, source: view });
    const status = { ca: { retired: [] }, namespaces: [], signingPausedUntil: T0 + minutes(5) };
    view.update({ status, refused: [{ namespace: 'ns', service: 'ticket', reason: 'rotate_request_too_large', message: 'm' }] });
    const during = await metrics.registry.metrics();
    expect(during).toContain('eso_provider_services_refused{namespace="ns",service="ticket",reason="rotate_request_too_large"} 1');
    expect(during).toContain(`eso_ca_signing_paused_until_timestamp_seconds ${(T0 + minutes(5)) / 1000}`);

    view.update({ status: { ca: { retired: [] }, namespaces: [] }, refused: [] });
    const after = await metrics.registry.metrics();
    expect(after).not.toMatch(/^eso_provider_services_refused\{/m);
    expect(after).not.toMatch(/^eso_ca_signing_paused_until_timestamp_seconds /m);
  });
});
