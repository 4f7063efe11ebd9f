import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RbacAuthorizationV1Api, type V1Secret } from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import {
  Informer,
  type InformerEvent,
  type InformerOptions,
  KubeRestClient,
  type ListPage,
  type Watcher,
  connectionFromKubeConfig,
  corePath,
} from '../src/index.js';
import { ClusterInformers } from '../src/informers/cluster-informers.js';
import { installationOf } from '../src/installation/installation.js';
import { RequestCounter } from '../src/client/request-counter.js';
import { TestCluster, converge, startAdapter } from '@eso-mtls/test-kit/adapter';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { text } from '@eso-mtls/test-kit/secrets';
import { FakeTimers } from './support/fake-timers.js';

// Watches end every 3-6 s (the apiserver picks timeouts in [min-request-timeout, 2x]), so a
// 12-second run sees at least two watch timeouts per informer, each to resume without a relist.
const MIN_REQUEST_TIMEOUT = 3;

let plane: ControlPlane;
let cluster: TestCluster;

beforeAll(async () => {
  plane = await startControlPlane({ apiServerFlags: [`--min-request-timeout=${MIN_REQUEST_TIMEOUT}`], identities: [{ name: 'late-bloomer' }] });
  cluster = new TestCluster(plane);
}, 120_000);

afterAll(async () => {
  await plane?.stop();
});

/** Creates and updates unrelated Secrets until stopped; `last` is the latest resourceVersion it wrote. */
function churn(namespace: string): { last: () => string; writes: () => number; stop: () => Promise<{ writes: number }> } {
  let stopped = false;
  let writes = 0;
  let last = '0';
  const loop = (async () => {
    while (!stopped) {
      const name = `unrelated-${writes % 20}`;
      const body = { metadata: { name }, stringData: { n: String(writes) } };
      const s = await cluster.core.replaceNamespacedSecret({ namespace, name, body }).catch(() => cluster.core.createNamespacedSecret({ namespace, body }));
      last = s.metadata?.resourceVersion ?? last;
      writes++;
      await new Promise((r) => setTimeout(r, 25));
    }
  })();
  return {
    last: () => last,
    writes: () => writes,
    stop: async () => {
      stopped = true;
      await loop;
      return { writes };
    },
  };
}

