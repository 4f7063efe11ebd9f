import { describe, expect, it } from '@jest/globals';
import { PROVIDER_LABEL, type Policy, seconds } from '@eso-mtls/core';
import type { Logger } from '../src/index.js';
import { type RecordingAdapter, converge, startAdapter } from '@eso-mtls/test-kit/adapter';
import { TestClock } from '@eso-mtls/test-kit/clock';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { useControlPlane } from '@eso-mtls/test-kit/installations';

/**
 * Scale: 600 labelled Services in one namespace (the count issue 23 measured at), one adapter, on
 * the real apiserver. The test takes about 50 s on a 2-core machine at a load of 15-20 (plus the
 * control plane's start), most of it creating the Services and converging after each change.
 *
 * A namespace's Services share one Secret, so a change of one of them is one change: the log
 * volume and the Events it costs are bounded by constants, whatever the namespace's size.
 * Measured: about 400 bytes, one line and 10 Events per change. Before, every change logged one
 * line per Service quoting every name of the namespace (27.6 MB per change here) and recorded an
 * Event on each Service (601).
 */
const SERVICES = 600;
/** Bytes of log records (message and fields as text) one change may cost: its line and a few more. */
const MAX_LOG_BYTES_PER_CHANGE = 4 * 1024;
/** Events one change may record: the Services it names (MAX_SERVICES_REPORTED, 10). */
const MAX_EVENTS_PER_CHANGE = 10;
const FAST: Partial<Policy> = { propagationDelay: seconds(2), maxConnectionAge: seconds(2) };

const suite = useControlPlane();

/** A logger that keeps every record as text, to measure what reaches the logs. */
function measuringLogger(): Logger & { lines: { text: string; message: string; fields: Record<string, unknown> }[]; bytes: () => number } {
  const lines: { text: string; message: string; fields: Record<string, unknown> }[] = [];
  const keep = (fields: Record<string, unknown>, message: string): void => void lines.push({ text: `${message} ${JSON.stringify(fields)}`, message, fields });
  return { lines, bytes: () => lines.reduce((n, l) => n + Buffer.byteLength(l.text), 0), debug: keep, info: keep, warn: keep, error: keep };
}

/** Runs `count` tasks, `width` at a time. */
async function inParallel(count: number, width: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

const serviceName = (i: number): string => `svc-${String(i).padStart(3, '0')}`;

describe(`one namespace with ${SERVICES} labelled Services`, () => {
  it('each change (add, remove, label toggles) costs a bounded number of log bytes and Events, and the Service it is about gets its Event', async () => {
    const c = suite.cluster;
    const eso = await c.namespace('eso-scale');
    const ns = await c.namespace('scale');
    await inParallel(SERVICES, 8, (i) => c.labelledService(ns, serviceName(i)));
    const logger = measuringLogger();
    const clock = new TestClock();
    const run: RecordingAdapter = await startAdapter(suite.plane.adminKubeConfig, eso, { now: clock.now, policy: FAST, logger });
    try {
      await converge(run.adapter);
      await run.adapter.flushEvents();
      expect(run.reasonsFor(`namespace/${ns}`)).toEqual(['initial']);

      const measured: { change: string; logBytes: number; logLines: number; events: number }[] = [];
      /** Makes one change, waits for its write and for the adapter to settle, and measures what it cost. */
      const change = async (what: string, act: () => Promise<void>): Promise<void> => {
        const [bytes, lines, writes] = [logger.bytes(), logger.lines.length, run.writes.length];
        const events = run.adapter.eventStats.created + run.adapter.eventStats.patched;
        await act();
        await eventually(() => run.writes.length > writes);
        await converge(run.adapter);
        await run.adapter.flushEvents();
        measured.push({
          change: what,
          logBytes: logger.bytes() - bytes,
          logLines: logger.lines.length - lines,
          events: run.adapter.eventStats.created + run.adapter.eventStats.patched - events,
        });
      };

      await change('add svc-new', () => c.labelledService(ns, 'svc-new'));
      await change('remove svc-000', () => c.deleteService(ns, serviceName(0)));
      for (let i = 0; i < 3; i++) {
        await change('unlabel svc-100', () => c.patchService(ns, serviceName(100), (labels) => delete labels[PROVIDER_LABEL]));
        await change('label svc-100', () => c.patchService(ns, serviceName(100), (labels) => (labels[PROVIDER_LABEL] = 'true')));
      }
      // Printed for the report and docs: what each change cost.
      process.stdout.write(`${JSON.stringify(measured)}\n`);
      expect(run.reasonsFor(`namespace/${ns}`)).toEqual(['initial', ...Array(8).fill('dns_changed')]);
      for (const m of measured) {
        expect([m.change, m.logBytes <= MAX_LOG_BYTES_PER_CHANGE, m.events <= MAX_EVENTS_PER_CHANGE]).toEqual([m.change, true, true]);
      }

      // One line per change, naming the count and, first, the Service the change is about.
      const issued = logger.lines.filter((l) => l.message.startsWith('certificate issued') && l.fields.namespace === ns);
      expect(issued.map((l) => [l.fields.services, (l.fields.sample as string[])[0]])).toEqual([
        [SERVICES, serviceName(0)],
        [SERVICES + 1, 'svc-new'],
        [SERVICES, serviceName(1)],
        ...Array(3)
          .fill(0)
          .flatMap(() => [
            [SERVICES - 1, serviceName(1)],
            [SERVICES, serviceName(100)],
          ]),
      ]);

      // `kubectl describe svc svc-new` shows why its certificate was issued; the Events are on the
      // apiserver as counted, each message within the 1 KiB events.k8s.io allows a note.
      const onNew = await c.events(ns, 'svc-new');
      expect(onNew.map((e) => [e.reason, e.message.includes('reason: dns_changed'), e.message.includes('added [svc-new')])).toEqual([['Rotated', true, true]]);
      const all = (await c.core.listNamespacedEvent({ namespace: ns })).items;
      const rotations = all.filter((e) => e.reason === 'Issued' || e.reason === 'Rotated');
      expect(rotations.length).toBeLessThanOrEqual(MAX_EVENTS_PER_CHANGE * (1 + measured.length));
      for (const e of all) expect(Buffer.byteLength(e.message ?? '')).toBeLessThanOrEqual(1024);
      expect(run.failures).toEqual([]);
    } finally {
      await run.adapter.stop();
    }
  }, 300_000);
});
