import { afterEach, describe, expect, it } from '@jest/globals';
import { CHAIN_REFUSAL_REASONS, ROTATION_REASONS, type RotationReason } from '@eso-mtls/core';
import {
  ControllerMetrics,
  type LeaderLeaseForeignReason,
  METRIC_NAMES,
  MetricLabelError,
  UPSTREAM_PROBLEM_REASONS,
  isUpstreamSource,
} from '@eso-mtls/metrics';
import { TestClock } from '@eso-mtls/test-kit/clock';
import { ControllerView } from './support/controller-view.js';
import { series, valueOf } from '@eso-mtls/test-kit/exposition';
import { Served } from './support/served.js';

const T0 = Date.UTC(2026, 10, 1, 12, 0, 0);
const DAY = 86_400_000;
const N = METRIC_NAMES;
const GAUGES = [N.providerCertificateExpiry, N.clientCertificateExpiry, N.caCertificateExpiry, N.providerServicesRefused, N.caSigningPausedUntil];

const served = new Served();
afterEach(() => served.stop());

async function setUp(view = new ControllerView()) {
  const clock = new TestClock(T0);
  const invalid: MetricLabelError[] = [];
  const metrics = new ControllerMetrics({ now: clock.now, source: view, onInvalidEntry: (e) => invalid.push(e) });
  const scrape = await served.start(metrics.registry);
  return { view, clock, metrics, scrape, invalid, samples: async () => (await scrape()).samples };
}

