import { apiErrorOf } from '../client/api-error.js';
import { Backoff, type BackoffOptions } from '../client/backoff.js';
import { type ScheduledTimer, type Timers, sleep, systemTimers } from '../runtime/clock.js';
import type { CacheBound } from '../installation/installation.js';
import { type CacheBoundScope, InformerStore } from './informer-store.js';
import type { RequestCounter } from '../client/request-counter.js';
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

/**
 * Thrown by a source's {@link ListWatchSource.list} when discovery finds its resource not served
 * (an API group without the kind): for a source that {@link ListWatchSource.mayBeUnserved may be
 * unserved}, the same as the apiserver's 404.
 */
export class ResourceNotServedError extends Error {
  /** Always `ResourceNotServedError`. */
  override readonly name = 'ResourceNotServedError';
}

/** True when `error` says the resource is not served: the apiserver's 404, or {@link ResourceNotServedError}. */
export const isNotServed = (error: unknown): boolean => error instanceof ResourceNotServedError || apiErrorOf(error).code === 404;

/** What to list and watch. */
export interface ListWatchSource<T> {
  /** For log lines and errors, e.g. `Secrets named external-secrets-provider-tls`. */
  readonly description: string;
  /** Plural resource name, for request counting (`secrets`, `services`); read at each watch, as {@link watchPath}. */
  readonly resource: string;
  /** One list page; the informer passes `limit` and `continue`, the source adds its selectors. */
  list(page: { limit: number; continue?: string }): Promise<ListPage<T>>;
  /**
   * Collection path to watch, e.g. `/api/v1/secrets` or `/api/v1/namespaces/x/secrets`; read at
   * each watch, so a source that finds its path by discovery in {@link list} may answer with a getter.
   */
  readonly watchPath: string;
  /**
   * The resource may not be served (a custom resource whose CRD is not installed, or not yet): a
   * list or watch answered 404 (or a list that throws {@link ResourceNotServedError}) empties the
   * cache and counts as synced, not as an error, and the informer lists again every
   * {@link InformerOptions.unservedRelistMs} until it is served.
   * {@link Informer.served} tells which. Unset: a 404 is an error like any other, retried with
   * backoff, and the first sync waits for a list that succeeds.
   */
  readonly mayBeUnserved?: boolean;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /**
   * Trims each object before it is cached (client-go's TransformFunc): keep only what is read,
   * e.g. drop managedFields, so a cache of thousands of objects stays small. Undefined: the object
   * is not held at all (one held before leaves the cache, with a DELETED event), e.g. a
   * PodCertificateRequest once decided.
   */
  readonly transform?: (object: T) => T | undefined;
  /**
   * The most objects held, per namespace and in all. An object past it is not held: it is counted
   * ({@link Informer.notHeld}), reported to {@link onNotHeld}, and listed again once room is made.
   */
  readonly bound?: CacheBound;
  /** Told about each object the bound keeps out (once per watch event, and once per list). */
  readonly onNotHeld?: (object: T, scope: CacheBoundScope) => void;
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
  /** While objects wait outside a source's bound, the shortest time between two lists that look for room (default 30 s; at least ten times the last list took). */
  readonly relistForRoomMs?: number;
  /** How often a source that {@link ListWatchSource.mayBeUnserved may be unserved} is listed again while it is not served (default 30 s). */
  readonly unservedRelistMs?: number;
  /** Told about every failed list or watch, before the retry (not about a 404 of a source that may be unserved). */
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
  /** Objects the source's bound kept out, counted each time one was met. */
  notHeld: number;
}

