import { type Policy, days } from '@eso-mtls/core';

/** Which validity `--validity` asks the leaves to have now: the error paths a provider must take. */
export type LeafValidity = 'current' | 'expired' | 'not-yet-valid';

/** The values `--validity` takes. */
export const LEAF_VALIDITIES: readonly LeafValidity[] = ['current', 'expired', 'not-yet-valid'];

// Far beyond any clock-skew allowance a TLS peer or the material checker makes (minutes).
const MARGIN = days(1);

/**
 * How far from the wall clock dev-certs issues, so that the leaves are `validity` now: `expired`
 * moves the clock back a leaf's lifetime and a day (notAfter a day ago; the CA, which lives longer,
 * stays valid), `not-yet-valid` forward a day past the backdate (notBefore a day ahead, the CA's
 * too). The planner judges with the same moved clock, so it sees fresh leaves and re-issues none. Pure.
 */
export function issuanceClockOffsetMs(validity: LeafValidity, policy: Policy): number {
  switch (validity) {
    case 'current':
      return 0;
    case 'expired':
      return -(policy.leafValidity + MARGIN);
    case 'not-yet-valid':
      return MARGIN + policy.notBeforeBackdate;
  }
}
