import { afterEach, describe, expect, it } from '@jest/globals';
import { ControllerMetrics, METRIC_NAMES, MetricLabelError } from '@eso-mtls/metrics';
import { TestClock } from '@eso-mtls/test-kit/clock';
import { ControllerView } from './support/controller-view.js';
import { series, valueOf } from '@eso-mtls/test-kit/exposition';
import { Served } from './support/served.js';

const T0 = Date.UTC(2026, 10, 1, 12, 0, 0);
const N = METRIC_NAMES;

const served = new Served();
afterEach(() => served.stop());

describe('ControllerMetrics orphaned Secret deletions', () => {
  it('start both results at 0 with pruning on, count each deletion and failure, and refuse another result', async () => {
    const metrics = new ControllerMetrics({ now: new TestClock(T0).now, source: new ControllerView(), orphanPruning: true });
    const scrape = await served.start(metrics.registry);
    let s = (await scrape()).samples;
    expect(valueOf(s, N.orphanedSecretDeletions, { result: 'deleted' })).toBe(0);
    expect(valueOf(s, N.orphanedSecretDeletions, { result: 'failed' })).toBe(0);
    metrics.recordOrphanDeletion('deleted');
    metrics.recordOrphanDeletion('deleted');
    metrics.recordOrphanDeletion('failed');
    s = (await scrape()).samples;
    expect(valueOf(s, N.orphanedSecretDeletions, { result: 'deleted' })).toBe(2);
    expect(valueOf(s, N.orphanedSecretDeletions, { result: 'failed' })).toBe(1);
    expect(() => metrics.recordOrphanDeletion('kept' as 'deleted')).toThrow(MetricLabelError);
  });

  it('export no series while pruning is off', async () => {
    const metrics = new ControllerMetrics({ now: new TestClock(T0).now, source: new ControllerView() });
    const scrape = await served.start(metrics.registry);
    expect(series((await scrape()).samples, N.orphanedSecretDeletions)).toEqual([]);
  });
});
