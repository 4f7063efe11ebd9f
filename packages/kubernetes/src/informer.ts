import { Backoff, type BackoffOptions } from './backoff.js';
import type { RequestCounter } from './request-counter.js';

/** The metadata an informer needs of every object. */
export interface ObjectWithMeta {
  readonly metadata?: { readonly name?: string; readonly namespace?: string; readonly resourceVersion?: string };
}

/** One page of a list call, as the apiserver answers it. */
export interface ListPage<T> {
  readonly items: readonly T[];
  readonly metadata?: { readonly resourceVersion?: string; readonly continue?: string };
}

/**
 * Starts one watch: {@link KubeRestClient.watch}, or client-node's `Watch.watch` (same signature).
 * `done` is called once when the watch ends, with the error if it failed.
 */
export interface Watcher {
  watch(
    path: string,
    query: Readonly<Record<string, string | number | boolean | undefined>>,
    onEvent: (type: string, object: unknown) => void,
    done: (error?: unknown) => void,
  ): Promise<{ abort(): void }>;
}

/** What to list and watch. */
export interface ListWatchSource<T> {
  /** For log lines and errors, e.g. `Secrets named external-secrets-provider-tls`. */
  readonly description: string;
  /** Plural resource name, for request counting (`secrets`, `services`). */
  readonly resource: string;
  /** One list page; the informer passes `limit` and `continue`, the source adds its selectors. */
  list(page: { limit: number; continue?: string }): Promise<ListPage<T>>;
  /** Collection path to watch, e.g. `/api/v1/secrets` or `/api/v1/namespaces/x/secrets`. */
  readonly watchPath: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /**
   * Trims each object before it is cached (client-go's TransformFunc): keep only what is read,
   * e.g. drop managedFields, so a cache of thousands of objects stays small.
   */
  readonly transform?: (object: T) => T;
}

/** A change to the cache, after it was applied. `previous` is set for MODIFIED and DELETED. */
export interface InformerEvent<T> {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly object: T;
  readonly previous?: T;
}

/** Options of {@link Informer}. */
export interface InformerOptions {
  readonly watch: Watcher;
  readonly counter: RequestCounter;
  /** Page size of list calls (default 500). */
  readonly pageSize?: number;
  /** timeoutSeconds asked of each watch; unset lets the apiserver pick (its --min-request-timeout to twice that). */
  readonly watchTimeoutSeconds?: number;
  readonly backoff?: BackoffOptions;
  /** Told about every failed list or watch, before the retry. */
  readonly onError?: (error: Error) => void;
}

/** What an informer has done, for tests and benchmarks. */
export interface InformerStats {
  /** Completed full lists (the first, and each relist after 410 Gone). */
  lists: number;
  listPages: number;
  watches: number;
  bookmarks: number;
  /** Watches refused with 410 Gone (resourceVersion too old), each followed by a relist. */
  expired: number;
  errors: number;
}

/** Thrown into onError for a watch that ended with an ERROR event. */
export class WatchError extends Error {
  constructor(message: string, readonly code: number | undefined) {
    super(message);
  }
}

const keyOf = (o: ObjectWithMeta): string => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

/**
 * True unless both resourceVersions are etcd revisions (decimal integers) and `a`'s is not above
 * `b`'s. resourceVersions are opaque by contract; when they are not numbers, the newest arrival wins.
 */
function isNewer(a: ObjectWithMeta, b: ObjectWithMeta): boolean {
  const ra = a.metadata?.resourceVersion;
  const rb = b.metadata?.resourceVersion;
  if (!ra || !rb || !/^\d+$/.test(ra) || !/^\d+$/.test(rb)) return true;
  return BigInt(ra) > BigInt(rb);
}

/**
 * A list+watch cache. It asks for watch bookmarks (`allowWatchBookmarks=true`) and resumes each
 * watch from the last resourceVersion it saw, so a watch that times out while unrelated objects
 * churn does not come back 410 Gone; it relists only on 410, and restarts with backoff after any
 * other error instead of stopping (client-node's own informer stops on errors).
 */
