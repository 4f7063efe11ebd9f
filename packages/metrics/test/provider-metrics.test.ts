import { afterEach, describe, expect, it } from '@jest/globals';
import { METRIC_NAMES, MetricLabelError, ProviderMetrics } from '@eso-mtls/metrics';
import { TestClock } from '@eso-mtls/test-kit/clock';
import { series, valueOf } from '@eso-mtls/test-kit/exposition';
import { Served } from './support/served.js';

const T0 = Date.UTC(2026, 10, 1, 12, 0, 0);
const DAY = 86_400_000;
const N = METRIC_NAMES;
const served = new Served();
afterEach(() => served.stop());

async function setUp(namespace = 'provider-aws', service = 'aws') {
  const clock = new TestClock(T0);
  let current: { notAfter: number; notBefore?: number } | undefined;
  const metrics = new ProviderMetrics({ namespace, service, source: 'secret', now: clock.now, servedCertificate: () => current });
  const scrape = await served.start(metrics.registry);
  return {
    clock,
    metrics,
    serve: (c: { notAfter: number; notBefore?: number } | undefined) => {
      current = c;
    },
    samples: async () => (await scrape()).samples,
  };
}

describe('ProviderMetrics', () => {
  it('exports both reload counters at 0 from the start, under its own namespace and service', async () => {
    const { samples } = await setUp();
    const s = await samples();
    expect(series(s, N.providerHotReloads)).toEqual([{ name: N.providerHotReloads, labels: { namespace: 'provider-aws', service: 'aws' }, value: 0 }]);
    expect(series(s, N.providerHotReloadFailures)).toEqual([
      { name: N.providerHotReloadFailures, labels: { namespace: 'provider-aws', service: 'aws' }, value: 0 },
    ]);
  });

  it('moves each counter by exactly one per recorded event', async () => {
    const { metrics, samples } = await setUp();
    metrics.recordReload();
    let s = await samples();
    expect(valueOf(s, N.providerHotReloads)).toBe(1);
    expect(valueOf(s, N.providerHotReloadFailures)).toBe(0);
    metrics.recordReloadFailure();
    metrics.recordReloadFailure();
    metrics.recordReload();
    s = await samples();
    expect(valueOf(s, N.providerHotReloads)).toBe(2);
    expect(valueOf(s, N.providerHotReloadFailures)).toBe(2);
  });

  it('computes the served certificate expiry at scrape time, absent before the first load', async () => {
    const { clock, serve, samples } = await setUp();
    expect(series(await samples(), N.providerServedCertificateExpiry)).toEqual([]);
    serve({ notAfter: T0 + 30 * DAY });
    expect(valueOf(await samples(), N.providerServedCertificateExpiry, { namespace: 'provider-aws', service: 'aws', source: 'secret' })).toBe(30 * 86_400);
    clock.advance(DAY);
    expect(valueOf(await samples(), N.providerServedCertificateExpiry)).toBe(29 * 86_400);
    serve({ notAfter: T0 + 91 * DAY }); // a reload swapped in the new pair
    expect(valueOf(await samples(), N.providerServedCertificateExpiry)).toBe(90 * 86_400);
  });

  it("exports the served certificate's lifetime when its notBefore is known, absent otherwise", async () => {
    const { clock, serve, samples } = await setUp();
    serve({ notAfter: T0 + 30 * DAY });
    expect(series(await samples(), N.providerServedCertificateLifetime)).toEqual([]);
    serve({ notBefore: T0 - 60 * DAY, notAfter: T0 + 30 * DAY });
    expect(series(await samples(), N.providerServedCertificateLifetime)).toEqual([
      { name: N.providerServedCertificateLifetime, labels: { namespace: 'provider-aws', service: 'aws', source: 'secret' }, value: 90 * 86_400 },
    ]);
    clock.advance(DAY); // a lifetime does not move with time
    expect(valueOf(await samples(), N.providerServedCertificateLifetime)).toBe(90 * 86_400);
    serve({ notBefore: T0 + 30 * DAY, notAfter: T0 + 30 * DAY });
    expect(series(await samples(), N.providerServedCertificateLifetime)).toEqual([]);
    serve(undefined);
    expect(series(await samples(), N.providerServedCertificateLifetime)).toEqual([]);
  });

  it('refuses a namespace or service that is not a Kubernetes name', () => {
    const base = { source: 'secret' as const, now: () => T0, servedCertificate: () => undefined };
    expect(() => new ProviderMetrics({ ...base, namespace: '', service: 'aws' })).toThrow(MetricLabelError);
    expect(() => new ProviderMetrics({ ...base, namespace: '', service: 'aws' })).toThrow(/namespace label ""/);
    expect(() => new ProviderMetrics({ ...base, namespace: 'ns', service: 'AWS' })).toThrow(/service label "AWS" in namespace ns/);
  });

  it('labels the served expiry with where the certificate comes from, and refuses an unknown source', async () => {
    const clock = new TestClock(T0);
    const metrics = new ProviderMetrics({
      namespace: 'provider-aws',
      service: 'aws',
      source: 'pod_certificate',
      now: clock.now,
      servedCertificate: () => ({ notAfter: T0 + DAY }),
    });
    const scrape = await served.start(metrics.registry);
    expect(series((await scrape()).samples, N.providerServedCertificateExpiry)).toEqual([
      { name: N.providerServedCertificateExpiry, labels: { namespace: 'provider-aws', service: 'aws', source: 'pod_certificate' }, value: 86_400 },
    ]);
    // The reload counters keep their two labels: only the expiry is compared with the controller's.
    expect(series((await scrape()).samples, N.providerHotReloads)[0]!.labels).toEqual({ namespace: 'provider-aws', service: 'aws' });
    const unknown = { namespace: 'ns', service: 'svc', source: 'pod-certificate' as 'secret', now: clock.now, servedCertificate: () => undefined };
    expect(() => new ProviderMetrics(unknown)).toThrow('source "pod-certificate" is not one of secret, pod_certificate');
  });

  it('never collides with another instance in the same process', async () => {
    const a = await setUp('ns-a', 'svc');
    const b = await setUp('ns-b', 'svc');
    a.metrics.recordReload();
    b.metrics.recordReloadFailure();
    a.serve({ notAfter: T0 + DAY });
    const [sa, sb] = [await a.samples(), await b.samples()];
    expect(series(sa, N.providerHotReloads).map((x) => [x.labels.namespace, x.value])).toEqual([['ns-a', 1]]);
    expect(series(sb, N.providerHotReloads).map((x) => [x.labels.namespace, x.value])).toEqual([['ns-b', 0]]);
    expect(valueOf(sb, N.providerHotReloadFailures)).toBe(1);
    expect(series(sb, N.providerServedCertificateExpiry)).toEqual([]);
    expect(valueOf(sa, N.providerServedCertificateExpiry)).toBe(86_400);
  });
});
