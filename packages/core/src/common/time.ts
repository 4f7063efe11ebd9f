/**
 * Instants are milliseconds since the Unix epoch and durations are milliseconds, as plain numbers:
 * plans compare and add them constantly, and numbers cannot be mutated behind the planner's back.
 */
export type Instant = number;
/** A length of time in milliseconds. */
export type Duration = number;

const SECOND = 1000;

/** `n` seconds as a {@link Duration}. */
export const seconds = (n: number): Duration => n * SECOND;
/** `n` minutes as a {@link Duration}. */
export const minutes = (n: number): Duration => n * 60 * SECOND;
/** `n` hours as a {@link Duration}. */
export const hours = (n: number): Duration => n * 3600 * SECOND;
/** `n` days as a {@link Duration}. */
export const days = (n: number): Duration => n * 86_400 * SECOND;

/**
 * X.509 times have whole-second precision, so every time written into a certificate or compared
 * with one is truncated to the second first; otherwise a renewal computed from an untruncated
 * time can land a fraction of a second after the reconcile meant to perform it.
 */
export const truncateToSecond = (t: Instant): Instant => Math.floor(t / SECOND) * SECOND;

/** An RFC 3339 instant, or undefined when absent or unreadable. */
export function parseInstant(text: string | undefined): Instant | undefined {
  const t = text === undefined ? NaN : Date.parse(text);
  return Number.isFinite(t) ? t : undefined;
}

/** Human-readable duration for error messages, e.g. `35d`, `10m`, `90s`, `-5m`; `Infinity` and `NaN` as such. */
export function formatDuration(d: Duration): string {
  if (!Number.isFinite(d)) return String(d);
  if (d < 0) return `-${formatDuration(-d)}`;
  if (d % days(1) === 0) return `${d / days(1)}d`;
  if (d % hours(1) === 0) return `${d / hours(1)}h`;
  if (d % minutes(1) === 0) return `${d / minutes(1)}m`;
  if (d % SECOND === 0) return `${d / SECOND}s`;
  return `${d}ms`;
}
