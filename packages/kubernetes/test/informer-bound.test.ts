import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { Informer, type InformerEvent, KubeRestClient, type ListPage, connectionFromKubeConfig, corePath } from '../src/index.js';
import type { CacheBoundScope } from '../src/informers/informer-store.js';
import { RequestCounter } from '../src/client/request-counter.js';
import { eventually } from '@eso-mtls/test-kit/eventually';

let plane: ControlPlane;
let api: KubeRestClient;

beforeAll(async () => {
  plane = await startControlPlane();
  api = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig), { counter: new RequestCounter() });
}, 120_000);

afterAll(async () => {
  api?.close();
  await plane?.stop();
});

async function namespace(name: string): Promise<string> {
  await api.create(corePath('namespaces'), { metadata: { name } });
  return name;
}

async function configMap(ns: string, name: string, set: string, data: Record<string, string> = {}): Promise<V1ConfigMap> {
  return api.create<V1ConfigMap>(corePath('configmaps', ns), { metadata: { name, labels: { set } }, data });
}

/** An informer of the ConfigMaps labelled `set=<set>`, holding only those without `done` in their data, within `bound`. */
function boundedInformer(set: string, bound?: { perNamespace: number; total: number }, relistForRoomMs = 200) {
  const notHeld: { name: string; scope: CacheBoundScope }[] = [];
  const events: InformerEvent<V1ConfigMap>[] = [];
  // When each list began (its first page), on the monotonic clock.
  const listedAt: number[] = [];
  const labelSelector = `set=${set}`;
  const informer = new Informer<V1ConfigMap>(
    {
      description: `ConfigMaps ${labelSelector}`,
      resource: 'configmaps',
      list: (page) => {
        if (!page.continue) listedAt.push(performance.now());
        return api.get<ListPage<V1ConfigMap>>(corePath('configmaps'), { labelSelector, ...page });
      },
      watchPath: corePath('configmaps'),
      labelSelector,
      transform: (c) => (c.data?.['done'] ? undefined : { metadata: c.metadata, data: c.data }),
      ...(bound ? { bound } : {}),
      onNotHeld: (c, scope) => notHeld.push({ name: `${c.metadata?.namespace}/${c.metadata?.name}`, scope }),
    },
    { watch: api, counter: new RequestCounter(), relistForRoomMs },
  );
  informer.onChange((e) => events.push(e));
  return { informer, notHeld, events, listedAt };
}

const held = (informer: Informer<V1ConfigMap>) => [...informer.list()].map((c) => `${c.metadata?.namespace}/${c.metadata?.name}`).sort();