describe('ControllerMetrics expiry gauges', () => {
  it('are computed at scrape time from the source, in seconds until notAfter', async () => {
    const { view, clock, samples } = await setUp();
    view.services = [
      { namespace: 'provider-aws', service: 'aws', notAfter: T0 + 40 * DAY },
      { namespace: 'provider-aws', service: 'aws-2', notAfter: T0 + 40 * DAY },
      { namespace: 'provider-vault', service: 'vault', notAfter: T0 + 2 * DAY },
    ];
    view.client = { notAfter: T0 + 10 * DAY };
    view.cas = [
      { state: 'active', notAfter: T0 + 300 * DAY },
      { state: 'next', notAfter: T0 + 665 * DAY },
    ];

    let s = await samples();
    expect(valueOf(s, N.providerCertificateExpiry, { namespace: 'provider-aws', service: 'aws' })).toBe(40 * 86_400);
    expect(valueOf(s, N.providerCertificateExpiry, { namespace: 'provider-aws', service: 'aws-2' })).toBe(40 * 86_400);
    expect(valueOf(s, N.providerCertificateExpiry, { namespace: 'provider-vault', service: 'vault' })).toBe(2 * 86_400);
    expect(series(s, N.providerCertificateExpiry)).toHaveLength(3);
    expect(valueOf(s, N.clientCertificateExpiry)).toBe(10 * 86_400);
    expect(series(s, N.clientCertificateExpiry)[0]!.labels).toEqual({});
    expect(valueOf(s, N.caCertificateExpiry, { state: 'active' })).toBe(300 * 86_400);
    expect(valueOf(s, N.caCertificateExpiry, { state: 'next' })).toBe(665 * 86_400);
    expect(series(s, N.caCertificateExpiry, { state: 'retired' })).toHaveLength(0);

    // The time moves and the source changes (a rotation): the next scrape shows both.
    clock.advance(1500);
    view.services[2] = { namespace: 'provider-vault', service: 'vault', notAfter: T0 + 90 * DAY };
    s = await samples();
    expect(valueOf(s, N.providerCertificateExpiry, { namespace: 'provider-aws', service: 'aws' })).toBe(40 * 86_400 - 1.5);
    expect(valueOf(s, N.providerCertificateExpiry, { namespace: 'provider-vault', service: 'vault' })).toBe(90 * 86_400 - 1.5);
    expect(valueOf(s, N.clientCertificateExpiry)).toBe(10 * 86_400 - 1.5);
  });

  it('go negative once a certificate has expired, so expiry alerts keep firing', async () => {
    const { view, samples } = await setUp();
    view.services = [{ namespace: 'p', service: 's', notAfter: T0 - 60_000 }];
    expect(valueOf(await samples(), N.providerCertificateExpiry, { namespace: 'p', service: 's' })).toBe(-60);
  });

  it('leave no stale series when a Service loses its label or is deleted', async () => {
    const { view, samples } = await setUp();
    view.services = [
      { namespace: 'a', service: 'one', notAfter: T0 + DAY },
      { namespace: 'a', service: 'two', notAfter: T0 + DAY },
      { namespace: 'b', service: 'three', notAfter: T0 + DAY },
    ];
    expect(series(await samples(), N.providerCertificateExpiry)).toHaveLength(3);

    view.services = view.services.filter((s) => s.service !== 'two'); // label removed
    let s = await samples();
    expect(series(s, N.providerCertificateExpiry).map((x) => x.labels)).toEqual([
      { namespace: 'a', service: 'one' },
      { namespace: 'b', service: 'three' },
    ]);

    view.services = []; // every Service gone
    s = await samples();
    expect(series(s, N.providerCertificateExpiry)).toHaveLength(0);
  });

  it('export no series for a Service whose namespace has no certificate yet, and none for a missing client certificate', async () => {
    const { view, samples } = await setUp();
    view.services = [{ namespace: 'new', service: 'svc', notAfter: undefined }];
    const s = await samples();
    expect(series(s, N.providerCertificateExpiry)).toHaveLength(0);
    // Not a 0 sample, which would read as "expires now".
    expect(series(s, N.clientCertificateExpiry)).toHaveLength(0);
  });

  it('report the soonest notAfter when a state holds several CAs', async () => {
    const { view, samples } = await setUp();
    view.cas = [
      { state: 'active', notAfter: T0 + 200 * DAY },
      { state: 'retired', notAfter: T0 + 20 * DAY },
      { state: 'retired', notAfter: T0 + 5 * DAY },
    ];
    const s = await samples();
    expect(valueOf(s, N.caCertificateExpiry, { state: 'retired' })).toBe(5 * 86_400);
    expect(valueOf(s, N.caCertificateExpiry, { state: 'active' })).toBe(200 * 86_400);
  });

  it('are exported by the leader only; a non-leader exports no gauge series at all', async () => {
    const { view, metrics, samples } = await setUp();
    view.services = [{ namespace: 'a', service: 'one', notAfter: T0 + DAY }];
    view.client = { notAfter: T0 + DAY };
    view.cas = [{ state: 'active', notAfter: T0 + 100 * DAY }];
    view.refused = [{ namespace: 'a', service: 'one', reason: 'rotate_request_too_large' }];
    view.pausedUntil = T0 + DAY;
    metrics.recordRotation('a', ['one'], 'initial');

    view.leader = false;
    let s = await samples();
    for (const name of GAUGES) expect(series(s, name)).toEqual([]);
    expect(valueOf(s, N.providerCertificateRotations, { namespace: 'a', service: 'one', reason: 'initial' })).toBe(1);

    view.leader = true; // won the lease
    s = await samples();
    for (const name of GAUGES) expect(series(s, name)).toHaveLength(1);

    view.leader = false; // lost it again
    s = await samples();
    for (const name of GAUGES) expect(series(s, name)).toEqual([]);
  });

  it('skip an entry that cannot become a series, report it, and keep every other series', async () => {
    const { view, samples, invalid } = await setUp();
    view.services = [
      { namespace: 'ok', service: 'good', notAfter: T0 + DAY },
      { namespace: '', service: 'nameless', notAfter: T0 + DAY },
      { namespace: 'ok', service: 'bad', notAfter: Number.NaN },
    ];
    view.cas = [
      { state: 'pending' as never, notAfter: T0 },
      { state: 'active', notAfter: T0 + DAY },
    ];
    const s = await samples();
    expect(series(s, N.providerCertificateExpiry).map((x) => x.labels)).toEqual([{ namespace: 'ok', service: 'good' }]);
    expect(series(s, N.caCertificateExpiry).map((x) => x.labels)).toEqual([{ state: 'active' }]);
    const messages = invalid.map((e) => e.message).join('\n');
    expect(messages).toContain('namespace label ""');
    expect(messages).toContain('notAfter NaN of Service ok/bad');
    expect(messages).toContain('CA state "pending" is not one of active, next, retired');
  });
});

