import type { PodSignerRole } from '@eso-mtls/core';

/** A request waiting for the signer: where to find it in the cache, and since when it waits. */
export interface QueuedRequest {
  readonly uid: string;
  readonly role: PodSignerRole;
  readonly namespace: string;
  readonly name: string;
  /** When it was queued (monotonic ms), for the queue-wait stage. */
  readonly queuedAt: number;
}

/** A FIFO of uids with O(1) push and shift. */
class Fifo {
  private items: string[] = [];
  private head = 0;

  push(uid: string): void {
    this.items.push(uid);
  }

  shift(): string | undefined {
    const uid = this.items[this.head++];
    // Drop the consumed prefix now and then, so a long burst does not keep its whole array.
    if (this.head > 64 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return uid;
  }

  get size(): number {
    return this.items.length - this.head;
  }
}

const ROLES: readonly PodSignerRole[] = ['server', 'client'];

/**
 * The signer's fair work queue: each pending request once (by uid), in one FIFO per signer role
 * and namespace. {@link take} serves the two roles in turn, and within a role the namespaces in
 * turn, so a burst of a thousand requests in one namespace delays a lone request elsewhere by at
 * most one request per busy namespace, and ESO's client signer gets every other turn.
 */
export class PodQueue {
  private readonly queued = new Map<string, QueuedRequest>();
  // Per role, the namespaces with work, in turn order: the one served goes to the back (Map order).
  private readonly turns = new Map<PodSignerRole, Map<string, Fifo>>(ROLES.map((r) => [r, new Map()]));
  private lastRole: PodSignerRole = 'client';

  /** Queues a request unless it is queued already (then it keeps its place); true when added. */
  add(request: QueuedRequest): boolean {
    if (this.queued.has(request.uid)) return false;
    this.queued.set(request.uid, request);
    const namespaces = this.turns.get(request.role)!;
    let fifo = namespaces.get(request.namespace);
    if (!fifo) namespaces.set(request.namespace, (fifo = new Fifo()));
    fifo.push(request.uid);
    return true;
  }

  /** The next request in fair order, removed from the queue; undefined when empty. */
  take(): QueuedRequest | undefined {
    const order: readonly PodSignerRole[] = this.lastRole === 'server' ? ['client', 'server'] : ['server', 'client'];
    for (const role of order) {
      const namespaces = this.turns.get(role)!;
      const first = namespaces.entries().next();
      if (first.done) continue;
      const [namespace, fifo] = first.value;
      const uid = fifo.shift()!;
      namespaces.delete(namespace);
      if (fifo.size > 0) namespaces.set(namespace, fifo);
      this.lastRole = role;
      const request = this.queued.get(uid)!;
      this.queued.delete(uid);
      return request;
    }
    return undefined;
  }

  /** True while the request waits in the queue. */
  has(uid: string): boolean {
    return this.queued.has(uid);
  }

  /** Requests waiting. */
  get size(): number {
    return this.queued.size;
  }
}
