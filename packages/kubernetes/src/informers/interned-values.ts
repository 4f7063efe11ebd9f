/**
 * Interned values: one copy per content, shared by every cached object that holds it. Every
 * provider Secret holds the same trust bundle, so 10,000 Secrets need one copy of it (its base64
 * text, its decoded bytes), not 10,000. Bounded: insertion order, the oldest entry dropped first.
 * A value that falls out is only no longer shared; nothing is lost.
 */
export class InternedValues<V> {
  private readonly table = new Map<string, V>();

  constructor(private readonly max = 64) {}

  /** The value already held for `key`, or `make()`'s, remembered. */
  get(key: string, make: () => V): V {
    let value = this.table.get(key);
    if (value === undefined) {
      value = make();
      this.table.set(key, value);
      if (this.table.size > this.max) this.table.delete(this.table.keys().next().value!);
    }
    return value;
  }
}