describe('ControllerMetrics rotation counters', () => {
  it('count one issuance as exactly one for each Service of the namespace, under its reason', async () => {
    const { view, metrics, samples } = await setUp();
    view.services = ['x', 'y', 'z']
      .map((service) => ({ namespace: 'prov', service, notAfter: T0 + DAY }))
      .concat([{ namespace: 'other', service: 'x', notAfter: T0 + DAY }]);

    metrics.recordRotation('prov', ['x', 'y', 'z'], 'expiring');
    let s = await samples();
    for (const service of ['x', 'y', 'z']) {
      expect(valueOf(s, N.providerCertificateRotations, { namespace: 'prov', service, reason: 'expiring' })).toBe(1);
    }
    expect(series(s, N.providerCertificateRotations)).toHaveLength(3); // no other reason, no other namespace

    metrics.recordRotation('prov', ['x', 'y', 'z', 'x'], 'ca_rotated'); // a repeated name is one Service
    metrics.recordRotation('prov', ['x', 'y', 'z'], 'expiring');
    s = await samples();
    for (const service of ['x', 'y', 'z']) {
      expect(valueOf(s, N.providerCertificateRotations, { namespace: 'prov', service, reason: 'expiring' })).toBe(2);
      expect(valueOf(s, N.providerCertificateRotations, { namespace: 'prov', service, reason: 'ca_rotated' })).toBe(1);
    }
    expect(series(s, N.providerCertificateRotations, { namespace: 'other' })).toHaveLength(0);
  });

  it('accept every core rotation reason, which are exactly the eight the issue names', async () => {
    expect([...ROTATION_REASONS].sort()).toEqual(
      ['initial', 'expiring', 'dns_changed', 'secret_missing', 'ca_rotated', 'ca_mismatch', 'invalid', 'forced'].sort(),
    );
    const { view, metrics, samples } = await setUp();
    view.services = [{ namespace: 'n', service: 's', notAfter: undefined }];
    for (const reason of ROTATION_REASONS) metrics.recordRotation('n', ['s'], reason);
    const s = await samples();
    expect(
      series(s, N.providerCertificateRotations)
        .map((x) => x.labels.reason)
        .sort(),
    ).toEqual([...ROTATION_REASONS].sort());
  });

  it('count failures per Service and start every listed Service at 0, so increase() sees the first failure', async () => {
    const { view, metrics, samples } = await setUp();
    view.services = [
      { namespace: 'n', service: 'a', notAfter: undefined },
      { namespace: 'n', service: 'b', notAfter: undefined },
    ];
    let s = await samples();
    expect(valueOf(s, N.providerCertificateRotationFailures, { namespace: 'n', service: 'a' })).toBe(0);
    expect(valueOf(s, N.providerCertificateRotationFailures, { namespace: 'n', service: 'b' })).toBe(0);

    metrics.recordRotationFailure('n', ['a', 'b']);
    metrics.recordRotationFailure('n', ['a', 'b']);
    s = await samples();
    expect(valueOf(s, N.providerCertificateRotationFailures, { namespace: 'n', service: 'a' })).toBe(2);
    expect(valueOf(s, N.providerCertificateRotationFailures, { namespace: 'n', service: 'b' })).toBe(2);
  });

  it('drop the series of a departed Service', async () => {
    const { view, metrics, samples } = await setUp();
    view.services = [
      { namespace: 'n', service: 'a', notAfter: T0 + DAY },
      { namespace: 'n', service: 'b', notAfter: T0 + DAY },
    ];
    metrics.recordRotation('n', ['a', 'b'], 'initial');
    metrics.recordRotationFailure('n', ['a', 'b']);
    expect(series(await samples(), N.providerCertificateRotations)).toHaveLength(2);

    view.services = [{ namespace: 'n', service: 'a', notAfter: T0 + DAY }];
    const s = await samples();
    expect(series(s, N.providerCertificateRotations).map((x) => x.labels.service)).toEqual(['a']);
    expect(series(s, N.providerCertificateRotationFailures).map((x) => x.labels.service)).toEqual(['a']);
    expect(valueOf(s, N.providerCertificateRotations, { service: 'a', reason: 'initial' })).toBe(1);
  });

  it('reject a bad reason or name with an error naming it, and count nothing', async () => {
    const { view, metrics, samples } = await setUp();
    view.services = [{ namespace: 'n', service: 'a', notAfter: undefined }];
    const attempts: [string, unknown, RegExp][] = [
      ['rotated', ['a'], new RegExp(`rotation reason "rotated" is not one of ${ROTATION_REASONS.join(', ')}`)],
      ['', ['a'], /rotation reason "" is not one of/],
      ['initial', ['a', 'Bad_Name'], /service label "Bad_Name" in namespace n is not a Kubernetes Service name/],
      ['initial', ['a', ''], /service label ""/],
      ['initial', 'a', /must be an array of Service names/],
    ];
    for (const [reason, services, message] of attempts) {
      expect(() => metrics.recordRotation('n', services as string[], reason as RotationReason)).toThrow(MetricLabelError);
      expect(() => metrics.recordRotation('n', services as string[], reason as RotationReason)).toThrow(message);
    }
    expect(() => metrics.recordRotation('Not A Namespace', ['a'], 'initial')).toThrow(/namespace label "Not A Namespace" is not a Kubernetes namespace name/);
    expect(() => metrics.recordRotationFailure('n', ['a', '-x'])).toThrow(/service label "-x"/);

    const s = await samples();
    expect(series(s, N.providerCertificateRotations)).toHaveLength(0);
    expect(valueOf(s, N.providerCertificateRotationFailures, { namespace: 'n', service: 'a' })).toBe(0);
  });
});

