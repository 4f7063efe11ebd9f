import type { CertificateCache, Duration, Instant, NamespaceRequirement, PlanContext, Policy } from '@eso-mtls/core';

/**
 * What of an installation's configuration its plans depend on besides the snapshot: the
 * controller's policy and bounds, as the adapter is given them and as `eso-mtls status` reads them
 * from the same flags. Undefined fields are unset (no bound, no requirement, no pod certificates).
 */
export interface PlanSettings {
  /** The certificate policy. */
  readonly policy: Policy;
  /** Pod-certificate mode: the longest certificate the signers issue. */
  readonly podCertificateMaxValidity?: Duration | undefined;
  /** The most leaves one plan issues (`--max-issuances-per-reconcile`). */
  readonly maxIssuances?: number | undefined;
  /** The most provider namespaces served (`--max-namespaces`). */
  readonly maxNamespaces?: number | undefined;
  /** The label a namespace must carry before it is served (`--require-namespace-label`). */
  readonly namespaceRequirement?: NamespaceRequirement | undefined;
}

/**
 * The context `planRotation` plans with at `now`. The one place it is built, for the controller's
 * reconcile and for `eso-mtls status`, so that both plan the same snapshot alike.
 */
export function planContext(settings: PlanSettings, now: Instant, cache: CertificateCache): PlanContext {
  const { policy, podCertificateMaxValidity, maxIssuances, maxNamespaces, namespaceRequirement } = settings;
  return {
    now,
    policy,
    cache,
    ...(podCertificateMaxValidity === undefined ? {} : { podCertificateMaxValidity }),
    ...(maxIssuances === undefined ? {} : { maxIssuances }),
    ...(maxNamespaces === undefined ? {} : { maxNamespaces }),
    ...(namespaceRequirement === undefined ? {} : { namespaceRequirement }),
  };
}
