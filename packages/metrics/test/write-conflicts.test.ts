import { afterEach, describe, expect, it } from '@jest/globals';
import { ControllerMetrics, METRIC_NAMES, MetricLabelError, WRITE_CONFLICT_COMPONENTS, type WriteConflictComponent } from '@eso-mtls/metrics';
import { TestClock } from '@eso-mtls/test-kit/clock';
import { ControllerView } from './support/controller-view.js';
import { valueOf } from '@eso-mtls/test-kit/exposition';
import { Served } from './support/served.js';

const T0 = Date.UTC(2026, 10, 1, 12, 0, 0);
const N = METRIC_NAMES;

const served = new Served();
afterEach(() => served.stop());

describe('ControllerMetrics write conflicts', () => {
  it('start every component at 0, leader or not, count each conflict, and refuse another component', async () => {
    const view = new ControllerView();
    view.leader = false;
    const metrics = new ControllerMetrics({ now: new TestClock(T0).now, source: view });
    const scrape = await served.start(metrics.registry);
    let s = (await scrape()).samples;
    for (const component of WRITE_CONFLICT_COMPONENTS) expect([component, valueOf(s, N.secretWriteConflicts, { component })]).toEqual([component, 0]);
    metrics.recordWriteConflict('provider-tls');
    metrics.recordWriteConflict('provider-tls');
    metrics.recordWriteConflict('client-tls');
    s = (await scrape()).samples;
    expect(valueOf(s, N.secretWriteConflicts, { component: 'provider-tls' })).toBe(2);
    expect(valueOf(s, N.secretWriteConflicts, { component: 'client-tls' })).toBe(1);
    expect(valueOf(s, N.secretWriteConflicts, { component: 'ca' })).toBe(0);
    expect(() => metrics.recordWriteConflict('trust-bundle' as WriteConflictComponent)).toThrow(MetricLabelError);
  });
});
