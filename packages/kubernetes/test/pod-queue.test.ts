// The signer's fair work queue (issue 25): order only, never time.
import { describe, expect, it } from '@jest/globals';
import type { PodSignerRole } from '@eso-mtls/core';
import { PodQueue } from '../src/pod-certificates/pod-queue.js';

const request = (role: PodSignerRole, namespace: string, name: string) => ({ uid: `${namespace}/${name}`, role, namespace, name, queuedAt: 0 });
const drain = (queue: PodQueue): string[] => {
  const taken: string[] = [];
  for (let r = queue.take(); r; r = queue.take()) taken.push(r.uid);
  return taken;
};

describe('PodQueue', () => {
  it('serves a lone request of another namespace second, however large the burst queued before it', () => {
    const queue = new PodQueue();
    for (let i = 0; i < 1000; i++) queue.add(request('server', 'burst', `pod-${i}`));
    queue.add(request('server', 'lone', 'pod-0'));
    const order = drain(queue);
    expect(order).toHaveLength(1001);
    expect(order.indexOf('lone/pod-0')).toBe(1);
    // Within a namespace, first come first served.
    expect(order.filter((uid) => uid.startsWith('burst/'))).toEqual(Array.from({ length: 1000 }, (_, i) => `burst/pod-${i}`));
  });

  it('takes the namespaces in turn, one request each', () => {
    const queue = new PodQueue();
    for (const ns of ['a', 'b', 'c']) for (let i = 0; i < 3; i++) queue.add(request('server', ns, `p${i}`));
    expect(drain(queue)).toEqual(['a/p0', 'b/p0', 'c/p0', 'a/p1', 'b/p1', 'c/p1', 'a/p2', 'b/p2', 'c/p2']);
  });

  it('never starves the client signer: with a server backlog it gets every other turn', () => {
    const queue = new PodQueue();
    for (let ns = 0; ns < 50; ns++) for (let i = 0; i < 20; i++) queue.add(request('server', `ns-${ns}`, `p${i}`));
    queue.add(request('client', 'eso', 'core-0'));
    queue.add(request('client', 'eso', 'core-1'));
    const order = drain(queue);
    expect(order.slice(0, 4)).toEqual(['ns-0/p0', 'eso/core-0', 'ns-1/p0', 'eso/core-1']);
    expect(order).toHaveLength(1002);
  });

  it('holds each request once: a second add keeps the first place', () => {
    const queue = new PodQueue();
    expect(queue.add(request('server', 'a', 'p0'))).toBe(true);
    queue.add(request('server', 'a', 'p1'));
    expect(queue.add(request('server', 'a', 'p0'))).toBe(false);
    expect(queue.size).toBe(2);
    expect(queue.has('a/p0')).toBe(true);
    expect(drain(queue)).toEqual(['a/p0', 'a/p1']);
    expect(queue.has('a/p0')).toBe(false);
    // Taken, it can be queued again (a retry).
    expect(queue.add(request('server', 'a', 'p0'))).toBe(true);
  });
});
