/**
 * What `eso-mtls status` reports: plain data, the same for text, JSON and YAML. It holds only
 * public facts about certificates (names, serials, dates, verdicts); it has no field a private key
 * or a certificate's bytes could reach.
 */

/** Why a Secret, a trust bundle or a signer's requests need attention. */
export type ProblemKind =
  | 'missing' // no Secret, or an empty placeholder not adopted yet
  | 'invalid' // a Secret of ours whose data cannot be served (garbage, mismatched key, bad bundle)
  | 'foreign' // a Secret by our name that this installation did not write: left alone; or a Lease held by no replica of ours
  | 'conflict' // something the controller will not do (a bad Service name, a CA that is not ours)
  | 'untrusted' // a leaf signed by none of our CAs
  | 'expired' // past notAfter
  | 'refused' // a labelled Service left out of the certificate, or its rotation request ignored
  | 'not_allowed' // a provider namespace without the label of --require-namespace-label: not served at all
  | 'not_served' // a provider namespace the cap on namespaces (--max-namespaces) leaves out: not served at all
  | 'unreachable' // a CA key in a PKCS#11 token that the token, given with --hsm-module, could not be asked about
  | 'pending' // a write due now that the controller has not made yet, or a request it has not decided
  | 'upstream'; // the upstream CA source gives no usable intermediate, or warns (the reason first, as eso_ca_upstream_problem names it)

/** One problem, in a sentence that names the object. */
export interface Problem {
  readonly kind: ProblemKind;
  readonly message: string;
}

/** The public facts of one certificate. */
export interface CertificateFacts {
  readonly subject: string;
  readonly issuer: string;
  readonly serialNumber: string;
  readonly notBefore: string;
  readonly notAfter: string;
  /** Whole days until notAfter; negative once expired. */
  readonly daysLeft: number;
}

/** When the controller will next issue this leaf, and why. */
export interface NextRotation {
  /** RFC 3339; undefined while it waits for a CA with no known time. */
  readonly at?: string;
  readonly reason: string;
  readonly message?: string;
}

/** A Secret status could or could not read. */
export interface Checked {
  /** `<namespace>/<name>` */
  readonly secret: string;
  /** False when the Secret could not be read; `unchecked` says why. */
  readonly checked: boolean;
  readonly unchecked?: string;
  readonly problems: readonly Problem[];
}

/** A CA certificate in the CA Secret. */
export interface CaCertificateReport extends CertificateFacts {
  readonly slot: 'active' | 'next' | 'retired';
}

/**
 * A CA key kept in a PKCS#11 token: the CA Secret holds a reference to it (`ca.key-ref`,
 * `next.key-ref`) instead of the key.
 */
export interface CaKeyReport {
  readonly slot: 'active' | 'next';
  /** The CA Secret's key holding the reference. */
  readonly field: string;
  /** True when the token was asked (`--hsm-module`) and holds the CA's key. */
  readonly checked: boolean;
  /** What was found, or why it was not checked. */
  readonly detail: string;
}

/** One certificate of a CA path. */
export interface PathCertificateReport extends Pick<CertificateFacts, 'subject' | 'serialNumber' | 'notAfter' | 'daysLeft'> {
  /** The last of the path: the trust anchor, which every bundle holds. */
  readonly anchor: boolean;
}

/** A CA slot's path: the certificate that signs first, then the ones above it, the trust anchor last. */
export interface CaPathReport {
  readonly slot: 'active' | 'next';
  readonly certificates: readonly PathCertificateReport[];
}

/** Where the CA comes from, when an upstream source is configured or recorded (docs/chaining-to-your-pki.md). */
export interface UpstreamCaReport {
  /** The source the configuration names (`issuer/<Kind>/<name>`, `secret/<name>`), or `self-signed`. */
  readonly configured: string;
  /** The trust anchors the configuration names (`--ca-trust-anchors`), `<Kind>/<name>/<key>`. */
  readonly trustAnchors?: string;
  /** The source the CA Secret records for its CA (annotation `eso-mtls.io/ca-source`); absent for the self-signed CA. */
  readonly recorded?: string;
  /** False when status did not read the configured source: its waits and problems are not known. */
  readonly sourceRead: boolean;
  /** The path of the active CA, then of the next one if any. */
  readonly paths: readonly CaPathReport[];
  /** The CertificateRequest the CA Secret names (annotation `eso-mtls.io/ca-request`), `<namespace>/<name>`. */
  readonly pendingRequest?: string;
  /** What the CA waits for from the source, in a sentence; absent when it waits for nothing. */
  readonly waitingFor?: string;
}

