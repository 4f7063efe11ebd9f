import type { Instant, MaterializedCa, ObservedBundle } from '@eso-mtls/core';

/** How one publish of trust bundles went, for the round's counts and reports. */
export interface PublishResult {
  readonly written: number;
  /** Writes that failed; retried with the reconciler's backoff. */
  readonly failed: readonly { readonly name: string; readonly message: string }[];
  /** Bundles another party holds under our names or our label: left alone, a standing problem rather than a failure to retry. */
  readonly conflicts: readonly { readonly name: string; readonly message: string }[];
}

/**
 * Another mode that signs with the CA the rounds store: all the rounds know of it. The rounds
 * decide the CA and write it; the follower publishes the trust bundles its signatures are checked
 * against, and signs only with a CA that is stored and published.
 */
export interface CaFollower {
  /** The trust bundles it has published, as the CA activation reads them: a new CA activates only once they carry it. */
  observedBundles(): ObservedBundle[];
  /** Stops signing before a CA write, and resolves once no signature made with the old CA is in flight. */
  withdraw(): Promise<void>;
  /** Brings its trust bundles to `ca`'s; failures are returned, not thrown. */
  publish(ca: MaterializedCa, now: Instant): Promise<PublishResult>;
  /** Signs with `ca` from now on (stored, and its bundles published). */
  use(ca: MaterializedCa): void;
}