describe('ControllerMetrics refusals, signing pause and CA failures', () => {
  it('export 1 per refused Service and reason while the source lists it, and no series once the refusal ends', async () => {
    const { view, samples } = await setUp();
    view.refused = [
      { namespace: 'n', service: 'a', reason: 'rotate_request_too_large' },
      { namespace: 'n', service: 'b', reason: 'certificate_too_large' },
    ];
    let s = await samples();
    expect(series(s, N.providerServicesRefused).map((x) => [x.labels, x.value])).toEqual([
      [{ namespace: 'n', service: 'a', reason: 'rotate_request_too_large' }, 1],
      [{ namespace: 'n', service: 'b', reason: 'certificate_too_large' }, 1],
    ]);
    view.refused = [{ namespace: 'n', service: 'b', reason: 'certificate_too_large' }];
    s = await samples();
    expect(series(s, N.providerServicesRefused).map((x) => x.labels.service)).toEqual(['b']);
  });

  it('skip a refused entry whose reason or name cannot be a label, and report it', async () => {
    const { view, samples, invalid } = await setUp();
    view.refused = [
      { namespace: 'n', service: 'a', reason: 'whatever the tenant wrote' as never },
      { namespace: 'n', service: 'Not_A_Name', reason: 'certificate_too_large' },
      { namespace: 'n', service: 'ok', reason: 'certificate_too_large' },
    ];
    const s = await samples();
    expect(series(s, N.providerServicesRefused).map((x) => x.labels.service)).toEqual(['ok']);
    const messages = invalid.map((e) => e.message).join('\n');
    expect(messages).toContain('refusal reason "whatever the tenant wrote" of Service n/a is not one of rotate_request_too_large, certificate_too_large');
    expect(messages).toContain('service label "Not_A_Name"');
  });

  it('export 1 per namespace left behind by the CA rotation, by reason, from the leader only, skipping what cannot be a label', async () => {
    const { view, samples, invalid } = await setUp();
    expect(series(await samples(), N.caRotationNamespaceLeftBehind)).toEqual([]);
    view.leftBehind = [
      { namespace: 'team-a', reason: 'immutable' },
      { namespace: 'team-b', reason: 'refused' },
      { namespace: 'Team_C', reason: 'refused' },
      { namespace: 'team-d', reason: 'whatever' as never },
    ];
    let s = await samples();
    expect(series(s, N.caRotationNamespaceLeftBehind).map((x) => [x.labels, x.value])).toEqual([
      [{ namespace: 'team-a', reason: 'immutable' }, 1],
      [{ namespace: 'team-b', reason: 'refused' }, 1],
    ]);
    const messages = invalid.map((e) => e.message).join('\n');
    expect(messages).toContain('namespace label "Team_C" is not a Kubernetes namespace name; entry skipped');
    expect(messages).toContain('left-behind reason "whatever" of namespace team-d is not one of immutable, refused; entry skipped');
    view.leader = false;
    expect(series(await samples(), N.caRotationNamespaceLeftBehind)).toEqual([]);
    view.leader = true;
    view.leftBehind = [{ namespace: 'team-b', reason: 'refused' }]; // team-a caught up
    s = await samples();
    expect(series(s, N.caRotationNamespaceLeftBehind).map((x) => x.labels.namespace)).toEqual(['team-b']);
  });

  it('export the upstream source and 1 per standing upstream problem, from the leader only, skipping what cannot be a label', async () => {
    const { view, samples, invalid } = await setUp();
    let s = await samples();
    expect(series(s, N.caUpstreamInfo)).toEqual([]);
    expect(series(s, N.caUpstreamProblem)).toEqual([]);
    const source = 'issuer/ClusterIssuer/org-ca';
    view.upstream = { source, kind: 'issuer' };
    view.upstreamProblemList = [
      { source, reason: 'request_denied' },
      { source, reason: 'no_anchor' },
      { source, reason: 'no_anchor' }, // two refusals of one reason are one series
      { source, reason: 'whatever the issuer said' as never },
      { source: 'issuer/ClusterIssuer/Org CA "quoted"', reason: 'issuer_missing' },
    ];
    s = await samples();
    expect(series(s, N.caUpstreamInfo).map((x) => [x.labels, x.value])).toEqual([[{ source, kind: 'issuer' }, 1]]);
    expect(series(s, N.caUpstreamProblem).map((x) => [x.labels, x.value])).toEqual([
      [{ source, reason: 'request_denied' }, 1],
      [{ source, reason: 'no_anchor' }, 1],
    ]);
    const messages = invalid.map((e) => e.message).join('\n');
    expect(messages).toContain('upstream problem reason "whatever the issuer said" is not one of too_large, malformed,');
    expect(messages).toContain('upstream source "issuer/ClusterIssuer/Org CA \\"quoted\\"" is not issuer/<Kind>/<name> or secret/<name>; entry skipped');

    view.leader = false;
    s = await samples();
    expect(series(s, N.caUpstreamInfo)).toEqual([]);
    expect(series(s, N.caUpstreamProblem)).toEqual([]);
    view.leader = true;
    view.upstreamProblemList = []; // resolved
    s = await samples();
    expect(series(s, N.caUpstreamProblem)).toEqual([]);
    expect(series(s, N.caUpstreamInfo)).toHaveLength(1);
  });

  it('take as source label only the names the controller writes: issuer/<Kind>[.<group>]/<name> or secret/<name>', () => {
    const valid: [string, 'issuer' | 'secret'][] = [
      ['issuer/ClusterIssuer/org-ca', 'issuer'],
      ['issuer/Issuer/team.ca', 'issuer'],
      ['issuer/AWSPCAClusterIssuer.awspca.cert-manager.io/pca', 'issuer'],
      ['secret/org-intermediate', 'secret'],
      [`secret/${'a'.repeat(63)}.${'b'.repeat(63)}`, 'secret'],
    ];
    for (const [source, kind] of valid) expect([source, isUpstreamSource(source, kind)]).toEqual([source, true]);
    const invalid: [unknown, 'issuer' | 'secret'][] = [
      ['secret/org-intermediate', 'issuer'],
      ['issuer/ClusterIssuer/org-ca', 'secret'],
      ['issuer/clusterIssuer/org-ca', 'issuer'],
      ['issuer/ClusterIssuer/org-ca/extra', 'issuer'],
      ['issuer/ClusterIssuer.Bad_Group/x', 'issuer'],
      ['issuer/ClusterIssuer/', 'issuer'],
      ['secret/', 'secret'],
      ['secret/UPPER', 'secret'],
      [`secret/${'a'.repeat(254)}`, 'secret'],
      ['self-signed', 'secret'],
      [42, 'secret'],
    ];
    for (const [source, kind] of invalid) expect([source, isUpstreamSource(source, kind)]).toEqual([source, false]);
  });

  it('name every reason of the core: its chain refusals and the upstream source own', () => {
    expect(UPSTREAM_PROBLEM_REASONS).toEqual(expect.arrayContaining([...CHAIN_REFUSAL_REASONS, 'anchors_unreadable', 'request_overdue', 'status_ca_mismatch']));
    expect(new Set(UPSTREAM_PROBLEM_REASONS).size).toBe(CHAIN_REFUSAL_REASONS.length + 9);
  });

  it('export the signing pause as a Unix time while it lasts, and no sample (not 0) otherwise', async () => {
    const { view, samples } = await setUp();
    let s = await samples();
    expect(series(s, N.caSigningPausedUntil)).toEqual([]);
    view.pausedUntil = T0 + 300_000;
    s = await samples();
    expect(valueOf(s, N.caSigningPausedUntil, {})).toBe((T0 + 300_000) / 1000);
    view.pausedUntil = undefined;
    s = await samples();
    expect(series(s, N.caSigningPausedUntil)).toEqual([]);
  });

  it('count CA failures from 0, on followers too, so increase() sees the first', async () => {
    const { view, metrics, samples } = await setUp();
    view.leader = false;
    let s = await samples();
    expect(valueOf(s, N.caCertificateRotationFailures, {})).toBe(0);
    metrics.recordCaRotationFailure();
    metrics.recordCaRotationFailure();
    s = await samples();
    expect(valueOf(s, N.caCertificateRotationFailures, {})).toBe(2);
  });
});

