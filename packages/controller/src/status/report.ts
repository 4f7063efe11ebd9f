/**
 * What `eso-mtls status` reports: plain data, the same for text, JSON and YAML. It holds only
 * public facts about certificates (names, serials, dates, verdicts); it has no field a private key
 * or a certificate's bytes could reach.
 */

/** Why a Secret needs attention. */
export type ProblemKind =
  | 'missing' // no Secret, or an empty placeholder not adopted yet
  | 'invalid' // a Secret of ours whose data cannot be served (garbage, mismatched key, bad bundle)
  | 'foreign' // a Secret by our name that this installation did not write: left alone
  | 'conflict' // something the controller will not do (a bad Service name, a CA that is not ours)
  | 'untrusted' // a leaf signed by none of our CAs
  | 'expired' // past notAfter
  | 'refused' // a labelled Service left out of the certificate, or its rotation request ignored
  | 'pending'; // a write due now that the controller has not made yet

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

/** The CA Secret. */
export interface CaReport extends Checked {
  readonly certificates: readonly CaCertificateReport[];
  /** The CA write due now, if any (phases as in docs/ca-rotation.md). */
  readonly due?: { readonly phases: readonly string[]; readonly reason?: string; readonly message: string };
  /** While no CA signs (a recovery waits for its new CA): when one is expected to. */
  readonly signingPausedUntil?: string;
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
  readonly leafValidity: string;
  readonly leafLookahead: string;
  readonly leafJitter: string;
  readonly caValidity: string;
  readonly caLookahead: string;
  /** Flag name → `flag`, `env` or `default`. */
  readonly sources: Readonly<Record<string, string>>;
}

/** Everything status found. */
export interface StatusReport {
  readonly now: string;
  readonly policy: PolicyReport;
  /** Only this provider namespace was read (then the CA schedule sees only its bundle). */
  readonly namespaceFilter?: string;
  readonly ca: CaReport;
  readonly client: ClientReport;
  readonly namespaces: readonly NamespaceReport[];
  readonly summary: {
    readonly healthy: boolean;
    /** Problems, all Secrets together. */
    readonly problems: number;
    /** Secrets that could not be read. */
    readonly unchecked: number;
    readonly exitCode: number;
  };
}