/** Objects kept out by a source's bound since the last list, by the scope that kept each out. */
export type NotHeld = Readonly<Record<CacheBoundScope, number>>;

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
  readonly stats: InformerStats = { lists: 0, listPages: 0, watches: 0, bookmarks: 0, expired: 0, errors: 0, notHeld: 0 };
  private store: InformerStore<T>;
  private notHeldSinceList: Record<CacheBoundScope, number> = { namespace: 0, total: 0 };
  private listedAt = -Infinity;
  // How long the last list took, from its first page to its last.
  private listedInMs = 0;
  private roomTimer: ScheduledTimer | undefined;
  // A list to catch up with objects kept out by the bound was asked for: the watch ends for it.
  private relistWanted = false;
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
  private isServed = true;
  private attemptedResolve!: () => void;
  /** Resolves after the first list attempt, whether it succeeded (see {@link synced}) or failed (see {@link lastError}). */
  readonly attempted: Promise<void>;
  private failure: Error | undefined;

  constructor(
    private readonly source: ListWatchSource<T>,
    private readonly options: InformerOptions,
  ) {
    this.backoff = new Backoff(options.backoff);
    this.timers = options.timers ?? systemTimers;
    this.store = new InformerStore(source.bound);
    this.synced = new Promise((r) => (this.syncedResolve = r));
    this.attempted = new Promise((r) => (this.attemptedResolve = r));
  }

  /** The last list or watch failure (not a 404 of a source that may be unserved), until a list succeeds. */
  get lastError(): Error | undefined {
    return this.failure;
  }

  /**
   * False while the apiserver answers 404 for a source that {@link ListWatchSource.mayBeUnserved
   * may be unserved} (its cache is then empty); true once a list succeeded, and for every other source.
   */
  get served(): boolean {
    return this.isServed;
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
    this.roomTimer?.cancel();
    this.roomTimer = undefined;
    this.abortWatch?.();
    this.stopping.abort();
    await this.loop;
  }

  /** Objects the source's bound kept out since the last list (each counted once per watch event that brought it). */
  get notHeld(): NotHeld {
    return { ...this.notHeldSinceList };
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
    const key = keyOf(received);
    const previous = this.store.get(key);
    if (previous && !isNewer(received, previous)) return;
    this.hold(key, received, previous);
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
        if (this.relistWanted && this.running) {
          // We ended the watch ourselves, to list again for objects the bound kept out.
          this.relistWanted = false;
          needList = true;
          continue;
        }
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
        if (this.source.mayBeUnserved && isNotServed(e)) {
          this.unserved();
          needList = true;
          await this.sleep(this.options.unservedRelistMs ?? 30_000);
          continue;
        }
        this.stats.errors++;
        const error = e instanceof Error ? e : new Error(String(e));
        this.failure = error;
        this.attemptedResolve();
        this.options.onError?.(new Error(`${this.source.description}: ${error.message}`, { cause: error }));
        await this.sleep(this.backoff.next());
      }
    }
  }

  private async relist(): Promise<void> {
    const started = this.timers.monotonicMs();
    const fresh = new InformerStore<T>(this.source.bound);
    const notHeld = { namespace: 0, total: 0 };
    let next: string | undefined;
    let resourceVersion: string | undefined;
    do {
      const page = await this.source.list({ limit: this.options.pageSize ?? 500, ...(next ? { continue: next } : {}) });
      this.stats.listPages++;
      for (const item of page.items) {
        const object = this.trim(item);
        if (object === undefined) continue;
        const result = fresh.set(keyOf(object), object.metadata?.namespace ?? '', object);
        const out = result.held ? result.evicted && { object: result.evicted.object, scope: 'total' as const } : { object, scope: result.refused };
        if (out) {
          notHeld[out.scope]++;
          this.keptOut(out.object, out.scope);
        }
      }
      resourceVersion ??= page.metadata?.resourceVersion;
      next = page.metadata?.continue || undefined;
    } while (next && this.running);
    if (!this.running) return;
    this.stats.lists++;
    this.listedAt = this.timers.monotonicMs();
    this.listedInMs = this.listedAt - started;
    this.notHeldSinceList = notHeld;
    // This list looked for room already: the next look waits for room made after it.
    this.roomTimer?.cancel();
    this.roomTimer = undefined;
    this.resourceVersion = resourceVersion;
    // Replace the cache, telling listeners what changed while we were not watching.
    const previous = this.store;
    this.store = fresh;
    for (const [key, object] of fresh.entries()) {
      const before = previous.delete(key);
      if (!before) this.emit({ type: 'ADDED', object });
      else if (before.metadata?.resourceVersion !== object.metadata?.resourceVersion) this.emit({ type: 'MODIFIED', object, previous: before });
    }
    for (const gone of previous.values()) this.emit({ type: 'DELETED', object: gone, previous: gone });
    this.isServed = true;
    this.markSynced();
  }

  /** The resource is not served: nothing of it exists, so the cache empties (telling listeners) and counts as synced. */
  private unserved(): void {
    this.isServed = false;
    this.resourceVersion = undefined;
    const previous = this.store;
    this.store = new InformerStore(this.source.bound);
    for (const gone of previous.values()) this.emit({ type: 'DELETED', object: gone, previous: gone });
    this.markSynced();
  }

  private markSynced(): void {
    this.failure = undefined;
    this.attemptedResolve();
    if (this.isSynced) return;
    this.isSynced = true;
    this.syncedResolve();
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
      if (!this.running || this.relistWanted) opened.abort();
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
    this.resourceVersion = received.metadata?.resourceVersion ?? this.resourceVersion;
    const key = keyOf(received);
    const previous = this.store.get(key);
    if (type === 'DELETED') {
      if (previous) this.forget(key, previous);
    } else if (!previous || isNewer(received, previous)) {
      // Our own write may already be cached (cacheAhead()); a lagging event must not regress it.
      this.hold(key, received, previous);
    }
    return true;
  }

  /** Caches the newer `received` under `key` (trimmed; not held when the transform or the bound says so), and tells listeners. */
  private hold(key: string, received: T, previous: T | undefined): void {
    const object = this.trim(received);
    if (object === undefined) {
      if (previous) this.forget(key, previous);
      return;
    }
    const result = this.store.set(key, object.metadata?.namespace ?? '', object);
    if (!result.held) {
      this.notHeldSinceList[result.refused]++;
      this.keptOut(object, result.refused);
      return;
    }
    if (result.evicted) {
      // A fuller namespace gave up its place: it leaves the cache, and waits like any object kept out.
      this.emit({ type: 'DELETED', object: result.evicted.object, previous: result.evicted.object });
      this.notHeldSinceList.total++;
      this.keptOut(result.evicted.object, 'total');
    }
    this.emit(previous ? { type: 'MODIFIED', object, previous } : { type: 'ADDED', object });
  }

  /** Stops holding `key` (deleted, or no longer held by the transform), tells listeners, and looks for room for what the bound kept out. */
  private forget(key: string, previous: T): void {
    this.store.delete(key);
    this.emit({ type: 'DELETED', object: previous, previous });
    this.listForRoom();
  }

  private keptOut(object: T, scope: CacheBoundScope): void {
    this.stats.notHeld++;
    try {
      this.source.onNotHeld?.(object, scope);
    } catch (e) {
      this.options.onError?.(new Error(`${this.source.description}: onNotHeld failed: ${(e as Error).message}`, { cause: e }));
    }
  }

  /**
   * Room was made while objects wait outside the bound: lists again (ending the watch), no sooner
   * than {@link InformerOptions.relistForRoomMs} after the last list, so a full cache that drains
   * one object at a time costs one list per interval, not one per object; and no sooner than ten
   * times the last list took, so lists of many objects the transform drops (thousands of decided
   * requests) take at most a tenth of the time.
   */
  private listForRoom(): void {
    if (this.roomTimer || !this.running || this.notHeldSinceList.namespace + this.notHeldSinceList.total === 0) return;
    const interval = Math.max(this.options.relistForRoomMs ?? 30_000, 10 * this.listedInMs);
    const wait = Math.max(0, this.listedAt + interval - this.timers.monotonicMs());
    this.roomTimer = this.timers.setTimer(wait, () => {
      this.roomTimer = undefined;
      // While a list runs (abortWatch unset), that list catches up already.
      if (!this.running || !this.abortWatch) return;
      this.relistWanted = true;
      this.abortWatch();
    });
    this.roomTimer.unref();
  }

  private trim(object: T): T | undefined {
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
