// Holds the alert rules to the code: the names they read are the names the real exporters write
// over HTTP, and scrapes of the real exporters, replayed through promtool, fire the right alerts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { ControllerMetrics, type LeaderLeaseForeignReason, METRIC_NAMES, ProviderMetrics } from '@eso-mtls/metrics';
import { TestClock } from '@eso-mtls/test-kit/clock';
import { ControllerView } from './support/controller-view.js';
import type { Sample, Scrape } from '@eso-mtls/test-kit/exposition';
import { promtoolAlertTest } from '@eso-mtls/test-kit/alert-test';
import { promtool } from '@eso-mtls/test-kit/promtool';
import { repoRoot } from '@eso-mtls/test-kit/repo';
import { alertRules, metricsReadBy } from './support/rules.js';
import { Served } from './support/served.js';

const T0 = Date.UTC(2026, 10, 1, 12, 0, 0);
const DAY = 86_400_000;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const served = new Served();
afterAll(() => served.stop());

/** A controller and one provider, both real, both scraped over HTTP, with a clock we move. */
async function system(options: { leader: boolean }) {
  const clock = new TestClock(T0);
  const view = new ControllerView();
  view.leader = options.leader;
  view.services = [
    { namespace: 'provider-aws', service: 'aws', notAfter: T0 + 2 * DAY },
    { namespace: 'provider-vault', service: 'vault', notAfter: T0 + 90 * DAY },
  ];
  view.client = { notAfter: T0 + DAY };
  view.cas = [
    { state: 'active', notAfter: T0 + 20 * DAY },
    { state: 'next', notAfter: T0 + 385 * DAY },
  ];
  view.refused = [{ namespace: 'provider-aws', service: 'aws', reason: 'certificate_too_large' }];
  view.pausedUntil = T0 + 5 * MINUTE;
  view.notServed = { cap: 3, not_allowed: 1 };
  view.leftBehind = [{ namespace: 'provider-aws', reason: 'immutable' }];
  view.upstream = { source: 'issuer/ClusterIssuer/org-ca', kind: 'issuer' };
  // Every replica, leader or not, judges the leader election Lease it reads.
  const lease = { foreign: [] as LeaderLeaseForeignReason[] };
  // Every replica, too, counts the pending PodCertificateRequests its bound keeps out of memory.
  const pending = { notHeld: { namespace: 0, total: 0 } };
  const controller = new ControllerMetrics({
    now: clock.now,
    source: view,
    podCertificates: true,
    orphanPruning: true,
    leaderLease: () => lease.foreign,
    podRequestsNotHeld: () => pending.notHeld,
  });
  // The vault provider still serves the certificate from before the last rotation.
  const provider = new ProviderMetrics({
    namespace: 'provider-vault',
    service: 'vault',
    source: 'secret',
    now: clock.now,
    servedCertificate: () => ({ notBefore: T0 - 35 * DAY, notAfter: T0 + 55 * DAY }),
  });
  // The aws provider serves a 24-hour pod certificate, refreshed on time unless a test stops it.
  const pod = { notBefore: T0 - 16 * HOUR, notAfter: T0 + 8 * HOUR };
  const podProvider = new ProviderMetrics({
    namespace: 'provider-aws',
    service: 'aws',
    source: 'pod_certificate',
    now: clock.now,
    servedCertificate: () => pod,
  });
  const targets = [
    { labels: { job: 'eso-mtls-controller', instance: 'controller-0:8080' }, scrape: await served.start(controller.registry) },
    { labels: { job: 'providers', instance: 'vault-1:8081' }, scrape: await served.start(provider.registry) },
    { labels: { job: 'providers', instance: 'aws-1:8081' }, scrape: await served.start(podProvider.registry) },
  ];
  return { clock, view, lease, pending, controller, provider, pod, targets };
}

type System = Awaited<ReturnType<typeof system>>;

