import type { Instant, Plan, SecretState, UpstreamObservation } from '@eso-mtls/core';
import type { V1Secret } from '@kubernetes/client-node';

/**
 * The seam between the rounds and an upstream CA source (upstream/): the rounds give each plan what
 * the source holds, and let it act on what the plan asks of it. The rounds never import the
 * source; the adapter plugs it in when a source other than the self-signed CA is configured.
 */
export interface CaUpstream {
  /** What the source holds now, from its caches, judged against the CA Secret as read (its pending key and request). */
  observe(caSecret: SecretState | undefined): UpstreamObservation;
  /**
   * After the round's writes: sends the request the plan asks for (storing its key in the CA
   * Secret first) and deletes our requests nothing names any more. Failures are reported by the
   * source and counted in the result; nothing throws.
   */
  act(plan: Plan, caSecret: { readonly state: SecretState | undefined; readonly object: V1Secret | undefined }, now: Instant): Promise<CaUpstreamResult>;
}

/** What acting on a plan did. */
export interface CaUpstreamResult {
  /** Objects written: the CA Secret's pending key, a request created. */
  readonly written: number;
  /** The CA Secret moved on before the pending key was written: plan again. */
  readonly stale: number;
  /** Writes or deletions that failed (reported). */
  readonly failed: number;
}
