import { Backoff, type BackoffOptions } from './backoff.js';
import { type Timers, sleep, systemTimers } from './clock.js';
import type { RequestCounter } from './request-counter.js';
import { type WatchState, type WatchStatus, endedAtOnce, nextWatchState, watching } from './watch-state.js';

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
  /** Starts a watch of `path`: `onEvent` per event, `done` once when the stream ends. */
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
  /** How long a watch ran, and when to retry (default: the process's own timers). */
  readonly timers?: Timers;
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
  private readonly timers: Timers;
  private resourceVersion: string | undefined;
  private running = false;
  private stopping = new AbortController();
  private abortWatch: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private syncedResolve!: () => void;
  /** Resolves after the first complete list. */
  readonly synced: Promise<void>;
  private isSynced = false;

  constructor(
    private readonly source: ListWatchSource<T>,
    private readonly options: InformerOptions,
  ) {
    this.backoff = new Backoff(options.backoff);
    this.timers = options.timers ?? systemTimers;
    this.synced = new Promise((r) => (this.syncedResolve = r));
  }

  /** Starts listing and watching in the background; await {@link synced} for the first list. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopping = new AbortController();
    this.loop = this.run();
  }

  /** Stops the watch and any retry; the cache keeps its last content. */
  async stop(): Promise<void> {
    this.running = false;
    this.abortWatch?.();
    this.stopping.abort();
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
  cacheAhead(received: T): void {
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
        const end = await this.watchOnce();
        if (end.phase === 'failed') throw end.error; // reported, then retried after backoff, below
        if (end.phase === 'expired') {
          this.stats.expired++;
          needList = true; // no backoff: the apiserver is healthy, our resourceVersion is just too old
        } else if (endedAtOnce(end)) {
          await this.sleep(this.backoff.next());
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

  /**
   * One watch, from its request to the close of its stream; resolves with the state it closed in
   * (see {@link nextWatchState}). An ERROR event aborts the stream, and so does our stop.
   */
  private async watchOnce(): Promise<WatchState> {
    this.stats.watches++;
    this.options.counter.record('watch', this.source.resource);
    let state = watching(this.timers.monotonicMs());
    let stream: { abort(): void } | undefined;
    const abort = (): void => stream?.abort();
    let close!: (error?: unknown) => void;
    const closed = new Promise<unknown>((resolve) => (close = resolve));
    const onEvent = (type: string, received: unknown): void => {
      if (type === 'ERROR') {
        state = nextWatchState(state, { on: 'error-event', status: received as WatchStatus });
        abort();
      } else if (this.apply(type, received as T)) {
        state = nextWatchState(state, { on: 'change' });
      }
    };
    // If the server never ends the watch (a silently dead connection), end it ourselves.
    const guard = this.timers.setTimer(((this.options.watchTimeoutSeconds ?? 3600) + 60) * 1000, abort);
    guard.unref();
    this.abortWatch = abort;
    this.options.watch.watch(this.source.watchPath, this.watchQuery(), onEvent, close).then((opened) => {
      if (this.abortWatch !== abort) return; // closed before it opened
      stream = opened;
      if (!this.running) opened.abort();
    }, close);
    const error = await closed;
    guard.cancel();
    this.abortWatch = undefined;
    return nextWatchState(state, { on: 'close', atMs: this.timers.monotonicMs(), error, stopping: !this.running });
  }

  private watchQuery(): Record<string, string | number | boolean | undefined> {
    return {
      allowWatchBookmarks: true,
      resourceVersion: this.resourceVersion,
      labelSelector: this.source.labelSelector,
      fieldSelector: this.source.fieldSelector,
      timeoutSeconds: this.options.watchTimeoutSeconds,
    };
  }

  /** Applies one watch event to the cache; true when it was a change, not a bookmark or unknown type. */
  private apply(type: string, received: T): boolean {
    if (type === 'BOOKMARK') {
      this.stats.bookmarks++;
      this.resourceVersion = received.metadata?.resourceVersion ?? this.resourceVersion;
      return false;
    }
    if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') return false;
    const object = this.trim(received);
    this.resourceVersion = object.metadata?.resourceVersion ?? this.resourceVersion;
    const key = keyOf(object);
    const previous = this.store.get(key);
    if (type === 'DELETED') {
      this.store.delete(key);
      this.emit({ type, object, previous: previous ?? object });
    } else if (!previous || isNewer(object, previous)) {
      // Our own write may already be cached (cacheAhead()); a lagging event must not regress it.
      this.store.set(key, object);
      this.emit(previous ? { type: 'MODIFIED', object, previous } : { type: 'ADDED', object });
    }
    return true;
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

  /** Waits before a retry; stop() ends the wait at once. */
  private sleep(ms: number): Promise<void> {
    return sleep(ms, this.stopping.signal, this.timers);
  }
}
