import { DEFAULT_POLICY, type Duration, type Policy, days, formatDuration, hours, minutes, seconds } from '@eso-mtls/core';
import { DEFAULT_CA_REQUEST_DEADLINE, DEFAULT_ISSUER_GROUP, DEFAULT_TRUST_ANCHORS_KEY } from '@eso-mtls/kubernetes';
import { type Flag, type HelpRow, helpTable } from './command-line/args.js';

/** Every flag's environment variable: `ESO_MTLS_` and the flag name in upper snake case. */
export function envVarOf(flag: string): string {
  return `ESO_MTLS_${flag.toUpperCase().replaceAll('-', '_')}`;
}

/** The environment variable that may hold the PKCS#11 user PIN; there is no flag for it, so it never shows in a process list. */
export const PIN_ENV = 'ESO_MTLS_HSM_PIN';

const DURATION = 'a duration such as 500ms, 15s, 10m or 1h30m';

/**
 * Bounds of --propagation-delay. The floor is the least a tuned node can deliver in: the kubelet
 * re-syncs a pod's Secret volumes and ClusterTrustBundle projections every syncFrequency plus up to
 * half again (its jitter), plus the watch or cache delay and the peer's reload; below 10 s no
 * kubelet setting covers that on a loaded node. The ceiling bounds how long every CA activation, and
 * a recovery's pause in signing, waits: 1 h still covers the default kubelet twenty-fold.
 */
export const MIN_PROPAGATION_DELAY: Duration = seconds(10);
/** See {@link MIN_PROPAGATION_DELAY}. */
export const MAX_PROPAGATION_DELAY: Duration = hours(1);
const ADDRESS = 'host:port such as :8080 or 127.0.0.1:8080, or 0 to disable';

/**
 * The shortest --ca-intermediate-duration under `policy`: twice its CA lookahead (120d by default).
 * An intermediate is renewed caLookahead before its notAfter; a shorter one would spend more of
 * its life being replaced than signing, and one within the lookahead would be due as it is issued.
 */
export function minimumIntermediateDuration(policy: Pick<Policy, 'caLookahead'>): Duration {
  return 2 * policy.caLookahead;
}
/** The longest --ca-intermediate-duration: Go's time.Duration, which cert-manager reads `spec.duration` into, ends just past it. */
export const MAX_INTERMEDIATE_DURATION: Duration = hours(2_562_047);
/**
 * Bounds of --ca-request-deadline. Below a minute, requests through a slow issuer (ACME, a remote
 * Vault) would be reported overdue as a rule; past a week, an unapproved request is reported when
 * the active intermediate, renewed 60d before its end, may have too little of its lookahead left.
 */
export const MIN_CA_REQUEST_DEADLINE: Duration = minutes(1);
/** See {@link MIN_CA_REQUEST_DEADLINE}. */
export const MAX_CA_REQUEST_DEADLINE: Duration = days(7);

/**
 * The flags of `eso-mtls controller`, in help order: one table so that parsing, the environment
 * variable names and `--help` can never drift apart. Each names its default (undefined when it is
 * derived from another flag), what it accepts and what it does.
 */