/** The CA Secret. */
export interface CaReport extends Checked {
  readonly certificates: readonly CaCertificateReport[];
  /** The CA keys kept in a PKCS#11 token; absent when every key is in the CA Secret. */
  readonly keys?: readonly CaKeyReport[];
  /** The CA write due now, if any (phases as in docs/ca-rotation.md). */
  readonly due?: { readonly phases: readonly string[]; readonly reason?: string; readonly message: string };
  /** While no CA signs (a recovery waits for its new CA): when one is expected to. */
  readonly signingPausedUntil?: string;
  /** With an upstream CA source configured, or recorded in the CA Secret. */
  readonly upstream?: UpstreamCaReport;
}

/** A leaf Secret: the client's, or a provider namespace's. */
export interface LeafReport extends Checked {
  readonly certificate?: CertificateFacts;
  /** Signed by the CA that signs now (null: the CA Secret could not be read). */
  readonly signedByActiveCa?: boolean | null;
  /** Signed by a certificate its own ca.crt holds, so a peer trusting that bundle accepts it. */
  readonly chainsToBundle?: boolean;
  /** Its ca.crt is the bundle the CA Secret gives (null: unknown). */
  readonly bundleCurrent?: boolean | null;
  readonly nextRotation?: NextRotation;
}

/** The ESO client certificate. */
export interface ClientReport extends LeafReport {
  readonly uris: readonly string[];
  readonly commonName?: string;
}

/** A provider namespace. */
export interface NamespaceReport extends LeafReport {
  readonly namespace: string;
  /** Its labelled Services. */
  readonly services: readonly string[];
  /** subjectAltName dNSNames of the certificate served now. */
  readonly dnsNames: readonly string[];
}

/** The policy status assumed, and where each value came from. */
export interface PolicyReport {
  readonly esoNamespace: string;
  readonly clusterDomain: string;
  readonly serviceAccount: string;
  readonly caSecretName: string;
  readonly clientSecretName: string;
  readonly keyAlgorithm: string;
  readonly reconcileInterval: string;
  /** How long the controller waits for a Secret or ClusterTrustBundle update to reach every pod. */
  readonly propagationDelay: string;
  readonly leafValidity: string;
  readonly leafLookahead: string;
  readonly leafJitter: string;
  readonly caValidity: string;
  readonly caLookahead: string;
  /** How providers and ESO get certificates: `secret`, `pod-certificate`, or both. */
  readonly modes: readonly ('secret' | 'pod-certificate')[];
  /** Pod-certificate mode: the signer of provider server certificates. */
  readonly serverSignerName?: string;
  /** Pod-certificate mode: the signer of ESO's client certificate. */
  readonly clientSignerName?: string;
  /** Pod-certificate mode: the longest certificate the signers issue. */
  readonly podCertificateMaxValidity?: string;
  /** `key=value` a namespace must carry to be served (`--require-namespace-label`); absent when none is required. */
  readonly requireNamespaceLabel?: string;
  /** The most provider namespaces served (`--max-namespaces`); absent without a cap. */
  readonly maxNamespaces?: number;
  /** Flag name → `flag`, `env` or `default`. */
  readonly sources: Readonly<Record<string, string>>;
}

/** A CA certificate a ClusterTrustBundle holds. */
export type BundleCertificateReport = Pick<CertificateFacts, 'subject' | 'serialNumber' | 'notAfter' | 'daysLeft'>;

/** One signer's ClusterTrustBundle, which the kubelet projects into pods as their ca.crt. */
export interface TrustBundleReport {
  /** The ClusterTrustBundle's name, `<signer name with / replaced by :>:ca`. */
  readonly name: string;
  readonly signerName: string;
  /** False when it could not be read; `unchecked` says why. */
  readonly checked: boolean;
  readonly unchecked?: string;
  readonly exists?: boolean;
  /** Written by this installation (labels and annotation as the controller writes them). */
  readonly ours?: boolean;
  /** Its CA certificates, when it is ours. */
  readonly certificates?: readonly BundleCertificateReport[];
  /** It holds exactly the bundle the CA Secret gives (null: unknown, the CA Secret could not be read or a CA is still to be made). */
  readonly current?: boolean | null;
  readonly problems: readonly Problem[];
}