describe('an informer that holds only what matters, within a bound, on the real apiserver', () => {
  it('never caches what its transform drops: not from the list, and an object dropped later leaves the cache with a DELETED event', async () => {
    const ns = await namespace('drop');
    await configMap(ns, 'decided', 'drop', { done: 'yes' });
    await configMap(ns, 'pending', 'drop');
    const { informer, events } = boundedInformer('drop');
    informer.start();
    try {
      await informer.synced;
      expect(held(informer)).toEqual(['drop/pending']);
      const pending = informer.get(ns, 'pending')!;
      await api.replace(corePath('configmaps', ns, 'pending'), { metadata: pending.metadata, data: { done: 'now' } });
      await eventually(() => expect(informer.size).toBe(0));
      expect(events.map((e) => [e.type, e.object.metadata?.name])).toEqual([
        ['ADDED', 'pending'],
        ['DELETED', 'pending'],
      ]);
      // Dropped objects are gone, not refused: nothing counts as kept out.
      expect(informer.notHeld).toEqual({ namespace: 0, total: 0 });

      // An object written by us and dropped by the transform leaves the cache at once (cacheAhead).
      const again = await configMap(ns, 'again', 'drop');
      await eventually(() => expect(informer.get(ns, 'again')).toBeDefined());
      const decided = await api.replace<V1ConfigMap>(corePath('configmaps', ns, 'again'), { metadata: again.metadata, data: { done: 'by us' } });
      informer.cacheAhead(decided);
      expect(informer.get(ns, 'again')).toBeUndefined();
    } finally {
      await informer.stop();
    }
  }, 60_000);

  it('holds at most its bound per namespace and in all, shares the room between namespaces, counts and reports the rest, and holds them as room is made, listing at most once per interval', async () => {
    const [a, b, c, d] = [await namespace('bound-a'), await namespace('bound-b'), await namespace('bound-c'), await namespace('bound-d')];
    for (let i = 0; i < 5; i++) await configMap(a, `a${i}`, 'bound');
    for (let i = 0; i < 2; i++) await configMap(b, `b${i}`, 'bound');
    await configMap(c, 'c0', 'bound');
    const relistForRoomMs = 2_000;
    const { informer, notHeld, listedAt, events } = boundedInformer('bound', { perNamespace: 3, total: 5 }, relistForRoomMs);
    informer.start();
    try {
      await informer.synced;
      // In list order: a takes 3 (its bound) and b both, filling the cache; c, holding none, takes a's newest place.
      expect(held(informer)).toEqual(['bound-a/a0', 'bound-a/a1', 'bound-b/b0', 'bound-b/b1', 'bound-c/c0']);
      expect(informer.notHeld).toEqual({ namespace: 2, total: 1 });
      expect(notHeld).toEqual([
        { name: 'bound-a/a3', scope: 'namespace' },
        { name: 'bound-a/a4', scope: 'namespace' },
        { name: 'bound-a/a2', scope: 'total' },
      ]);
      // Seen by the watch: a new object of a namespace holding as many as the fullest is kept out...
      await configMap(a, 'a5', 'bound');
      await eventually(() => expect(informer.notHeld).toEqual({ namespace: 2, total: 2 }));
      expect(informer.get(a, 'a5')).toBeUndefined();
      // ...and one of a namespace holding none takes the fullest namespace's newest place, which leaves the cache.
      await configMap(d, 'd0', 'bound');
      await eventually(() => expect(informer.get(d, 'd0')).toBeDefined());
      expect(held(informer)).toEqual(['bound-a/a0', 'bound-b/b0', 'bound-b/b1', 'bound-c/c0', 'bound-d/d0']);
      expect(events.filter((e) => e.type === 'DELETED').map((e) => e.object.metadata?.name)).toEqual(['a1']);
      expect(informer.notHeld).toEqual({ namespace: 2, total: 3 });

      // Decide whatever is held, as a signer would, until nothing is left: each object is held in turn.
      const all = ['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'b0', 'b1', 'c0', 'd0'];
      const decided = new Set<string>();
      await eventually(async () => {
        for (const object of [...informer.list()]) {
          const name = object.metadata!.name!;
          if (decided.has(name)) continue;
          decided.add(name);
          await api.replace(corePath('configmaps', object.metadata!.namespace!, name), { metadata: object.metadata, data: { done: 'yes' } });
        }
        expect([...decided].sort()).toEqual(all);
      }, 60_000);
      await eventually(() => expect(informer.size).toBe(0));
      expect(informer.notHeld).toEqual({ namespace: 0, total: 0 });
      // However fast room was made, lists came no closer together than the interval (a late timer only widens a gap).
      const gaps = listedAt.slice(1).map((at, i) => at - listedAt[i]!);
      expect(gaps.length).toBeGreaterThanOrEqual(1);
      for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(relistForRoomMs - 5);

      // Nothing kept out: more room made lists nothing.
      const lists = listedAt.length;
      await configMap(b, 'b2', 'bound');
      await eventually(() => expect(informer.get(b, 'b2')).toBeDefined());
      await api.replace(corePath('configmaps', b, 'b2'), { metadata: informer.get(b, 'b2')!.metadata, data: { done: 'yes' } });
      await eventually(() => expect(informer.get(b, 'b2')).toBeUndefined());
      await new Promise((r) => setTimeout(r, 2 * relistForRoomMs));
      expect(listedAt.length).toBe(lists);
    } finally {
      await informer.stop();
    }
  }, 90_000);
});
