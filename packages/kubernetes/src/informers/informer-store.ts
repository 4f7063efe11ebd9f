import type { CacheBound } from '../installation/installation.js';

/** Which bound kept an object out: its namespace's, or the cache's in all. */
export type CacheBoundScope = 'namespace' | 'total';

/** An informer's objects by `namespace/name`, counted per namespace, and held within a {@link CacheBound} if one is given. */
export class InformerStore<T> {
  private readonly objects = new Map<string, { readonly namespace: string; object: T }>();
  private readonly perNamespace = new Map<string, number>();

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
   * Holds `object` under `key`. A key already held is always replaced; a new key is refused when
   * its namespace or the cache is full: the scope that refused it is returned, and nothing is held.
   */
  set(key: string, namespace: string, object: T): CacheBoundScope | undefined {
    const held = this.objects.get(key);
    if (held) {
      held.object = object;
      return undefined;
    }
    const inNamespace = this.perNamespace.get(namespace) ?? 0;
    const refused = boundReached(this.bound, inNamespace, this.objects.size);
    if (refused) return refused;
    this.objects.set(key, { namespace, object });
    this.perNamespace.set(namespace, inNamespace + 1);
    return undefined;
  }

  /** Stops holding `key`; the object it held, if any. */
  delete(key: string): T | undefined {
    const held = this.objects.get(key);
    if (!held) return undefined;
    this.objects.delete(key);
    const left = (this.perNamespace.get(held.namespace) ?? 1) - 1;
    if (left > 0) this.perNamespace.set(held.namespace, left);
    else this.perNamespace.delete(held.namespace);
    return held.object;
  }
}

/** The scope whose bound one more object would pass, or undefined while both leave room. */
export function boundReached(bound: CacheBound | undefined, inNamespace: number, total: number): CacheBoundScope | undefined {
  if (!bound) return undefined;
  if (inNamespace >= bound.perNamespace) return 'namespace';
  if (total >= bound.total) return 'total';
  return undefined;
}
