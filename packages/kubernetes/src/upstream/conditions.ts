import type { Instant } from '@eso-mtls/core';

/* The status conditions cert-manager writes on its objects, as the upstream readers look at them. */

/** A status condition (metav1.Condition's fields cert-manager fills). */
export interface StatusCondition {
  readonly type?: string;
  readonly status?: string;
  readonly reason?: string;
  readonly message?: string;
  readonly lastTransitionTime?: string;
  readonly observedGeneration?: number;
}

/** The condition of `type`, if any. */
export const conditionOf = (conditions: readonly StatusCondition[] | undefined, type: string): StatusCondition | undefined =>
  conditions?.find((c) => c.type === type);

/** An RFC 3339 time as an instant, or undefined when absent or unreadable. */
export function instantOf(time: string | undefined): Instant | undefined {
  const t = time === undefined ? NaN : Date.parse(time);
  return Number.isFinite(t) ? t : undefined;
}
