import { describe, expect, it } from '@jest/globals';
import { TestClock } from '@eso-mtls/test-kit/clock';
import { converge, startAdapter } from '@eso-mtls/test-kit/adapter';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { text } from '@eso-mtls/test-kit/secrets';
import { useControlPlane } from '@eso-mtls/test-kit/installations';

// The controller's own namespace check (issue 16, T3; docs/label-policy.md) on the real apiserver:
// with a namespace requirement, labelled Services are served only in namespaces carrying the label,
// which the adapter watches with a label selector. The others get a Warning Event on each Service,
// a count in the metrics view, and no Secret; labelling the namespace serves it at once (the
// namespace watch triggers a reconcile), and removing the label stops renewals but never touches
// the Secret.
const suite = useControlPlane();

const LABEL = 'eso-mtls.io/providers-allowed';
const requirement = { key: LABEL, value: 'true' };

describe('a namespace requirement', () => {
  it('serves only labelled namespaces, reports the others, and follows the namespace label as it is added and removed', async () => {
    const c = suite.cluster;
    const eso = await c.namespace('eso-nsreq');
    for (const ns of ['nsreq-allowed', 'nsreq-denied', 'nsreq-wrong-value']) await c.namespace(ns);
    await c.core.patchNamespace({ name: 'nsreq-allowed', body: [{ op: 'add', path: '/metadata/labels', value: { [LABEL]: 'true' } }] });
    await c.core.patchNamespace({ name: 'nsreq-wrong-value', body: [{ op: 'add', path: '/metadata/labels', value: { [LABEL]: 'yes' } }] });
    for (const ns of ['nsreq-allowed', 'nsreq-denied', 'nsreq-wrong-value']) await c.labelledService(ns, 'provider');
    const run = await startAdapter(suite.plane.adminKubeConfig, eso, { now: new TestClock().now, namespaceRequirement: requirement });
    const setLabel = (name: string, value: string | undefined) =>
      c.core.patchNamespace({
        name,
        body: [
          value === undefined
            ? { op: 'remove', path: `/metadata/labels/${LABEL.replace('/', '~1')}` }
            : { op: 'add', path: '/metadata/labels', value: { [LABEL]: value } },
        ],
      });
    try {
      await converge(run.adapter);
      expect(text(await c.secret('nsreq-allowed'), 'tls.crt')).toContain('BEGIN CERTIFICATE');
      expect(await c.secret('nsreq-denied')).toBeUndefined();
      expect(await c.secret('nsreq-wrong-value')).toBeUndefined();
      const mine = (ns: readonly { namespace: string }[]) => ns.map((e) => e.namespace).filter((n) => n.startsWith('nsreq-'));
      expect(mine(run.adapter.lastRound!.plan.excluded)).toEqual(['nsreq-denied', 'nsreq-wrong-value']);
      expect(run.adapter.lastRound!.plan.excluded.every((e) => e.reason === 'not_allowed')).toBe(true);
      expect(run.adapter.status.namespacesNotServed().not_allowed).toBeGreaterThanOrEqual(2);
      // Only labelled namespaces are cached: names, no labels or anything else.
      expect(run.adapter.informers.namespaces?.get('', 'nsreq-allowed')?.metadata).toEqual({
        name: 'nsreq-allowed',
        uid: expect.any(String),
        resourceVersion: expect.any(String),
      });
      expect(run.adapter.informers.namespaces?.get('', 'nsreq-denied')).toBeUndefined();
      await run.adapter.flushEvents();
      await eventually(async () =>
        expect(await c.events('nsreq-denied', 'provider')).toEqual([
          expect.objectContaining({
            type: 'Warning',
            reason: 'NamespaceNotAllowed',
            message: expect.stringContaining(`kubectl label namespace nsreq-denied ${LABEL}=true`),
          }),
        ]),
      );
      expect(await c.events('nsreq-allowed', 'provider')).not.toContainEqual(expect.objectContaining({ reason: 'NamespaceNotAllowed' }));

      // An admin allows nsreq-denied: the namespace watch brings its certificate, with no Service event.
      await setLabel('nsreq-denied', 'true');
      await eventually(async () => expect(text(await c.secret('nsreq-denied'), 'tls.crt')).toContain('BEGIN CERTIFICATE'));
      await converge(run.adapter);
      expect(mine(run.adapter.lastRound!.plan.excluded)).toEqual(['nsreq-wrong-value']);

      // The label is taken away from nsreq-allowed: it is reported again, and its Secret stays exactly as it was.
      const kept = await c.secret('nsreq-allowed');
      await setLabel('nsreq-allowed', undefined);
      await eventually(() => expect(mine(run.adapter.lastRound!.plan.excluded)).toEqual(['nsreq-allowed', 'nsreq-wrong-value']));
      await converge(run.adapter);
      expect((await c.secret('nsreq-allowed'))?.metadata?.resourceVersion).toBe(kept?.metadata?.resourceVersion);
      await eventually(async () => expect((await c.events('nsreq-allowed', 'provider')).map((e) => e.reason)).toContain('NamespaceNotAllowed'));
    } finally {
      await run.adapter.stop();
      for (const ns of ['nsreq-allowed', 'nsreq-denied', 'nsreq-wrong-value']) await c.deleteService(ns, 'provider').catch(() => undefined);
    }
  }, 120_000);
});