/** Scrapes every target once a minute for `minutes` minutes; `step` runs before each scrape. */
async function record(sys: System, minutes: number, step: (minute: number) => void = () => undefined) {
  const series = new Map<string, (number | undefined)[]>();
  const bodies: Scrape[] = [];
  for (let minute = 0; minute <= minutes; minute++) {
    step(minute);
    for (const target of sys.targets) {
      const scrape = await target.scrape();
      bodies.push(scrape);
      for (const s of scrape.samples) {
        const key = seriesName(s, target.labels);
        const values = series.get(key) ?? [];
        values[minute] = s.value;
        series.set(key, values);
      }
    }
    sys.clock.advance(MINUTE);
  }
  const inputSeries = [...series].map(([name, values]) => ({
    series: name,
    values: Array.from({ length: minutes + 1 }, (_, i) => (values[i] === undefined ? '_' : String(values[i]))).join(' '),
  }));
  return { inputSeries, bodies };
}

function seriesName(s: Sample, targetLabels: Record<string, string>): string {
  const labels = { ...s.labels, ...targetLabels };
  const text = Object.keys(labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k as keyof typeof labels])}`)
    .join(',');
  return `${s.name}{${text}}`;
}

function firing(alertname: string, labels: Record<string, string>): { labels: string; value: number } {
  const severity = alertRules().find((r) => r.alert === alertname)!.labels.severity!;
  const all = { alertname, alertstate: 'firing', severity, ...labels };
  return {
    labels: `ALERTS{${Object.entries(all)
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      .join(',')}}`,
    value: 1,
  };
}

/** Runs promtool over the real rule file and the recorded series; returns its output on failure. */
function promtoolExpectsFiring(inputSeries: { series: string; values: string }[], evalMinute: number, expected: { labels: string; value: number }[]) {
  return promtoolAlertTest(inputSeries, 'ALERTS{alertstate="firing"}', evalMinute, expected);
}

describe('the alert rules and the real exporters', () => {
  it('read only metric names that the exporters write over HTTP, and the docs describe every one', async () => {
    const sys = await system({ leader: true });
    sys.controller.recordRotation('provider-aws', ['aws'], 'initial');
    sys.controller.recordPodCertificateRequest('server', 'denied', 'NoProviderService');
    sys.view.staleNames.set('provider-aws', 1);
    sys.view.upstreamProblemList = [{ source: 'issuer/ClusterIssuer/org-ca', reason: 'request_denied' }];
    const { bodies } = await record(sys, 0);
    const exported = new Set(bodies.flatMap((b) => b.samples.map((s) => s.name)));
    expect([...exported].sort()).toEqual(Object.values(METRIC_NAMES).sort());

    const read = new Set(alertRules().flatMap((r) => metricsReadBy(r.expr)));
    // Every metric but the two success counters, which no alert needs; the signing pause: an
    // expected wait of minutes, shown by `status`, and a leaf it holds back too long alerts by its
    // expiry; and stale pod certificate names, expected after any Service change until each pod's
    // next refresh (hours with the recommended 24-hour leaves), shown on the dashboard.
    const unalerted: string[] = [
      METRIC_NAMES.providerCertificateRotations,
      METRIC_NAMES.providerHotReloads,
      METRIC_NAMES.caSigningPausedUntil,
      METRIC_NAMES.podCertificatesStaleNames,
      // Which upstream source is configured: a fact, not a fault; its problems have their own gauge.
      METRIC_NAMES.caUpstreamInfo,
      // Orphaned Secret deletions: a failed one leaves the Secret as it was without pruning, so nothing
      // any provider uses breaks; the error line and the Warning Event PruneFailed carry it.
      METRIC_NAMES.orphanedSecretDeletions,
    ];
    expect([...read].sort()).toEqual(
      Object.values(METRIC_NAMES)
        .filter((n) => !unalerted.includes(n))
        .sort(),
    );
    for (const name of read) expect([name, exported.has(name)]).toEqual([name, true]);

    const docs = readFileSync(join(repoRoot, 'docs/metrics.md'), 'utf8');
    for (const name of exported) expect([name, docs.includes(`\`${name}\``)]).toEqual([name, true]);
  });

  it('write expositions that promtool check metrics accepts', async () => {
    const sys = await system({ leader: true });
    sys.controller.recordRotation('provider-aws', ['aws'], 'expiring');
    sys.provider.recordReload();
    const { bodies } = await record(sys, 0);
    for (const body of bodies) {
      const r = promtool(['check', 'metrics'], body.body);
      expect([r.status, r.stdout + r.stderr]).toEqual([0, '']);
    }
  });

  it('fire exactly the expected alerts on twenty minutes of real scrapes from a leader and a provider', async () => {
    const sys = await system({ leader: true });
    const { inputSeries } = await record(sys, 20, (minute) => {
      if (minute === 5) sys.controller.recordRotation('provider-vault', ['vault'], 'expiring');
      // Requests beyond the bound, standing longer than the alert's 10 minutes.
      if (minute === 5) sys.pending.notHeld = { namespace: 120, total: 0 };
      // The aws pod's kubelet stopped refreshing: its certificate has 5 hours left (under a quarter).
      if (minute === 5) Object.assign(sys.pod, { notBefore: T0 - 19 * HOUR, notAfter: T0 + 5 * HOUR });
      // Denied from minute 0, standing past the alert's 15 minutes; overdue from minute 10, not yet.
      if (minute === 0) sys.view.upstreamProblemList = [{ source: 'issuer/ClusterIssuer/org-ca', reason: 'request_denied' }];
      if (minute === 10) sys.view.upstreamProblemList.push({ source: 'issuer/ClusterIssuer/org-ca', reason: 'request_overdue' });
      if (minute === 10) {
        sys.controller.recordRotationFailure('provider-aws', ['aws']);
        sys.controller.recordCaRotationFailure();
        sys.provider.recordReloadFailure();
        sys.controller.recordPodCertificateRequest('server', 'denied', 'NoProviderService');
        sys.controller.recordPodCertificateRequest('client', 'issued', 'Issued');
        sys.controller.recordWriteConflict('provider-tls');
        sys.lease.foreign = ['unknown_holder', 'duration_too_long'];
      }
    });
    const controller = { job: 'eso-mtls-controller', instance: 'controller-0:8080' };
    const vaultPod = { job: 'providers', instance: 'vault-1:8081', namespace: 'provider-vault', service: 'vault' };
    const r = promtoolExpectsFiring(inputSeries, 20, [
      firing('EsoCaCertificateExpiringSoon', { ...controller, state: 'active' }),
      firing('EsoCaCertificateRotationFailed', {}),
      firing('EsoCaRotationNamespaceLeftBehind', { namespace: 'provider-aws', reason: 'immutable' }),
      firing('EsoCaUpstreamProblem', { source: 'issuer/ClusterIssuer/org-ca', reason: 'request_denied' }),
      firing('EsoClientCertificateExpiringSoon', controller),
      firing('EsoLeaderLeaseForeign', { reason: 'duration_too_long' }),
      firing('EsoLeaderLeaseForeign', { reason: 'unknown_holder' }),
      firing('EsoPodCertificateRequestsNotHeld', { bound: 'namespace' }),
      firing('EsoPodCertificateRequestsRefused', { signer: 'server', result: 'denied', reason: 'NoProviderService' }),
      firing('EsoProviderCertificateExpiringSoon', { ...controller, namespace: 'provider-aws', service: 'aws' }),
      firing('EsoProviderCertificateHotReloadFailed', vaultPod),
      firing('EsoProviderCertificateRotationFailed', { namespace: 'provider-aws', service: 'aws' }),
      firing('EsoProviderNamespacesNotAllowed', {}),
      firing('EsoProviderNamespacesNotServed', {}),
      firing('EsoProviderPodCertificateNotRefreshed', {
        job: 'providers',
        instance: 'aws-1:8081',
        namespace: 'provider-aws',
        service: 'aws',
        source: 'pod_certificate',
      }),
      firing('EsoProviderServiceRefused', { namespace: 'provider-aws', service: 'aws', reason: 'certificate_too_large' }),
      firing('EsoProviderServingStaleCertificate', { ...vaultPod, source: 'secret' }),
      firing('EsoSecretWriteConflict', { component: 'provider-tls' }),
    ]);
    expect([r.status, r.stdout + r.stderr]).toEqual([0, expect.stringContaining('SUCCESS')]);
  });

  it('fire only EsoControllerMetricsAbsent when the controller replica scraped is not the leader (its Lease gauge at 0)', async () => {
    const sys = await system({ leader: false });
    const { inputSeries } = await record(sys, 20);
    const r = promtoolExpectsFiring(inputSeries, 20, [firing('EsoControllerMetricsAbsent', { state: 'active' })]);
    expect([r.status, r.stdout + r.stderr]).toEqual([0, expect.stringContaining('SUCCESS')]);
  });
});
