/** Milliseconds, p50 / p99 / max, over `n` values. */
export interface Spread {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** `values` in ascending order (a copy). */
export const sorted = (values: readonly number[]): number[] => [...values].sort((a, b) => a - b);

/** The value below which `fraction` of the `ascending` values lie (nearest rank); NaN for none. */
export function percentile(ascending: readonly number[], fraction: number): number {
  return ascending[Math.min(ascending.length - 1, Math.max(0, Math.ceil(fraction * ascending.length) - 1))] ?? NaN;
}

/** The p50, p99 and max of `values` (nearest rank). */
export function spread(values: readonly number[]): Spread {
  const a = sorted(values);
  return { n: a.length, p50: percentile(a, 0.5), p99: percentile(a, 0.99), max: a.at(-1) ?? NaN };
}