describe('list+watch on the real apiserver', () => {
  it('resumes each timed-out watch from bookmarks despite unrelated Secret churn: no relist, and no LIST/GET or write in steady state', async () => {
    const eso = await cluster.namespace('eso-bookmarks');
    const ns = await cluster.namespace('bm-provider');
    const noise = await cluster.namespace('bm-noise');
    await cluster.labelledService(ns, 'p');
    const run = await startAdapter(plane.adminKubeConfig, eso);
    try {
      await eventually(async () => expect(text(await cluster.secret(ns), 'tls.crt')).toContain('BEGIN CERTIFICATE'));
      await converge(run.adapter);
      const requests = run.adapter.requests.snapshot();
      const stats = { ...run.adapter.informerStats() };
      const resumeFrom = BigInt(run.adapter.informers.providerSecrets.lastResourceVersion!);
      const rounds = run.adapter.rounds;

      const noiseMaker = churn(noise);
      await new Promise((r) => setTimeout(r, 6_000));
      const midChurn = BigInt(noiseMaker.last());
      await new Promise((r) => setTimeout(r, 6_000));
      // A loaded machine writes fewer Secrets in those 12 s: the churn goes on until it has made
      // enough to matter, however long that takes.
      await eventually(() => expect(noiseMaker.writes()).toBeGreaterThan(100), 120_000);
      const { writes } = await noiseMaker.stop();
      await new Promise((r) => setTimeout(r, 2 * MIN_REQUEST_TIMEOUT * 1000)); // let a bookmark follow

      const after = run.adapter.informerStats();
      expect(writes).toBeGreaterThan(100);
      // Every informer's watch timed out several times and resumed...
      expect(after.watches - stats.watches).toBeGreaterThanOrEqual(4 * 2);
      expect(after.bookmarks - stats.bookmarks).toBeGreaterThan(0);
      // ...without a 410 or a relist, and the only requests were watches.
      expect({ lists: after.lists - stats.lists, expired: after.expired - stats.expired, errors: after.errors - stats.errors }).toEqual({
        lists: 0,
        expired: 0,
        errors: 0,
      });
      const since = run.adapter.requests.since(requests);
      expect(Object.keys(since).filter((k) => !k.startsWith('watch '))).toEqual([]);
      expect(since['watch secrets']).toBeGreaterThan(0);
      // The resume point followed the churn although no watched Secret changed: that is what
      // keeps it inside the apiserver's watch window however long the churn goes on.
      const resumeNow = BigInt(run.adapter.informers.providerSecrets.lastResourceVersion!);
      expect(midChurn).toBeGreaterThan(resumeFrom);
      expect(resumeNow).toBeGreaterThanOrEqual(midChurn);
      // Bookmarks are not changes: nothing was reconciled because of them.
      expect(run.adapter.rounds - rounds).toBeLessThanOrEqual(1);
    } finally {
      await run.adapter.stop();
      await cluster.deleteService(ns, 'p');
    }
  }, 180_000);

  it('relists only on 410 Gone: not for the connection errors of a kube-apiserver restart', async () => {
    const counter = new RequestCounter();
    const clients = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig), { counter });
    const errors: string[] = [];
    // The apiserver keeps at least 75 s of watch history, so a real 410 cannot be had in a short
    // test; this rare fault alone is injected: once armed, the next resumed watch is answered 410 Expired.
    let armed = false;
    let injected = 0;
    const expiringOnce: Watcher = {
      watch: (path, query, onEvent, done) => {
        if (armed && query.resourceVersion) {
          armed = false;
          injected++;
          setImmediate(() => {
            onEvent('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' });
            done(null);
          });
          return Promise.resolve({ abort: () => undefined });
        }
        return clients.watch(path, query, onEvent, done);
      },
    };
    const informer: Informer<V1Secret> = new Informer<V1Secret>(
      {
        description: 'test Secrets',
        resource: 'secrets',
        list: (page) => clients.get<ListPage<V1Secret>>(corePath('secrets'), { fieldSelector: 'metadata.name=relist-me', ...page }),
        watchPath: '/api/v1/secrets',
        fieldSelector: 'metadata.name=relist-me',
      },
      { watch: expiringOnce, counter, onError: (e) => errors.push(e.message), backoff: { initialMs: 100, maxMs: 1000 } },
    );
    const ns = await cluster.namespace('relist');
    const seen: InformerEvent<V1Secret>[] = [];
    informer.onChange((e) => seen.push(e));
    informer.start();
    try {
      await informer.synced;
      await plane.stopApiServer();
      await plane.startApiServer();
      await cluster.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'relist-me' }, stringData: { a: 'b' } } });
      await eventually(() => expect(informer.get(ns, 'relist-me')).toBeDefined(), 30_000);
      // Connection errors while the apiserver was down were retried with backoff, not relisted;
      // the restarted apiserver may or may not still serve our resourceVersion (a real 410 then).
      expect(errors.length).toBeGreaterThan(0);
      const afterRestart = { ...informer.stats };
      expect(afterRestart.lists).toBe(1 + afterRestart.expired);
      expect(seen.map((e) => e.type)).toEqual(['ADDED']);

      // A 410 is the one thing that makes it list again (at the next watch, after the current one
      // times out); the cache is then unchanged.
      armed = true;
      await eventually(() => injected === 1 && informer.stats.lists === afterRestart.lists + 1, 30_000);
      expect(informer.stats.expired).toBe(afterRestart.expired + 1);
      expect(counter.count('list', 'secrets')).toBe(informer.stats.lists);
      expect(informer.get(ns, 'relist-me')).toBeDefined();
      expect(seen.map((e) => e.type)).toEqual(['ADDED']);
    } finally {
      await informer.stop();
      clients.close();
    }
  }, 60_000);

  it('restarts with backoff after errors (403 until RBAC allows it) instead of stopping', async () => {
    const kubeConfig = plane.kubeconfigFor('late-bloomer');
    const counter = new RequestCounter();
    const clients = new KubeRestClient(await connectionFromKubeConfig(kubeConfig), { counter });
    const ns = await cluster.namespace('late');
    const errors: string[] = [];
    const informer = new Informer<V1Secret>(
      {
        description: `Secrets in ${ns}`,
        resource: 'secrets',
        list: (page) => clients.get<ListPage<V1Secret>>(corePath('secrets', ns), page),
        watchPath: `/api/v1/namespaces/${ns}/secrets`,
      },
      { watch: clients, counter, onError: (e) => errors.push(e.message), backoff: { initialMs: 100, maxMs: 2000 } },
    );
    informer.start();
    try {
      await new Promise((r) => setTimeout(r, 3000));
      expect(informer.hasSynced).toBe(false);
      // Exponential backoff: at most a handful of attempts in 3 s, not a hot loop (a slow machine makes fewer).
      expect(errors.length).toBeLessThanOrEqual(8);
      // And it keeps trying: however long each attempt takes here, more come.
      await eventually(() => errors.length >= 3, 30_000);
      expect(errors[0]).toMatch(/^Secrets in late: .*403/);

      const rbac = plane.adminKubeConfig.makeApiClient(RbacAuthorizationV1Api);
      await rbac.createNamespacedRole({
        namespace: ns,
        body: { metadata: { name: 'read' }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['list', 'watch'] }] },
      });
      await rbac.createNamespacedRoleBinding({
        namespace: ns,
        body: {
          metadata: { name: 'read' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read' },
          subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'late-bloomer' }],
        },
      });
      await eventually(() => informer.hasSynced, 15_000);
      await cluster.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'hello' }, stringData: { a: 'b' } } });
      await eventually(() => expect(informer.get(ns, 'hello')).toBeDefined());
    } finally {
      await informer.stop();
      clients.close();
    }
  }, 60_000);

  it('a resource that may be unserved: synced and empty while its CRD is missing, filled once it is installed, emptied when it is removed; never an error', async () => {
    const crds = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
    const group = 'informer-test.eso-mtls.test';
    const collection = `/apis/${group}/v1/widgets`;
    const counter = new RequestCounter();
    const clients = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig), { counter });
    const errors: string[] = [];
    const events: string[] = [];
    type Widget = { metadata?: { name?: string; namespace?: string; resourceVersion?: string } };
    const informer = new Informer<Widget>(
      {
        description: 'widgets',
        resource: 'widgets',
        list: (page) => clients.get<ListPage<Widget>>(collection, page),
        watchPath: collection,
        mayBeUnserved: true,
      },
      { watch: clients, counter, onError: (e) => errors.push(e.message), unservedRelistMs: 200 },
    );
    informer.onChange((e) => events.push(`${e.type} ${e.object.metadata?.name}`));
    const established = (served: boolean) =>
      eventually(async () => {
        const crd = await clients.get<{ status?: { conditions?: { type: string; status: string }[] } }>(`${crds}/widgets.${group}`).catch(() => undefined);
        return served === (crd?.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false);
      }, 60_000);
    informer.start();
    try {
      await informer.synced;
      expect(informer.served).toBe(false);
      expect(informer.size).toBe(0);

      await clients.create(crds, {
        metadata: { name: `widgets.${group}` },
        spec: {
          group,
          scope: 'Cluster',
          names: { kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList' },
          versions: [
            { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } },
          ],
        },
      });
      await established(true);
      await eventually(() => informer.served, 30_000);
      await clients.create(collection, { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'one' } });
      await eventually(() => informer.get('', 'one') !== undefined, 30_000);

      await clients.request('DELETE', `${crds}/widgets.${group}`);
      await eventually(() => !informer.served, 60_000);
      expect(informer.size).toBe(0);
      expect(events).toEqual(['ADDED one', 'DELETED one']);
      expect(errors).toEqual([]);
    } finally {
      await informer.stop();
      clients.close();
    }
  }, 180_000);
});