describe('ControllerMetrics pod certificates', () => {
  it('start every request series at 0 in pod-certificate mode, count by signer, result and reason, and refuse other labels', async () => {
    const clock = new TestClock(T0);
    const view = new ControllerView();
    const metrics = new ControllerMetrics({ now: clock.now, source: view, podCertificates: true });
    const scrape = await served.start(metrics.registry);
    let s = (await scrape()).samples;
    expect(valueOf(s, N.podCertificateRequests, { signer: 'server', result: 'denied', reason: 'NoProviderService' })).toBe(0);
    expect(valueOf(s, N.podCertificateRequests, { signer: 'client', result: 'failed', reason: 'CAUnavailable' })).toBe(0);
    metrics.recordPodCertificateRequest('server', 'denied', 'NoProviderService');
    metrics.recordPodCertificateRequest('server', 'issued', 'Issued');
    metrics.recordPodCertificateRequest('server', 'issued', 'Issued');
    s = (await scrape()).samples;
    expect(valueOf(s, N.podCertificateRequests, { signer: 'server', result: 'denied', reason: 'NoProviderService' })).toBe(1);
    expect(valueOf(s, N.podCertificateRequests, { signer: 'server', result: 'issued', reason: 'Issued' })).toBe(2);
    expect(() => metrics.recordPodCertificateRequest('server', 'issued', 'NoProviderService')).toThrow(MetricLabelError);
    expect(() => metrics.recordPodCertificateRequest('server', 'denied', 'tenant text')).toThrow(/is not a denied reason/);
  });

  it('export stale names per namespace from the leader only, and nothing without pod certificates', async () => {
    const { view, samples } = await setUp();
    view.staleNames.set('team-a', 3).set('team-b', 0);
    let s = await samples();
    expect(series(s, N.podCertificatesStaleNames)).toEqual([{ name: N.podCertificatesStaleNames, labels: { namespace: 'team-a' }, value: 3 }]);
    expect(series(s, N.podCertificateRequests)).toEqual([]);
    view.leader = false;
    s = await samples();
    expect(series(s, N.podCertificatesStaleNames)).toEqual([]);
  });
});

