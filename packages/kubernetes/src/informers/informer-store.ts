import type { CacheBound } from '../installation/installation.js';

/** Which bound kept an object out: its namespace's, or the cache's in all. */
export type CacheBoundScope = 'namespace' | 'total';

/** What {@link InformerStore.set} did with an object. */
export type StoreResult<T> =
  { readonly held: true; readonly evicted?: { readonly key: string; readonly object: T } } | { readonly held: false; readonly refused: CacheBoundScope };

/**
 * An informer's objects by `namespace/name`, grouped per namespace, and held within a
 * {@link CacheBound} if one is given. When the cache is full in all, a namespace holding fewer than
 * the fullest one takes a place from it: a few namespaces that fill the cache never keep a newcomer
 * waiting for the next list.
 */
export class InformerStore<T> {
  private readonly objects = new Map<string, { readonly namespace: string; object: T }>();
  private readonly perNamespace = new Map<string, Set<string>>();

  constructor(private readonly bound?: CacheBound) {}

  get(key: string): T | undefined {
    return this.objects.get(key)?.object;
  }

  /** Every held object; objects held while the iteration waits are visited too (Map order). */
  *values(): IterableIterator<T> {
    for (const entry of this.objects.values()) yield entry.object;
  }

  /** Every held object with its key. */
  *entries(): IterableIterator<[string, T]> {
    for (const [key, entry] of this.objects) yield [key, entry.object];
  }

  get size(): number {
    return this.objects.size;
  }

  /**
   * Holds `object` under `key`. A key already held is always replaced. A new key is refused when
   * its namespace is full, or when the cache is full and no namespace holds more than one above
   * its own; otherwise it is held, and takes the place of the fullest namespace's newest object
   * when the cache is full (that one is then returned as evicted).
   */
  set(key: string, namespace: string, object: T): StoreResult<T> {
    const held = this.objects.get(key);
    if (held) {
      held.object = object;
      return { held: true };
    }
    const inNamespace = this.perNamespace.get(namespace)?.size ?? 0;
    const refused = boundReached(this.bound, inNamespace, this.objects.size);
    let evicted: { key: string; object: T } | undefined;
    if (refused === 'total') {
      const from = this.fullest();
      if (from === undefined || from.size <= inNamespace + 1) return { held: false, refused };
      const last = newest(from);
      evicted = { key: last, object: this.delete(last)! };
    } else if (refused) {
      return { held: false, refused };
    }
    this.objects.set(key, { namespace, object });
    let keys = this.perNamespace.get(namespace);
    if (!keys) this.perNamespace.set(namespace, (keys = new Set()));
    keys.add(key);
    return evicted ? { held: true, evicted } : { held: true };
  }

  /** Stops holding `key`; the object it held, if any. */
  delete(key: string): T | undefined {
    const held = this.objects.get(key);
    if (!held) return undefined;
    this.objects.delete(key);
    const keys = this.perNamespace.get(held.namespace);
    keys?.delete(key);
    if (keys?.size === 0) this.perNamespace.delete(held.namespace);
    return held.object;
  }

  /** The keys of the namespace holding the most objects. */
  private fullest(): Set<string> | undefined {
    let most: Set<string> | undefined;
    for (const keys of this.perNamespace.values()) if (!most || keys.size > most.size) most = keys;
    return most;
  }
}

/** The key added last to `keys` (Set order), without copying the set. */
function newest(keys: Set<string>): string {
  let last = '';
  for (const key of keys) last = key;
  return last;
}

/** The scope whose bound one more object would pass, or undefined while both leave room. */
function boundReached(bound: CacheBound | undefined, inNamespace: number, total: number): CacheBoundScope | undefined {
  if (!bound) return undefined;
  if (inNamespace >= bound.perNamespace) return 'namespace';
  if (total >= bound.total) return 'total';
  return undefined;
}
