import type { CertificateCache, Instant, PlanContext } from '@eso-mtls/core';
import type { Installation } from './installation.js';

/** What of an installation its plans depend on besides the snapshot; the demo gives a policy only. */
type Planned = Pick<Installation, 'policy'> & Partial<Pick<Installation, 'podCertificates' | 'maxIssuancesPerReconcile' | 'maxNamespaces' | 'namespaceRequirement'>>;

/**
 * The context `planRotation` plans with at `now` for an installation. The one place it is built,
 * for the controller's reconcile, for `eso-mtls status` and for the demo, so that all plan a
 * snapshot alike. Unset fields are unset in the context too: no bound, no requirement, no pod
 * certificates.
 */
export function planContext(installation: Planned, now: Instant, cache: CertificateCache): PlanContext {
  const { policy, podCertificates, maxIssuancesPerReconcile, maxNamespaces, namespaceRequirement } = installation;
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
