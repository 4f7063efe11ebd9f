import { type Duration, formatDuration } from '@eso-mtls/core';

const UNITS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

const TERM = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/y;

/**
 * Parses a duration the way Go's `time.ParseDuration` writes them (`10m`, `1h30m`, `2.5s`,
 * `500ms`), so that flags read like those of controller-runtime based controllers, plus days
 * (`90d`, `1d12h`), which certificate lifetimes need.
 * Returns undefined for anything else, including a bare number (a unit is required) and values
 * that are not a whole number of milliseconds.
 */
export function parseDuration(text: string): Duration | undefined {
  if (text === '0') return 0;
  if (text.length === 0) return undefined;
  let total = 0;
  TERM.lastIndex = 0;
  while (TERM.lastIndex < text.length) {
    const m = TERM.exec(text);
    if (!m) return undefined;
    total += Number(m[1]) * UNITS[m[2] as string]!;
  }
  // Float error from decimal terms (`0.1s`) is forgiven; a fraction of a millisecond is not.
  const rounded = Math.round(total);
  return Number.isSafeInteger(rounded) && Math.abs(rounded - total) < 1e-6 ? rounded : undefined;
}

/**
 * A duration written back the way a flag takes it: the text the user typed when there is one
 * (`1d12h` stays `1d12h`, not `36h`), else the shortest form, with zero as `0s` (`0d` reads like
 * a typo for a real lifetime).
 */
export function formatFlagDuration(d: Duration, typed?: string): string {
  if (typed !== undefined) return typed;
  return d === 0 ? '0s' : formatDuration(d);
}