export class Informer<T extends ObjectWithMeta> {
  readonly stats: InformerStats = { lists: 0, listPages: 0, watches: 0, bookmarks: 0, expired: 0, errors: 0 };
  private readonly store = new Map<string, T>();
  private readonly listeners = new Set<(event: InformerEvent<T>) => void>();
  private readonly backoff: Backoff;
  private resourceVersion: string | undefined;
  private running = false;
  private abortWatch: (() => void) | undefined;
  private wakeSleep: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private syncedResolve!: () => void;
  /** Resolves after the first complete list. */
  readonly synced: Promise<void>;
  private isSynced = false;

  constructor(private readonly source: ListWatchSource<T>, private readonly options: InformerOptions) {
    this.backoff = new Backoff(options.backoff);
    this.synced = new Promise((r) => (this.syncedResolve = r));
  }

  /** Starts listing and watching in the background; await {@link synced} for the first list. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Stops the watch and any retry; the cache keeps its last content. */
  async stop(): Promise<void> {
    this.running = false;
    this.abortWatch?.();
    this.wakeSleep?.();
    await this.loop;
  }

  /** True once the first list has completed. */
  get hasSynced(): boolean {
    return this.isSynced;
  }

  /** Subscribes to changes; returns the unsubscribe function. */
  onChange(listener: (event: InformerEvent<T>) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The cached object, if any. */
  get(namespace: string, name: string): T | undefined {
    return this.store.get(`${namespace}/${name}`);
  }

  /** Every cached object. */
  list(): IterableIterator<T> {
    return this.store.values();
  }

  /** Number of cached objects. */
  get size(): number {
    return this.store.size;
  }

  /**
   * Puts an object read or written by the adapter itself into the cache ahead of its watch event,
   * so the next plan starts from it. Ignored when the cache already holds a newer version.
   */
  observe(received: T): void {
    const object = this.trim(received);
    const key = keyOf(object);
    const previous = this.store.get(key);
    if (previous && !isNewer(object, previous)) return;
    this.store.set(key, object);
    this.emit(previous ? { type: 'MODIFIED', object, previous } : { type: 'ADDED', object });
  }

  /** The resourceVersion the next watch resumes from. */
  get lastResourceVersion(): string | undefined {
    return this.resourceVersion;
  }

  private async run(): Promise<void> {
    let needList = true;
    while (this.running) {
      try {
        if (needList) {
          await this.relist();
          needList = false;
        }
        const outcome = await this.watchOnce();
        if (outcome === 'expired') {
          this.stats.expired++;
          needList = true; // no backoff: the apiserver is healthy, our resourceVersion is just too old
        } else if (outcome.ranMs < 1000 && outcome.events === 0) {
          await this.sleep(this.backoff.next()); // a watch that ends at once must not spin
        } else {
          this.backoff.reset();
        }
      } catch (e) {
        if (!this.running) break;
        this.stats.errors++;
        const error = e instanceof Error ? e : new Error(String(e));
        this.options.onError?.(new Error(`${this.source.description}: ${error.message}`, { cause: error }));
        await this.sleep(this.backoff.next());
      }
    }
  }

  private async relist(): Promise<void> {
    const fresh = new Map<string, T>();
    let next: string | undefined;
    let resourceVersion: string | undefined;
    do {
      const page = await this.source.list({ limit: this.options.pageSize ?? 500, ...(next ? { continue: next } : {}) });
      this.stats.listPages++;
      for (const item of page.items) fresh.set(keyOf(item), this.trim(item));
      resourceVersion ??= page.metadata?.resourceVersion;
      next = page.metadata?.continue || undefined;
    } while (next && this.running);
    if (!this.running) return;
    this.stats.lists++;
    this.resourceVersion = resourceVersion;
    // Replace the cache, telling listeners what changed while we were not watching.
    const previous = new Map(this.store);
    this.store.clear();
    for (const [key, object] of fresh) {
      this.store.set(key, object);
      const before = previous.get(key);
      if (!before) this.emit({ type: 'ADDED', object });
      else if (before.metadata?.resourceVersion !== object.metadata?.resourceVersion) this.emit({ type: 'MODIFIED', object, previous: before });
      previous.delete(key);
    }
    for (const gone of previous.values()) this.emit({ type: 'DELETED', object: gone, previous: gone });
    if (!this.isSynced) {
      this.isSynced = true;
      this.syncedResolve();
    }
  }

  /** One watch, until the server ends it. */
  private watchOnce(): Promise<'expired' | { ranMs: number; events: number }> {
    const started = Date.now();
    let events = 0;
    let failure: Error | undefined;
    let expired = false;
    this.stats.watches++;
    this.options.counter.record('watch', this.source.resource);
    return new Promise((resolveWatch, rejectWatch) => {
      const query: Record<string, string | number | boolean | undefined> = {
        allowWatchBookmarks: true,
        resourceVersion: this.resourceVersion,
        labelSelector: this.source.labelSelector,
        fieldSelector: this.source.fieldSelector,
        timeoutSeconds: this.options.watchTimeoutSeconds,
      };
      let finished = false;
      const finish = (err: unknown): void => {
        if (finished) return;
        finished = true;
        clearTimeout(guard);
        this.abortWatch = undefined;
        if (expired) resolveWatch('expired');
        else if (failure) rejectWatch(failure);
        else if (err && this.running) {
          const code = (err as { statusCode?: number }).statusCode;
          if (code === 410) resolveWatch('expired');
          else rejectWatch(err instanceof Error ? err : new Error(String(err)));
        } else resolveWatch({ ranMs: Date.now() - started, events });
      };
      // If the server never ends the watch (a silently dead connection), end it ourselves.
      const guardMs = ((this.options.watchTimeoutSeconds ?? 3600) + 60) * 1000;
      const guard = setTimeout(() => this.abortWatch?.(), guardMs);
      guard.unref?.();
      const onEvent = (type: string, received: T & { code?: number; message?: string; reason?: string }): void => {
        if (type === 'BOOKMARK') {
          this.stats.bookmarks++;
          this.resourceVersion = received.metadata?.resourceVersion ?? this.resourceVersion;
          return;
        }
        if (type === 'ERROR') {
          // A Status object: 410 Gone (Expired) means our resourceVersion left the watch window.
          if (received.code === 410) expired = true;
          else failure = new WatchError(`watch ERROR event: ${received.code ?? '?'} ${received.reason ?? ''} ${received.message ?? ''}`.trim(), received.code);
          this.abortWatch?.();
          return;
        }
        if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') return;
        const object = this.trim(received);
        events++;
        this.resourceVersion = object.metadata?.resourceVersion ?? this.resourceVersion;
        const key = keyOf(object);
        const previous = this.store.get(key);
        if (type === 'DELETED') {
          this.store.delete(key);
          this.emit({ type, object, previous: previous ?? object });
        } else {
          // Our own write may already be cached (observe()); a lagging event must not regress it.
          if (previous && !isNewer(object, previous)) return;
          this.store.set(key, object);
          this.emit({ type: previous ? 'MODIFIED' : 'ADDED', object, ...(previous ? { previous } : {}) });
        }
      };
      this.options.watch.watch(this.source.watchPath, query, onEvent as (type: string, object: unknown) => void, finish).then((controller) => {
        if (finished) return;
        this.abortWatch = () => controller.abort();
        if (!this.running) controller.abort();
      }, finish);
    });
  }

  private trim(object: T): T {
    return this.source.transform ? this.source.transform(object) : object;
  }

  private emit(event: InformerEvent<T>): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (e) {
        this.options.onError?.(new Error(`${this.source.description}: listener failed: ${(e as Error).message}`, { cause: e }));
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((r) => {
      const timer = setTimeout(() => { this.wakeSleep = undefined; r(); }, ms);
      this.wakeSleep = () => { clearTimeout(timer); this.wakeSleep = undefined; r(); };
    });
  }
}
