import type { Policy } from '../policy/policy.js';
import { rotationJitter } from '../policy/rules.js';
import { type Duration, type Instant, formatDuration, hours, minutes, seconds, truncateToSecond } from '../common/time.js';

/*
 * The validity of a pod certificate, within what kube-apiserver v1.37.2 accepts
 * (docs/pod-certificates-facts.md, section 4): notBefore within 5 minutes of its clock, a lifetime
 * of at least an hour and at most the request's maxExpirationSeconds, and beginRefreshAt at least
 * 10 minutes after notBefore and 10 minutes before notAfter.
 */

/** notBefore is backdated by the policy's backdate, but never more than this: the apiserver refuses 5 minutes. */
export const MAX_POD_BACKDATE: Duration = minutes(2);
/** The shortest lifetime the apiserver accepts for a pod certificate. */
export const MIN_POD_LIFETIME: Duration = hours(1);
/** The longest `maxExpirationSeconds` a request can carry (91 days), hence the longest pod certificate. */
export const MAX_POD_LIFETIME: Duration = seconds(7_862_400);
/** beginRefreshAt keeps this far from both ends of the validity. */
export const REFRESH_MARGIN: Duration = minutes(10);
/** `maxExpirationSeconds` when the request has none (the apiserver's default). */
export const DEFAULT_MAX_EXPIRATION_SECONDS = 86_400;

/** The times of one pod certificate, whole seconds, as they go into the leaf and the request's status. */
export interface PodValidity {
  readonly notBefore: Instant;
  readonly notAfter: Instant;
  readonly beginRefreshAt: Instant;
}

/** What decides a pod certificate's times. */
export interface PodValidityInput {
  /** The signer's clock. */
  readonly now: Instant;
  /** The request's `spec.maxExpirationSeconds` (undefined: the apiserver's default of a day). */
  readonly maxExpirationSeconds: number | undefined;
  /** The longest leaf this signer issues (`--pod-certificate-max-validity`). */
  readonly maxValidity: Duration;
  /** notAfter of the CA that signs: the leaf never outlives it. */
  readonly caNotAfter: Instant;
  /** notBefore of the CA that signs, when later than the backdate reaches (an upstream intermediate issued moments ago): the leaf never begins before it. */
  readonly caNotBefore?: Instant;
  /** The new leaf's serial (hex), which spreads refreshes of leaves issued together. */
  readonly serialNumber: string;
  /** Lookahead, jitter and backdate. */
  readonly policy: Policy;
}

/** The times of a pod certificate, or why none fits (the CA is too close to its end). */
export type PodValidityResult = ({ readonly ok: true } & PodValidity) | { readonly ok: false; readonly detail: string };

/** The first whole second at or after `t`. */
const ceilToSecond = (t: Instant): Instant => Math.ceil(t / 1000) * 1000;

/**
 * notBefore = now − min(backdate, 2 min), to a whole second within that; notAfter = notBefore + min(maxExpirationSeconds,
 * maxValidity), clamped to the CA's notAfter; beginRefreshAt by {@link podRefreshTime}. Fails
 * when the clamp leaves less than the apiserver's minimum lifetime of an hour, or the request's
 * maxExpirationSeconds is one the apiserver never lets through.
 */
export function podValidity(input: PodValidityInput): PodValidityResult {
  const { now, policy } = input;
  // Truncating now − 2 min would backdate up to 999 ms more; the later whole second keeps within 2 min.
  const notBefore = Math.max(
    truncateToSecond(now - policy.notBeforeBackdate),
    ceilToSecond(now - MAX_POD_BACKDATE),
    ceilToSecond(input.caNotBefore ?? -Infinity),
  );
  const requested = input.maxExpirationSeconds ?? DEFAULT_MAX_EXPIRATION_SECONDS;
  if (!Number.isInteger(requested) || seconds(requested) < MIN_POD_LIFETIME || seconds(requested) > MAX_POD_LIFETIME) {
    return { ok: false, detail: `maxExpirationSeconds ${requested} is outside [3600, 7862400], the range the apiserver accepts` };
  }
  const lifetime = Math.min(seconds(requested), input.maxValidity);
  if (lifetime < MIN_POD_LIFETIME) {
    return {
      ok: false,
      detail: `the maximum validity ${formatDuration(input.maxValidity)} is below the ${formatDuration(MIN_POD_LIFETIME)} a pod certificate must last`,
    };
  }
  const notAfter = truncateToSecond(Math.min(notBefore + lifetime, input.caNotAfter));
  if (notAfter - notBefore < MIN_POD_LIFETIME) {
    return {
      ok: false,
      detail: `the signing CA expires at ${new Date(input.caNotAfter).toISOString()}, leaving less than the ${formatDuration(MIN_POD_LIFETIME)} a pod certificate must last`,
    };
  }
  return { ok: true, notBefore, notAfter, beginRefreshAt: podRefreshTime(notBefore, notAfter, input.serialNumber, policy) };
}

/**
 * When the kubelet should refresh: notAfter − min(leafLookahead, lifetime/3), less a jitter of up
 * to min(leafJitter, lifetime/12) derived from the serial, clamped to [notBefore + 10 min,
 * notAfter − 10 min] and truncated to the second. The Secret leaves' lookahead and jitter would
 * exceed a short pod certificate's whole life, so both shrink with the lifetime: a pod still
 * refreshes well before its end, and pods started together still refresh apart. With the default
 * policy a 24-hour leaf refreshes 8 hours early plus up to 2, a 90-day leaf 30 days early (its
 * third is under the 35-day lookahead) plus up to 3.
 */
export function podRefreshTime(notBefore: Instant, notAfter: Instant, serialNumber: string, policy: Policy): Instant {
  const lifetime = notAfter - notBefore;
  const early = Math.min(policy.leafLookahead, lifetime / 3) + rotationJitter(serialNumber, Math.min(policy.leafJitter, lifetime / 12));
  const clamped = Math.min(Math.max(notAfter - early, notBefore + REFRESH_MARGIN), notAfter - REFRESH_MARGIN);
  return truncateToSecond(clamped);
}
