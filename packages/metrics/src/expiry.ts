import type { Instant } from '@eso-mtls/core';

/**
 * Seconds from `now` until `notAfter` (both epoch milliseconds); negative once expired, so an
 * expired certificate still shows, and alerts on "< 3 days" keep firing.
 */
export function secondsUntil(notAfter: Instant, now: Instant): number {
  return (notAfter - now) / 1000;
}

/** True when `t` can be an epoch-millisecond instant (a finite number). */
export const isInstant = (t: unknown): t is Instant => typeof t === 'number' && Number.isFinite(t);
