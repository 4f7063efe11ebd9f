/**
 * Every metric this package exports, by its exposition name. The alert rules in
 * deploy/prometheus/alerts.yaml use these names; a test holds the two together.
 */
export const METRIC_NAMES = Object.freeze({
  /** Controller gauge: seconds until a namespace's server certificate expires, per labelled Service. */
  providerCertificateExpiry: 'eso_provider_certificate_expiry_seconds',
  /** Controller gauge: seconds until the ESO client certificate expires. */
  clientCertificateExpiry: 'eso_client_certificate_expiry_seconds',
  /** Controller gauge: seconds until a CA certificate expires, per CA state. */
  caCertificateExpiry: 'eso_ca_certificate_expiry_seconds',
  /** Controller counter: server certificates issued, per Service and reason. */
  providerCertificateRotations: 'eso_provider_certificate_rotation_total',
  /** Controller counter: server certificate issuances that failed, per Service. */
  providerCertificateRotationFailures: 'eso_provider_certificate_rotation_failures_total',
  /** Controller counter: CA creations or rotations that failed (generating, signing or writing the CA Secret). */
  caCertificateRotationFailures: 'eso_ca_certificate_rotation_failures_total',
  /** Controller gauge: 1 per labelled Service whose rotation request or names are refused, by reason. */
  providerServicesRefused: 'eso_provider_services_refused',
  /** Controller gauge: provider namespaces the cap on namespaces (--max-namespaces) leaves out. */
  namespacesNotServed: 'eso_namespaces_not_served',
  /** Controller gauge: while no CA signs (a recovery waits for its new CA), when one is expected to sign again. */
  caSigningPausedUntil: 'eso_ca_signing_paused_until_timestamp_seconds',
  /** Controller gauge: 1 per provider namespace the CA rotation went on without (its Secret refuses our writes), by reason. */
  caRotationNamespaceLeftBehind: 'eso_ca_rotation_namespace_left_behind',
  /** Controller gauge: 1 labelled with the upstream CA source (issuer or Secret) when one is configured. */
  caUpstreamInfo: 'eso_ca_upstream_info',
  /** Controller gauge: 1 per problem of the upstream CA source that stands, by source and reason. */
  caUpstreamProblem: 'eso_ca_upstream_problem',
  /** Controller counter: PodCertificateRequests decided (pod-certificate mode), per signer, result and reason. */
  podCertificateRequests: 'eso_pod_certificate_requests_total',
  /** Controller gauge, every replica: pending PodCertificateRequests the signer's bound keeps out of memory, per bound (namespace, total). */
  podCertificateRequestsNotHeld: 'eso_pod_certificate_requests_not_held',
  /** Controller gauge: pods serving certificate names their Services no longer give them, per namespace. */
  podCertificatesStaleNames: 'eso_pod_certificates_stale_names',
  /** Controller counter: deletions of orphaned provider Secrets (opt-in pruning), per result (deleted, failed). */
  orphanedSecretDeletions: 'eso_orphaned_secret_deletions_total',
  /** Controller counter: Secrets this controller wrote that another controller replaced within a reconcile interval, per component. */
  secretWriteConflicts: 'eso_secret_write_conflicts_total',
  /** Controller gauge, every replica: 1 per reason while the leader election Lease is held by no replica of this installation. */
  leaderLeaseForeign: 'eso_leader_lease_foreign',
  /** Provider counter: certificate pairs swapped in by the hot reload. */
  providerHotReloads: 'eso_provider_certificate_hot_reload_total',
  /** Provider counter: reload attempts that kept the last good pair. */
  providerHotReloadFailures: 'eso_provider_certificate_hot_reload_failures_total',
  /** Provider gauge: seconds until the certificate the provider actually serves expires. */
  providerServedCertificateExpiry: 'eso_provider_served_certificate_expiry_seconds',
  /** Provider gauge: the whole validity (notAfter − notBefore) of the certificate the provider serves, in seconds. */
  providerServedCertificateLifetime: 'eso_provider_served_certificate_lifetime_seconds',
} as const);

/** One of the {@link METRIC_NAMES}. */
export type MetricName = (typeof METRIC_NAMES)[keyof typeof METRIC_NAMES];