describe('ControllerMetrics instances', () => {
  it('never collide: two in one process keep their own registries and values', async () => {
    const one = await setUp();
    const two = await setUp();
    one.view.services = [{ namespace: 'n', service: 's', notAfter: T0 + DAY }];
    two.view.services = [{ namespace: 'n', service: 's', notAfter: T0 + 7 * DAY }];
    one.metrics.recordRotation('n', ['s'], 'forced');

    const [a, b] = [await one.samples(), await two.samples()];
    expect(valueOf(a, N.providerCertificateExpiry, { service: 's' })).toBe(86_400);
    expect(valueOf(b, N.providerCertificateExpiry, { service: 's' })).toBe(7 * 86_400);
    expect(valueOf(a, N.providerCertificateRotations, { reason: 'forced' })).toBe(1);
    expect(series(b, N.providerCertificateRotations)).toHaveLength(0);
    expect(one.metrics.registry).not.toBe(two.metrics.registry);
  });

  it('refuse to share a registry, with the duplicate metric named', () => {
    const view = new ControllerView();
    const first = new ControllerMetrics({ now: () => T0, source: view });
    expect(() => new ControllerMetrics({ registry: first.registry, now: () => T0, source: view })).toThrow(
      /eso_provider_certificate_expiry_seconds has already been registered/,
    );
  });
});

describe('ControllerMetrics leader election Lease gauge', () => {
  it('exports both reasons on every replica, leader or not, 1 for each the Lease is foreign by at the scrape', async () => {
    const view = new ControllerView();
    view.leader = false;
    let foreign: LeaderLeaseForeignReason[] = [];
    const metrics = new ControllerMetrics({ now: new TestClock(T0).now, source: view, leaderLease: () => foreign });
    const scrape = await served.start(metrics.registry);
    const lease = async (reason: LeaderLeaseForeignReason) => valueOf((await scrape()).samples, N.leaderLeaseForeign, { reason });
    expect([await lease('unknown_holder'), await lease('duration_too_long')]).toEqual([0, 0]);
    foreign = ['unknown_holder', 'duration_too_long'];
    expect([await lease('unknown_holder'), await lease('duration_too_long')]).toEqual([1, 1]);
    foreign = ['duration_too_long'];
    expect([await lease('unknown_holder'), await lease('duration_too_long')]).toEqual([0, 1]);
  });

  it('is not exported by a controller that reads no Lease (an embedder)', async () => {
    const { samples } = await setUp();
    expect(series(await samples(), N.leaderLeaseForeign)).toEqual([]);
  });
});
