import {
  type CertificateCache,
  type Duration,
  type Instant,
  type NamespaceRequirement,
  type PlanContext,
  type Policy,
  policyFingerprint,
  resolvePolicy,
} from '@eso-mtls/core';
import { type CaSource, SELF_SIGNED } from './ca-source.js';
import { DEFAULT_CA_SECRET_NAME, DEFAULT_CLIENT_SECRET_NAME, type WriterStamp, installationId } from './ownership.js';

/**
 * The most objects a cache holds, per namespace and in all. An object past either is not held:
 * what anyone who may create the objects could otherwise grow without end (PodCertificateRequests
 * naming our signer) stays inside the controller's memory limit.
 */
export interface CacheBound {
  readonly perNamespace: number;
  readonly total: number;
}

/** The pod-certificate mode's settings. */
export interface PodCertificateOptions {
  /** Signer of provider server certificates, e.g. `eso-mtls.io/provider-server`. */
  readonly serverSignerName: string;
  /** Signer of ESO core's client certificate, e.g. `eso-mtls.io/eso-client`. */
  readonly clientSignerName: string;
  /** The longest certificate issued; a request's maxExpirationSeconds is clamped to it. */
  readonly maxValidity: Duration;
  /**
   * The pending requests held in memory at most, per signer name: per namespace and in all
   * (default: 1,000 per namespace, 10,000 in all). Those past it stay pending in the API, counted
   * and reported, and are listed again as the held ones are decided.
   */
  readonly pendingBound?: CacheBound;
}

/**
 * One installation of eso-mtls: which Secrets are its own and where, who writes them, which modes
 * it runs and within which bounds it plans. Every part of the adapter reads it from here, and
 * `eso-mtls status` builds the same value from the controller's flags, so the two never disagree
 * on a name. Built by {@link installationOf}, which applies the defaults.
 */
export interface Installation {
  /** The certificate policy every plan is made under. */
  readonly policy: Policy;
  /** ESO's namespace (the policy's), where the CA and client Secrets are. */
  readonly esoNamespace: string;
  /** The CA Secret's name. */
  readonly caSecretName: string;
  /** The client certificate Secret's name. */
  readonly clientSecretName: string;
  /** `<esoNamespace>/<caSecretName>` (see installationId): what our Secrets and trust bundles carry. */
  readonly id: string;
  /** Who writes, under which issuing policy: the stamp on every Secret written. */
  readonly writer: WriterStamp;
  /** The Secret mode (`--modes secret`): provider Secrets in every namespace with a labelled Service. */
  readonly secretMode: boolean;
  /** The pod-certificate mode (`--modes pod-certificate`): its signers and limits; undefined when it is off. */
  readonly podCertificates: PodCertificateOptions | undefined;
  /** The most leaves one plan issues (`--max-issuances-per-reconcile`); undefined: no bound. */
  readonly maxIssuancesPerReconcile: number | undefined;
  /** The most provider namespaces served (`--max-namespaces`); undefined: no cap. */
  readonly maxNamespaces: number | undefined;
  /** The label a namespace must carry before it is served (`--require-namespace-label`); undefined: none. */
  readonly namespaceRequirement: NamespaceRequirement | undefined;
  /** Where the CA that signs every leaf comes from (`--ca-issuer`, `--ca-from-secret`); self-signed by default. */
  readonly caSource: CaSource;
}

/**
 * What an installation is made of, named as the adapter's options and the controller's
 * configuration both name it, so that either is one. Unset fields take their defaults.
 */
export interface InstallationSettings {
  /** Overrides of the core's default policy (ESO namespace, cluster domain, lifetimes...). */
  readonly policy?: Partial<Policy>;
  /** Name of the CA Secret in the ESO namespace (default `eso-provider-ca-internal`). */
  readonly caSecretName?: string;
  /** Name of the client Secret in the ESO namespace (default `eso-provider-client-tls`). */
  readonly clientSecretName?: string;
  /**
   * The Secret mode: provider Secrets in every namespace with a labelled Service (default true).
   * False with {@link podCertificates} set: pod certificates only, and no Secret is read or written
   * outside the ESO namespace.
   */
  readonly secretMode?: boolean;
  /** The pod-certificate mode: sign PodCertificateRequests for these signer names, and publish their ClusterTrustBundles. */
  readonly podCertificates?: PodCertificateOptions;
  /**
   * The most certificates issued per reconcile (default: no bound), most urgent first; the rest
   * follow a second later. Emergency CA rotations are never held back (docs/flood-control.md).
   */
  readonly maxIssuancesPerReconcile?: number;
  /** The most provider namespaces served (default: no cap); the newest beyond it are left out, each with a Warning Event. */
  readonly maxNamespaces?: number;
  /**
   * The label a namespace must carry before its labelled Services are served and its pods get
   * server certificates (default: none). The others' Services get a Warning Event
   * NamespaceNotAllowed. Needs get, list and watch on namespaces (docs/label-policy.md).
   */
  readonly namespaceRequirement?: NamespaceRequirement;
  /**
   * Where the CA that signs every leaf comes from (default {@link SELF_SIGNED}): a self-signed root,
   * an intermediate asked of a cert-manager issuer, or one read from a Secret the user maintains.
   */
  readonly caSource?: CaSource;
}

/** The installation `settings` describe, its Secrets written as `writerIdentity` (unchecked: see validateAdapterOptions). */
export function installationOf(settings: InstallationSettings, writerIdentity: string): Installation {
  const policy = resolvePolicy(settings.policy);
  const caSecretName = settings.caSecretName ?? DEFAULT_CA_SECRET_NAME;
  return {
    policy,
    esoNamespace: policy.esoNamespace,
    caSecretName,
    clientSecretName: settings.clientSecretName ?? DEFAULT_CLIENT_SECRET_NAME,
    id: installationId(policy.esoNamespace, caSecretName),
    writer: { identity: writerIdentity, policy: policyFingerprint(policy) },
    secretMode: settings.secretMode ?? true,
    podCertificates: settings.podCertificates,
    maxIssuancesPerReconcile: settings.maxIssuancesPerReconcile,
    maxNamespaces: settings.maxNamespaces,
    namespaceRequirement: settings.namespaceRequirement,
    caSource: settings.caSource ?? SELF_SIGNED,
  };
}

/**
 * The context `planRotation` plans with at `now` for an installation. The one place it is built,
 * for the controller's reconcile, for `eso-mtls status` and for the demo, so that all plan a
 * snapshot alike. Unset fields are unset in the context too: no bound, no requirement, no pod
 * certificates.
 */
export function planContext(
  // What of an installation its plans depend on besides the snapshot; the demo gives a policy only.
  installation: Pick<Installation, 'policy'> &
    Partial<Pick<Installation, 'podCertificates' | 'maxIssuancesPerReconcile' | 'maxNamespaces' | 'namespaceRequirement'>>,
  now: Instant,
  cache: CertificateCache,
): PlanContext {
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