export const CONTROLLER_FLAGS: readonly Flag[] = [
  {
    name: 'kubeconfig',
    kind: 'string',
    default: undefined,
    accepts: 'a path to a kubeconfig file',
    help: 'kubeconfig to use; without it the controller runs in-cluster with its service account',
  },
  {
    name: 'namespace',
    kind: 'string',
    // The design's namespace, which deploy/, the chart's docs and `eso-mtls status` share.
    default: DEFAULT_POLICY.esoNamespace,
    accepts: 'a DNS-1123 label',
    help: 'namespace of ESO core, home of the CA and client Secrets',
  },
  {
    name: 'cluster-domain',
    kind: 'string',
    default: 'cluster.local',
    accepts: 'a DNS name such as cluster.local',
    help: 'cluster DNS domain, used in server SANs and the client SPIFFE ID',
  },
  {
    name: 'ca-secret-name',
    kind: 'string',
    default: 'eso-provider-ca-internal',
    accepts: 'a DNS-1123 subdomain',
    help: 'name of the CA Secret in --namespace',
  },
  {
    name: 'client-secret-name',
    kind: 'string',
    default: 'eso-provider-client-tls',
    accepts: 'a DNS-1123 subdomain',
    help: 'name of the ESO client certificate Secret in --namespace',
  },
  {
    name: 'service-account',
    kind: 'string',
    default: 'external-secrets',
    accepts: 'a DNS-1123 subdomain',
    help: 'service account of ESO core, part of the client certificate identity',
  },
  { name: 'reconcile-interval', kind: 'string', default: '10m', accepts: `${DURATION}, at least 1s`, help: 'safety-net period between full reconciles' },
  {
    name: 'propagation-delay',
    kind: 'string',
    default: formatDuration(DEFAULT_POLICY.propagationDelay),
    accepts: `${DURATION}, from ${formatDuration(MIN_PROPAGATION_DELAY)} to ${formatDuration(MAX_PROPAGATION_DELAY)}`,
    help: "longest a Secret or ClusterTrustBundle update takes to reach every pod: a new CA signs, and a replaced one leaves the bundles, only this long after. Keep the default in production; below the kubelet's syncFrequency x 1.5 plus its Secret cache TTL and the provider's reload, calls fail during CA rotation (docs/controller.md)",
  },
  {
    name: 'max-issuances-per-reconcile',
    kind: 'string',
    default: '1000',
    accepts: 'a whole number from 1 to 1000000, or 0 for no bound',
    help: 'most certificates issued per reconcile, most urgent first (due renewals before new namespaces); the rest follow a second later. Emergency CA rotations are never held back (docs/flood-control.md)',
  },
  {
    name: 'max-namespaces',
    kind: 'string',
    default: '0',
    accepts: 'a whole number from 1 to 1000000, or 0 for no cap',
    help: 'most provider namespaces served; the newest beyond it get no certificate and a Warning Event NamespaceNotServed (docs/flood-control.md)',
  },
  {
    name: 'require-namespace-label',
    kind: 'string',
    default: '',
    accepts: 'a label key=value such as eso-mtls.io/providers-allowed=true, or empty for none',
    help: 'serve labelled Services (and sign pod certificates) only in namespaces carrying this label; the others get a Warning Event NamespaceNotAllowed. Needs RBAC to list and watch namespaces (docs/label-policy.md)',
  },
  { name: 'key-algorithm', kind: 'string', default: 'ECDSA-P256', accepts: 'ECDSA-P256, RSA-2048 or RSA-3072', help: 'algorithm of every newly generated key' },
  {
    name: 'modes',
    kind: 'string',
    default: 'secret',
    accepts: 'secret, pod-certificate, or secret,pod-certificate',
    help: 'how providers and ESO get certificates: Secrets in their namespaces, pod certificates (Kubernetes 1.37+), or both during a migration',
  },
  {
    name: 'server-signer-name',
    kind: 'string',
    default: 'eso-mtls.io/provider-server',
    accepts: 'a signer name such as eso-mtls.io/provider-server',
    help: 'pod-certificate mode: the signer of provider server certificates',
  },
  {
    name: 'client-signer-name',
    kind: 'string',
    default: 'eso-mtls.io/eso-client',
    accepts: 'a signer name such as eso-mtls.io/eso-client',
    help: "pod-certificate mode: the signer of ESO core's client certificate",
  },
  {
    name: 'pod-certificate-max-validity',
    kind: 'string',
    default: '24h',
    accepts: `${DURATION}, from 1h to 2184h`,
    help: "pod-certificate mode: the longest certificate issued (a pod's maxExpirationSeconds is clamped to it)",
  },
  {
    name: 'pod-certificate-max-pending',
    kind: 'string',
    default: '10000',
    accepts: 'a whole number from 1 to 1000000',
    help: 'pod-certificate mode: most pending PodCertificateRequests held in memory, per signer name; those beyond wait in the API, counted in eso_pod_certificate_requests_not_held (docs/pod-certificates.md)',
  },
  {
    name: 'pod-certificate-max-pending-per-namespace',
    kind: 'string',
    default: '1000',
    accepts: 'a whole number from 1 to 1000000',
    help: 'pod-certificate mode: most pending PodCertificateRequests held in memory per namespace and signer name (docs/pod-certificates.md)',
  },
  {
    name: 'prune-orphaned-secrets-after',
    kind: 'string',
    default: '0',
    accepts: `0 (off), or ${DURATION} of at least 1h`,
    help: 'Secret mode: delete our external-secrets-provider-tls Secret of a namespace that has had no labelled Service this long (needs RBAC delete: deploy/overlays/prune-orphaned-secrets)',
  },
  {
    name: 'ca-issuer',
    kind: 'string',
    default: undefined,
    accepts:
      "ClusterIssuer/NAME, or Issuer/NAME for an Issuer in --namespace; with --ca-issuer-group, KIND/NAME of that group's issuer (a namespaced kind in --namespace)",
    help: "chain the CA to your PKI through cert-manager: the controller generates the intermediate's key (in the HSM with --hsm-module) and asks this issuer for the intermediate with a CertificateRequest in --namespace. Needs --ca-trust-anchors, and RBAC on certificaterequests (docs/chaining-to-your-pki.md); unset: a self-signed CA",
  },
  {
    name: 'ca-issuer-group',
    kind: 'string',
    default: DEFAULT_ISSUER_GROUP,
    accepts: 'an API group such as cert-manager.io',
    help: "with --ca-issuer: the issuer's API group (an external issuer's own)",
  },
  {
    name: 'ca-intermediate-duration',
    kind: 'string',
    default: undefined,
    accepts: `${DURATION}, from ${formatDuration(minimumIntermediateDuration(DEFAULT_POLICY))} (twice the CA lookahead) to ${formatDuration(MAX_INTERMEDIATE_DURATION)}`,
    help: `with --ca-issuer: the intermediate's validity asked for (spec.duration; the issuer may return less, and renewal counts from what it returns) (default: the CA validity, ${formatDuration(DEFAULT_POLICY.caValidity)})`,
  },
  {
    name: 'ca-request-deadline',
    kind: 'string',
    default: formatDuration(DEFAULT_CA_REQUEST_DEADLINE),
    accepts: `${DURATION}, from ${formatDuration(MIN_CA_REQUEST_DEADLINE)} to ${formatDuration(MAX_CA_REQUEST_DEADLINE)}`,
    help: 'with --ca-issuer: how long a CertificateRequest may stay unapproved or unissued before it is reported overdue (the active intermediate keeps signing)',
  },
  {
    name: 'ca-from-secret',
    kind: 'string',
    default: undefined,
    accepts: 'a DNS-1123 subdomain',
    help: 'chain the CA to your PKI with an intermediate you maintain: a Secret in --namespace holding tls.crt (the intermediate first, then its chain) and tls.key, read and watched, never written. Needs --ca-trust-anchors; not with --hsm-module, nor with --ca-issuer (docs/chaining-to-your-pki.md)',
  },
  {
    name: 'ca-trust-anchors',
    kind: 'string',
    default: undefined,
    accepts: `Secret/NAME[/KEY] or ConfigMap/NAME[/KEY], in --namespace (KEY default ${DEFAULT_TRUST_ANCHORS_KEY})`,
    help: "with --ca-issuer or --ca-from-secret: the PEM roots the intermediate must chain to; the one it chains to is published in every trust bundle (cert-manager's status.ca is only a cross-check)",
  },
  {
    name: 'leader-elect',
    kind: 'bool',
    default: 'false',
    accepts: 'true or false',
    help: 'elect a leader through a coordination.k8s.io/v1 Lease; only the leader writes',
  },
  {
    name: 'leader-election-namespace',
    kind: 'string',
    default: undefined,
    accepts: 'a DNS-1123 label',
    help: 'namespace of the leader election Lease (default: --namespace)',
  },
  { name: 'leader-election-id', kind: 'string', default: 'eso-mtls-controller', accepts: 'a DNS-1123 subdomain', help: 'name of the leader election Lease' },
  {
    name: 'leader-election-identity',
    kind: 'string',
    default: undefined,
    accepts: 'a non-empty string of at most 128 characters',
    help: 'holder identity written into the Lease (default: hostname_<random>)',
  },
  {
    name: 'leader-election-lease-duration',
    kind: 'string',
    default: '15s',
    accepts: DURATION,
    help: 'how long non-leaders wait after the last observed renewal before taking over',
  },
  {
    name: 'leader-election-renew-deadline',
    kind: 'string',
    default: '10s',
    accepts: DURATION,
    help: 'the leader stops writing and gives up if it has not renewed within this long',
  },
  { name: 'leader-election-retry-period', kind: 'string', default: '2s', accepts: DURATION, help: 'period between acquire and renew attempts' },
  { name: 'metrics-bind-address', kind: 'string', default: ':8080', accepts: ADDRESS, help: 'address of the Prometheus /metrics endpoint' },
  { name: 'health-probe-bind-address', kind: 'string', default: ':8081', accepts: ADDRESS, help: 'address of the /healthz and /readyz endpoints' },
  {
    name: 'hsm-module',
    kind: 'string',
    default: undefined,
    accepts: 'a path to a PKCS#11 module (.so)',
    help: 'keep the CA keys in an HSM: a PKCS#11 token through this module (needs the @eso-mtls/pkcs11 package; docs/hsm.md); unset: the CA key is in the CA Secret',
  },
  {
    name: 'hsm-token-label',
    kind: 'string',
    default: undefined,
    accepts: 'a token label of 1 to 32 characters',
    help: 'label of the token holding the CA keys',
  },
  {
    name: 'hsm-key-label-prefix',
    kind: 'string',
    default: 'eso-mtls-ca-',
    accepts: 'up to 64 printable ASCII characters',
    help: 'label prefix of the CA keys; only keys with it are ever destroyed, so give each controller sharing a token its own',
  },
  {
    name: 'hsm-pin-file',
    kind: 'string',
    default: undefined,
    accepts: 'a path to a file holding the PIN',
    help: `file holding the token's user PIN, read at each login; or set ${PIN_ENV} (the PIN is never a flag value)`,
  },
  {
    name: 'hsm-keep-retired-keys',
    kind: 'bool',
    default: 'false',
    accepts: 'true or false',
    help: "keep a retired CA's key in the token after its CA has left every bundle; false destroys it",
  },
  {
    name: 'log-level',
    kind: 'string',
    default: 'info',
    accepts: 'trace, debug, info, warn, error, fatal or silent',
    help: 'minimum level of the JSON log lines written to stdout',
  },
];

/** The text `eso-mtls controller --help` prints. */
export function controllerUsage(): string {
  const rows: HelpRow[] = CONTROLLER_FLAGS.map((f) => [
    `--${f.name}${f.kind === 'bool' ? '' : ' <value>'}`,
    [`${f.help}${f.default === undefined ? '' : ` (default ${f.default})`}`, `env ${envVarOf(f.name)}; accepts ${f.accepts}`],
  ]);
  rows.push(['--help', 'print this text']);
  return [
    'Usage: eso-mtls controller [flags]',
    '',
    'Issues and rotates the mTLS certificates of ESO out-of-process providers.',
    'Every flag can also be set by its environment variable; a flag on the command line wins.',
    '',
    'Flags:',
    helpTable(rows, { maxUsageWidth: 24 }),
    '',
  ].join('\n');
}
