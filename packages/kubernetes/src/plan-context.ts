import type { CertificateCache, Duration, Instant, NamespaceRequirement, PlanContext, Policy } from '@eso-mtls/core';

/**
 * What of an installation's configuration its plans depend on besides the snapshot. The fields are
 * named as the controller's configuration and the adapter's options name them, so that either (and
 * what `eso-mtls status` reads from the same flags) is one. Undefined fields are unset: no bound, no
 * requirement, no pod certificates.
 */
export interface PlanConfiguration {
  /** The certificate policy. */
  readonly policy: Policy;
  /** Pod-certificate mode (`--modes`): the longest certificate its signers issue; undefined when the mode is off. */
  readonly podCertificates?: { readonly maxValidity: Duration } | undefined;
  /** The most leaves one plan issues (`--max-issuances-per-reconcile`). */
  readonly maxIssuancesPerReconcile?: number | undefined;
  /** The most provider namespaces served (`--max-namespaces`). */
  readonly maxNamespaces?: number | undefined;
  /** The label a namespace must carry before it is served (`--require-namespace-label`). */
  readonly namespaceRequirement?: NamespaceRequirement | undefined;
}

/**
 * The context `planRotation` plans with at `now` under `configuration`. The one place it is built,
 * for the controller's reconcile, for `eso-mtls status` and for the demo, so that all plan a
 * snapshot alike.
 */
export function planContext(configuration: PlanConfiguration, now: Instant, cache: CertificateCache): PlanContext {
  const { policy, podCertificates, maxIssuancesPerReconcile, maxNamespaces, namespaceRequirement } = configuration;
  return {
    now,
    policy,
    cache,
    ...(podCertificates === undefined ? {} : { podCertificateMaxValidity: podCertificates.maxValidity }),
    ...(maxIssuancesPerReconcile === undefined ? {} : { maxIssuances: maxIssuancesPerReconcile }),
    ...(maxNamespaces === undefined ? {} : { maxNamespaces }),
    ...(namespaceRequirement === undefined ? {} : { namespaceRequirement }),
  };
}