describe('watch timing on injected timers, against the real apiserver', () => {
  let clients: KubeRestClient;
  beforeAll(async () => {
    clients = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig), { counter: new RequestCounter() });
  });
  afterAll(() => clients?.close());

  // random 0 draws the lowest delay: half the ceiling, which doubles from 1 s with each failure.
  const backoff = { initialMs: 1000, maxMs: 30_000, random: () => 0 };
  const backingOff = (ms: number) => [{ inMs: ms, unref: false }];
  const guarding = (watchTimeoutSeconds: number) => [{ inMs: (watchTimeoutSeconds + 60) * 1000, unref: true }];

  /**
   * An informer of one Secret (absent) on fake timers. `opened` counts the watches the apiserver
   * accepted; `onOpen` runs as each opens, with the timers then pending.
   */
  function timedInformer(
    timers: FakeTimers,
    tuning: Partial<InformerOptions>,
    onOpen: (n: number, pending: ReturnType<FakeTimers['pending']>) => void = () => undefined,
  ) {
    const watched = { opened: 0 };
    const watch: Watcher = {
      watch: async (path, query, onEvent, done) => {
        const handle = await clients.watch(path, query, onEvent, done);
        onOpen(++watched.opened, timers.pending());
        return handle;
      },
    };
    const errors: string[] = [];
    const informer = new Informer<V1Secret>(
      {
        description: 'Secret never-there',
        resource: 'secrets',
        list: (page) => clients.get<ListPage<V1Secret>>(corePath('secrets'), { fieldSelector: 'metadata.name=never-there', ...page }),
        watchPath: '/api/v1/secrets',
        fieldSelector: 'metadata.name=never-there',
      },
      { watch, counter: new RequestCounter(), timers, backoff, onError: (e) => errors.push(e.message), ...tuning },
    );
    return { informer, watched, errors };
  }

  /** Lets the informer act on what the last advance woke. */
  const settle = () => new Promise((r) => setImmediate(r));

  it('backs off from a watch that closes at once having seen nothing, and re-watches at once after one that ran a second', async () => {
    const timers = new FakeTimers();
    const atOpen: ReturnType<FakeTimers['pending']>[] = [];
    // The apiserver ends each watch after 1 s of real time; the injected clock says how long it ran.
    const { informer, watched, errors } = timedInformer(timers, { watchTimeoutSeconds: 1 }, (n, pending) => {
      atOpen[n] = pending;
      if (n === 2) timers.advance(1000);
    });
    informer.start();
    try {
      await informer.synced;
      await eventually(() => expect(timers.pending()).toEqual(backingOff(500)), 30_000);
      expect(atOpen[1]).toEqual(guarding(1));
      timers.advance(499);
      await settle();
      expect(watched.opened).toBe(1);
      timers.advance(1);
      // The second watch ran 1000 ms on the injected clock: the third opens without a wait...
      await eventually(() => watched.opened === 3, 30_000);
      expect(atOpen[3]).toEqual(guarding(1));
      // ...and the backoff started over: the third, closing at once, waits the first delay again,
      // and the fourth twice that.
      await eventually(() => expect(timers.pending()).toEqual(backingOff(500)), 30_000);
      timers.advance(500);
      await eventually(() => expect(timers.pending()).toEqual(backingOff(1000)), 30_000);
      expect(watched.opened).toBe(4);
      expect(informer.stats).toMatchObject({ lists: 1, watches: 4, expired: 0, errors: 0 });
      expect(errors).toEqual([]);
    } finally {
      await informer.stop();
    }
  }, 60_000);

  it('ends a watch the server never ends at timeoutSeconds + 60 s, reports it, and retries it with backoff', async () => {
    const timers = new FakeTimers();
    const { informer, watched, errors } = timedInformer(timers, { watchTimeoutSeconds: 3600 });
    informer.start();
    try {
      await eventually(() => watched.opened === 1, 30_000);
      expect(timers.pending()).toEqual(guarding(3600));
      timers.advance(3_660_000 - 1);
      await settle();
      expect(errors).toEqual([]);
      timers.advance(1);
      await eventually(() => expect(timers.pending()).toEqual(backingOff(500)), 30_000);
      expect(errors).toEqual([expect.stringMatching(/^Secret never-there: watch \/api\/v1\/secrets: aborted$/)]);
      expect(informer.stats).toMatchObject({ lists: 1, watches: 1, errors: 1 });
      timers.advance(500);
      await eventually(() => watched.opened === 2, 30_000);
      expect(informer.stats.lists).toBe(1);
    } finally {
      await informer.stop();
    }
  }, 60_000);

  it('stops at once when it ends an open watch: no backoff wait after the stop, no timer left', async () => {
    const timers = new FakeTimers();
    const { informer, watched } = timedInformer(timers, { watchTimeoutSeconds: 3600 });
    informer.start();
    await eventually(() => watched.opened === 1, 30_000);
    // A watch we abort closes at once having seen nothing; before the stop that means a backoff
    // wait, which stop() must not sit out (this timer never comes due).
    let deadline: NodeJS.Timeout | undefined;
    const stillWaiting = new Promise<'still waiting'>((r) => (deadline = setTimeout(() => r('still waiting'), 20_000)));
    const outcome = await Promise.race([informer.stop().then(() => 'stopped' as const), stillWaiting]);
    clearTimeout(deadline);
    expect(outcome).toBe('stopped');
    expect(timers.pending()).toEqual([]);
    expect(informer.stats).toMatchObject({ watches: 1, errors: 0 });
  }, 60_000);

  it('ClusterInformers hands its timers to each of its four informers', async () => {
    const timers = new FakeTimers();
    const eso = await cluster.namespace('eso-timed');
    const informers = new ClusterInformers(
      clients,
      installationOf({ policy: { esoNamespace: eso }, caSecretName: 'ca', clientSecretName: 'client' }, 'informer-test'),
      { timers, watchTimeoutSeconds: 3600 },
    );
    await informers.start();
    try {
      await eventually(() => expect(timers.pending()).toEqual([...guarding(3600), ...guarding(3600), ...guarding(3600), ...guarding(3600)]), 30_000);
    } finally {
      await informers.stop();
    }
    expect(timers.pending()).toEqual([]);
  }, 60_000);
});
