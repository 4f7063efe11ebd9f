import { describe, expect, it } from '@jest/globals';
import { TestClock } from '@eso-mtls/test-kit/clock';
import { converge, startAdapter } from '@eso-mtls/test-kit/adapter';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { text } from '@eso-mtls/test-kit/secrets';
import { FailingCrypto } from './support/failing-crypto.js';
import { useControlPlane } from '@eso-mtls/test-kit/installations';

// Flood control (issue 16, T6; docs/flood-control.md) on the real apiserver: the optional cap on
// namespaces served leaves out the newest, dated by their oldest labelled Service's
// creationTimestamp, with a Warning Event on each Service and a count in the metrics view; and
// leaves the bound defers wait for the backoff, not a second, when a round only fails.
const suite = useControlPlane();

/** creationTimestamp has whole seconds: a pause of more than one orders two creations. */
const nextSecond = (): Promise<void> => new Promise((r) => setTimeout(r, 1100));

describe('a cap on the namespaces served', () => {
  it('leaves out the newest namespaces, reports each, counts them, and lets none flap', async () => {
    const c = suite.cluster;
    const eso = await c.namespace('eso-cap');
    // Oldest first; the newest sorts first by name, so name order alone would serve it.
    for (const ns of ['cap-c', 'cap-b', 'cap-a']) {
      await c.namespace(ns);
      await c.labelledService(ns, 'provider');
      await nextSecond();
    }
    const run = await startAdapter(suite.plane.adminKubeConfig, eso, { now: new TestClock().now, maxNamespaces: 2 });
    try {
      await converge(run.adapter);
      expect(text(await c.secret('cap-c'), 'tls.crt')).toContain('BEGIN CERTIFICATE');
      expect(text(await c.secret('cap-b'), 'tls.crt')).toContain('BEGIN CERTIFICATE');
      expect(await c.secret('cap-a')).toBeUndefined();
      expect(run.adapter.lastRound?.plan.excluded.map((e) => e.namespace)).toEqual(['cap-a']);
      expect(run.adapter.status.namespacesNotServed()).toEqual({ cap: 1, not_allowed: 0 });
      await run.adapter.flushEvents();
      await eventually(async () =>
        expect(await c.events('cap-a', 'provider')).toEqual([
          expect.objectContaining({ type: 'Warning', reason: 'NamespaceNotServed', message: expect.stringContaining('at most 2 provider namespaces') }),
        ]),
      );
      expect(await c.events('cap-b', 'provider')).not.toContainEqual(expect.objectContaining({ reason: 'NamespaceNotServed' }));

      // The oldest is unlabelled: the left-out one takes its place.
      await c.deleteService('cap-c', 'provider');
      await eventually(async () => expect(text(await c.secret('cap-a'), 'tls.crt')).toContain('BEGIN CERTIFICATE'));
      await converge(run.adapter);
      expect(run.adapter.status.namespacesNotServed()).toEqual({ cap: 0, not_allowed: 0 });

      // Labelled again, it is now the newest: it waits behind the two served, which keep their certificates.
      await nextSecond();
      await c.labelledService('cap-c', 'provider');
      const served = [text(await c.secret('cap-a'), 'tls.crt'), text(await c.secret('cap-b'), 'tls.crt')];
      await eventually(() => expect(run.adapter.lastRound?.plan.excluded.map((e) => e.namespace)).toEqual(['cap-c']));
      await converge(run.adapter);
      expect([text(await c.secret('cap-a'), 'tls.crt'), text(await c.secret('cap-b'), 'tls.crt')]).toEqual(served);
      expect(run.adapter.status.namespacesNotServed()).toEqual({ cap: 1, not_allowed: 0 });
    } finally {
      await run.adapter.stop();
      for (const ns of ['cap-a', 'cap-b', 'cap-c']) await c.deleteService(ns, 'provider').catch(() => undefined);
    }
  }, 120_000);
});

describe('the bound on issuances per reconcile', () => {
  it('a round that only fails retries its deferred leaves with backoff, not a second later; then all are served', async () => {
    const c = suite.cluster;
    const eso = await c.namespace('eso-bound');
    const namespaces = ['bound-1', 'bound-2', 'bound-3', 'bound-4'];
    const crypto = new FailingCrypto();
    for (const ns of namespaces) crypto.failNamespaces.add(ns);
    const lines: string[] = [];
    const keep = (fields: Record<string, unknown>, message: string): void => void lines.push(`${message} ${JSON.stringify(fields)}`);
    const logger = { debug: keep, info: keep, warn: keep, error: keep };
    for (const ns of namespaces) {
      await c.namespace(ns);
      await c.labelledService(ns, 'provider');
    }
    const run = await startAdapter(suite.plane.adminKubeConfig, eso, { now: new TestClock().now, crypto, logger, maxIssuancesPerReconcile: 2 });
    try {
      await eventually(() => expect(run.adapter.lastRound?.plan.deferred.map((d) => d.reason)).toEqual(['initial', 'initial']));
      const failed = await run.adapter.reconcileNow();
      expect(failed).toMatchObject({ written: 0, failed: 2 });
      expect(failed!.plan.leaves).toHaveLength(2);
      expect(failed!.plan.deferred).toHaveLength(2);
      expect(failed!.plan.nextDueAt).toBeUndefined();
      // Visible, not an error: one summary line per reconcile interval (the test clock stands still),
      // however many rounds defer. The first round also issued the client's certificate.
      expect(run.adapter.rounds).toBeGreaterThan(2);
      expect(lines.filter((l) => l.includes('certificates deferred to the next reconciles by the bound on issuances'))).toEqual([
        expect.stringMatching(/^3 certificates deferred .*"byReason":\{"initial":3\}/),
      ]);

      crypto.failNamespaces.clear();
      await converge(run.adapter);
      for (const ns of namespaces) expect(text(await c.secret(ns), 'tls.crt')).toContain('BEGIN CERTIFICATE');
      expect(run.rotations.map((r) => r.namespace).sort()).toEqual(namespaces);
    } finally {
      await run.adapter.stop();
      for (const ns of namespaces) await c.deleteService(ns, 'provider').catch(() => undefined);
    }
  }, 120_000);
});