/** A reason seen on Denied or Failed requests, and how many carry it. */
export interface ReasonCount {
  readonly reason: string;
  readonly count: number;
}

/** A request no Issued, Denied or Failed condition has ended yet, for longer than the threshold. */
export interface PendingRequestReport {
  /** `<namespace>/<name>` */
  readonly request: string;
  readonly pod: string;
  readonly createdAt: string;
}

/** One signer's PodCertificateRequests, as the apiserver holds them (it deletes each 30 minutes after creation). */
export interface SignerRequestsReport {
  readonly signerName: string;
  readonly checked: boolean;
  readonly unchecked?: string;
  readonly issued: number;
  readonly denied: number;
  readonly failed: number;
  readonly pending: number;
  /** Only the first requests were counted: more exist (see docs/cli.md). */
  readonly truncated: boolean;
  /** Reasons of Denied requests, most frequent first. */
  readonly deniedReasons: readonly ReasonCount[];
  /** Reasons of Failed requests, most frequent first. */
  readonly failedReasons: readonly ReasonCount[];
  /** Requests pending for longer than {@link PodCertificatesReport.pendingThreshold}, oldest first (at most 10). */
  readonly longPending: readonly PendingRequestReport[];
  readonly problems: readonly Problem[];
}

/**
 * ClusterTrustBundles the shipped projections select besides ours: our label and one of our
 * signer names, under another name. Pods trust what they hold; the controller reports each as a
 * conflict and leaves it alone.
 */
export interface StrayBundlesReport {
  /** False when they could not be listed; `unchecked` says why. */
  readonly checked: boolean;
  readonly unchecked?: string;
  /** Their names. */
  readonly names: readonly string[];
  readonly problems: readonly Problem[];
}

/** The pod-certificate mode: each signer's trust bundle and requests. */
export interface PodCertificatesReport {
  /** How long a request may stay pending before it needs attention. */
  readonly pendingThreshold: string;
  readonly trustBundles: readonly TrustBundleReport[];
  /** Other bundles the projections select. */
  readonly strays: StrayBundlesReport;
  readonly signers: readonly SignerRequestsReport[];
}

/**
 * The leader election Lease: who holds it, and whether that is a replica of this installation.
 * A holder of another form, or a duration far above `--leader-election-lease-duration`, stops all
 * issuance while it stands (docs/rbac.md#the-leader-election-lease).
 */
export interface LeaseReport {
  /** `<namespace>/<name>` */
  readonly lease: string;
  /** False when it could not be read; `unchecked` says why. */
  readonly checked: boolean;
  readonly unchecked?: string;
  /** False: no controller has created it (leader election off, or none started yet). */
  readonly exists?: boolean;
  /** '' when released. */
  readonly holder?: string;
  readonly leaseDurationSeconds?: number;
  /** RFC 3339; when the holder last renewed it. */
  readonly renewTime?: string;
  /** The most leaseDurationSeconds a replica of ours writes, under the lease duration assumed. */
  readonly maxLeaseDurationSeconds: number;
  readonly problems: readonly Problem[];
}

/** Everything status found. */
export interface StatusReport {
  readonly now: string;
  readonly policy: PolicyReport;
  /** Only this provider namespace was read (then the CA schedule sees only its bundle). */
  readonly namespaceFilter?: string;
  readonly ca: CaReport;
  readonly client: ClientReport;
  /** Provider namespaces' Secrets; empty in pod-certificate mode only, where providers get no Secret. */
  readonly namespaces: readonly NamespaceReport[];
  /** Present when the pod-certificate mode is on. */
  readonly podCertificates?: PodCertificatesReport;
  /** The leader election Lease, when status was told where it is (always, from the CLI). */
  readonly leaderElection?: LeaseReport;
  readonly summary: {
    readonly healthy: boolean;
    /** Problems, all sections together. */
    readonly problems: number;
    /** Secrets, trust bundles and request lists that could not be read. */
    readonly unchecked: number;
    readonly exitCode: number;
  };
}
