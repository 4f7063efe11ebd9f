import { type Instant, type NamespaceRequirement, PROVIDER_SECRET_NAME, type UpstreamObservation, formatNamespaceRequirement } from '@eso-mtls/core';
import {
  type Installation,
  KubeApiError,
  type KubeRestClient,
  type ListPage,
  type ClusterTrustBundle,
  PROVIDER_SERVICE_SELECTOR,
  type StrayTrustBundle,
  TRUST_BUNDLE_SELECTOR,
  certificatesPath,
  readUpstreamObservation,
  strayTrustBundles,
  corePath,
  terminalCondition,
  trimSecret,
  trimService,
  trustBundleName,
} from '@eso-mtls/kubernetes';
import type { V1Namespace, V1Secret, V1Service } from '@kubernetes/client-node';
import { LeaseLock, type LeaseRecord } from '../lease-lock.js';

/** What status reads beside the installation's own objects. */
export interface StatusReads {
  /** Only this provider namespace (`--namespace`); undefined: every one. */
  readonly namespace?: string;
  /** The leader election Lease (`--leader-election-namespace`, `--leader-election-id`); undefined: not read. */
  readonly lease?: { readonly namespace: string; readonly name: string };
}

/** The leader election Lease read by name: its record (undefined when absent), or why it could not be read. */
export type LeaseRead =
  | { readonly kind: 'read'; readonly namespace: string; readonly name: string; readonly record: LeaseRecord | undefined }
  | { readonly kind: 'unreadable'; readonly namespace: string; readonly name: string; readonly why: string };

/** A Secret read by name: its content (undefined when absent), or why it could not be read. */
export type SecretRead = { readonly kind: 'read'; readonly secret: V1Secret | undefined } | { readonly kind: 'unreadable'; readonly why: string };

/** The names of the namespaces carrying the required label, or why they could not be listed. */
type AllowedNamespacesRead = { readonly kind: 'read'; readonly names: ReadonlySet<string> } | { readonly kind: 'unreadable'; readonly why: string };

/** What status read of the cluster, trimmed as the controller's informers trim it. */
export interface ClusterState {
  /** Labelled Services (in scope). */
  readonly services: readonly V1Service[];
  /** The provider Secrets that could be read. */
  readonly providerSecrets: readonly V1Secret[];
  /** Provider namespaces whose Secret could not be read, and why. */
  readonly unreadableNamespaces: ReadonlyMap<string, string>;
  readonly caSecret: SecretRead;
  readonly clientSecret: SecretRead;
  /** The pod-certificate mode's objects; undefined when the mode is off. */
  readonly podCertificates?: PodCertificateState;
  /** With a namespace requirement (Secret mode): the namespaces carrying its label; undefined otherwise. */
  readonly allowedNamespaces?: AllowedNamespacesRead;
  /** The leader election Lease, when the scope names one. */
  readonly lease?: LeaseRead;
  /**
   * With an upstream CA source: what the controller's source observes (trust anchors, the issuer
   * or the user's Secret, the pending CertificateRequest), when status read it; undefined: not read.
   */
  readonly upstream?: UpstreamObservation;
}

/** A ClusterTrustBundle as status keeps it: what ownership, the selector label and the CA activation are judged on. */
export interface TrustBundleObject {
  readonly signerName?: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly trustBundle: string;
}

/** One signer's ClusterTrustBundle, read by name: its content (undefined when absent), or why it could not be read. */
export type TrustBundleRead = { readonly signerName: string; readonly name: string } & (
  { readonly kind: 'read'; readonly bundle: TrustBundleObject | undefined } | { readonly kind: 'unreadable'; readonly why: string }
);

/** How a PodCertificateRequest ended: its Issued, Denied or Failed condition; undefined while pending. */
export type RequestOutcome = 'Issued' | 'Denied' | 'Failed';

/** One PodCertificateRequest, as much as status judges: never its stub request or chain. */
export interface RequestSummary {
  readonly namespace: string;
  readonly name: string;
  readonly podName: string;
  readonly createdAt: Instant | undefined;
  readonly outcome: RequestOutcome | undefined;
  /** The terminal condition's reason. */
  readonly reason?: string;
}

/** One signer's PodCertificateRequests: the first {@link MAX_REQUESTS} of them, or why they could not be listed. */
export type SignerRequestsRead = { readonly signerName: string } & (
  { readonly kind: 'read'; readonly requests: readonly RequestSummary[]; readonly truncated: boolean } | { readonly kind: 'unreadable'; readonly why: string }
);

/** The ClusterTrustBundles of our signers and label under other names than ours, or why they could not be listed. */
export type StrayBundlesRead = { readonly kind: 'read'; readonly strays: readonly StrayTrustBundle[] } | { readonly kind: 'unreadable'; readonly why: string };

/** What status read of the pod-certificate mode, for the server signer then the client signer. */
export interface PodCertificateState {
  readonly trustBundles: readonly TrustBundleRead[];
  readonly requests: readonly SignerRequestsRead[];
  /** Bundles the shipped projections select besides ours. */
  readonly strays: StrayBundlesRead;
}

/** The first read (the labelled Services) failed: nothing can be shown. */
export class ClusterUnreachableError extends Error {
  override readonly name = 'ClusterUnreachableError';
}

const PAGE = 500;
/**
 * Requests counted per signer, at most: kube-controller-manager deletes every PodCertificateRequest
 * 30 minutes after it is created, so this many is far more than the pods of a large cluster ask
 * for in that time (each asks once per refresh, about every 16 hours with 24-hour leaves).
 */
const MAX_REQUESTS = 10_000;
/** ClusterTrustBundles with our label read, at most. */
const MAX_LABELLED_BUNDLES = 1_000;
/** A condition reason as kept: the apiserver allows 1,024 characters; a signer's reasons are words. */
const MAX_REASON = 128;
const forbidden = (e: unknown): boolean => e instanceof KubeApiError && (e.code === 403 || e.code === 401);

/** Why a read was refused, in words that name the right to grant. */
function refusal(e: unknown, what: string, right: string): string {
  return `${what} not checked: ${e instanceof KubeApiError ? `HTTP ${e.code}${e.reason ? ` ${e.reason}` : ''}` : (e as Error).message}; it needs ${right} (ClusterRole eso-mtls-status)`;
}

/** Every item of a paged list, or the first `max` of them (`truncated`: more exist). */
async function listPages<T>(api: KubeRestClient, path: string, selector: Record<string, string>, max = Infinity): Promise<{ items: T[]; truncated: boolean }> {
  const items: T[] = [];
  let next: string | undefined;
  do {
    const page = await api.get<ListPage<T>>(path, { ...selector, limit: Math.min(PAGE, max - items.length), continue: next });
    items.push(...(page.items ?? []));
    next = page.metadata?.continue || undefined;
  } while (next !== undefined && items.length < max);
  return { items, truncated: next !== undefined };
}

/** Every item of a paged list. */
async function listAll<T>(api: KubeRestClient, path: string, selector: Record<string, string>): Promise<T[]> {
  return (await listPages<T>(api, path, selector)).items;
}

/** One Secret by name: 404 is absent; 401/403 is unreadable (said, not thrown); anything else throws. */
async function readSecret(api: KubeRestClient, namespace: string, name: string): Promise<SecretRead> {
  try {
    return { kind: 'read', secret: trimSecret(await api.get<V1Secret>(corePath('secrets', namespace, name))) };
  } catch (e) {
    if (e instanceof KubeApiError && e.code === 404) return { kind: 'read', secret: undefined };
    if (forbidden(e)) return { kind: 'unreadable', why: refusal(e, `Secret ${namespace}/${name}`, `get on secrets/${name} in ${namespace}`) };
    throw e;
  }
}

/** The leader election Lease by name, with the controller's own LeaseLock: 404 is absent; 401/403 is unreadable; anything else throws. */
async function readLease(api: KubeRestClient, lease: { readonly namespace: string; readonly name: string }): Promise<LeaseRead> {
  try {
    const observed = await new LeaseLock(api, lease.namespace, lease.name).get();
    return { kind: 'read', ...lease, record: observed?.record };
  } catch (e) {
    if (!forbidden(e)) throw e;
    return { kind: 'unreadable', ...lease, why: refusal(e, `Lease ${lease.namespace}/${lease.name}`, `get on leases/${lease.name} in ${lease.namespace}`) };
  }
}

/**
 * The namespaces carrying the required label, as the controller's namespace informer lists them
 * (label selector, names only); 401/403 is unreadable (said, not thrown); anything else throws.
 */
async function readAllowedNamespaces(api: KubeRestClient, requirement: NamespaceRequirement): Promise<AllowedNamespacesRead> {
  const selector = formatNamespaceRequirement(requirement);
  try {
    const items = await listAll<V1Namespace>(api, corePath('namespaces'), { labelSelector: selector });
    return { kind: 'read', names: new Set(items.flatMap((n) => (n.metadata?.name ? [n.metadata.name] : []))) };
  } catch (e) {
    if (!forbidden(e)) throw e;
    return { kind: 'unreadable', why: refusal(e, `the namespaces labelled ${selector} (--require-namespace-label)`, 'list on namespaces') };
  }
}

/**
 * Reads what the controller's informers watch, once, with the user's credentials: labelled Services,
 * the provider Secrets (cluster-wide by name; where that is refused, one namespace at a time), the
 * CA and client Secrets, and with a namespace requirement the namespaces carrying its label. A
 * refused Secret or namespace read is recorded as unreadable; a refused or failed Service list
 * throws {@link ClusterUnreachableError}, since nothing can be shown without it.
 */
export async function readClusterState(api: KubeRestClient, installation: Installation, reads: StatusReads = {}): Promise<ClusterState> {
  // With a cap on namespaces, every provider namespace is read even with --namespace set: whether one is served depends on all of them.
  const only = installation.maxNamespaces === undefined ? reads.namespace : undefined;
  let services: V1Service[];
  try {
    services = (await listAll<V1Service>(api, corePath('services', only), { labelSelector: PROVIDER_SERVICE_SELECTOR })).map(trimService);
  } catch (e) {
    const where = only === undefined ? 'in any namespace' : `in namespace ${only}`;
    const why = forbidden(e) ? 'the apiserver refused: it needs list on services (ClusterRole eso-mtls-status)' : (e as Error).message;
    throw new ClusterUnreachableError(`cannot list the Services labelled ${PROVIDER_SERVICE_SELECTOR} ${where}: ${why}`, { cause: e });
  }
  const unreadableNamespaces = new Map<string, string>();
  let providerSecrets: V1Secret[] | undefined;
  // Pod-certificate mode only: the controller neither reads nor writes provider Secrets.
  if (!installation.secretMode) providerSecrets = [];
  else if (only === undefined) {
    try {
      // The controller's own selector: RBAC may grant list by this name only.
      providerSecrets = (await listAll<V1Secret>(api, corePath('secrets'), { fieldSelector: `metadata.name=${PROVIDER_SECRET_NAME}` })).map(trimSecret);
    } catch (e) {
      if (!forbidden(e)) throw e;
    }
  }
  if (providerSecrets === undefined) {
    providerSecrets = [];
    const namespaces = new Set(services.map((s) => s.metadata?.namespace ?? ''));
    if (reads.namespace !== undefined) namespaces.add(reads.namespace);
    for (const namespace of [...namespaces].filter((n) => n !== '').sort()) {
      const read = await readSecret(api, namespace, PROVIDER_SECRET_NAME);
      if (read.kind === 'unreadable') unreadableNamespaces.set(namespace, read.why);
      else if (read.secret) providerSecrets.push(read.secret);
    }
  }
  // Pod-certificate mode only: no namespace has a Secret to judge, so which are allowed is not read.
  const requirement = installation.secretMode ? installation.namespaceRequirement : undefined;
  const [caSecret, clientSecret, podCertificates, allowedNamespaces, lease] = await Promise.all([
    readSecret(api, installation.esoNamespace, installation.caSecretName),
    readSecret(api, installation.esoNamespace, installation.clientSecretName),
    installation.podCertificates && readPodCertificateState(api, installation.podCertificates, reads.namespace),
    requirement && readAllowedNamespaces(api, requirement),
    reads.lease && readLease(api, reads.lease),
  ]);
  const upstream = await readUpstream(api, installation, caSecret);
  return {
    services,
    providerSecrets,
    unreadableNamespaces,
    caSecret,
    clientSecret,
    ...(upstream ? { upstream } : {}),
    ...(podCertificates ? { podCertificates } : {}),
    ...(allowedNamespaces ? { allowedNamespaces } : {}),
    ...(lease ? { lease } : {}),
  };
}

/** A ClusterTrustBundle as the apiserver returns it, as much of it as status reads. */
interface ClusterTrustBundleObject {
  readonly metadata?: { readonly labels?: Record<string, string>; readonly annotations?: Record<string, string> };
  readonly spec?: { readonly signerName?: string; readonly trustBundle?: string };
}

/** A PodCertificateRequest as the apiserver returns it, as much of it as status reads. */
interface PodCertificateRequestObject {
  readonly metadata?: { readonly namespace?: string; readonly name?: string; readonly creationTimestamp?: string | Date };
  readonly spec?: { readonly podName?: string };
  readonly status?: { readonly conditions?: readonly { readonly type?: string; readonly reason?: string }[] };
}

/** One signer's ClusterTrustBundle by its name: 404 is absent; 401/403 is unreadable; anything else throws. */
async function readTrustBundle(api: KubeRestClient, signerName: string): Promise<TrustBundleRead> {
  const name = trustBundleName(signerName);
  try {
    const b = await api.get<ClusterTrustBundleObject>(certificatesPath('clustertrustbundles', undefined, name));
    const bundle: TrustBundleObject = {
      ...(b.spec?.signerName === undefined ? {} : { signerName: b.spec.signerName }),
      labels: { ...b.metadata?.labels },
      annotations: { ...b.metadata?.annotations },
      trustBundle: b.spec?.trustBundle ?? '',
    };
    return { signerName, name, kind: 'read', bundle };
  } catch (e) {
    if (e instanceof KubeApiError && e.code === 404) return { signerName, name, kind: 'read', bundle: undefined };
    if (forbidden(e)) return { signerName, name, kind: 'unreadable', why: refusal(e, `ClusterTrustBundle ${name}`, 'get on clustertrustbundles') };
    throw e;
  }
}

/**
 * The bundles the shipped projections select besides ours, as the controller's trust-bundle watch
 * sees them (our label), judged by the controller's own {@link strayTrustBundles}. At most
 * {@link MAX_LABELLED_BUNDLES} are read: far more than a cluster has signers.
 */
async function readStrayBundles(api: KubeRestClient, signerNames: readonly string[]): Promise<StrayBundlesRead> {
  try {
    const { items } = await listPages<ClusterTrustBundle>(
      api,
      certificatesPath('clustertrustbundles'),
      { labelSelector: TRUST_BUNDLE_SELECTOR },
      MAX_LABELLED_BUNDLES,
    );
    return { kind: 'read', strays: strayTrustBundles(items, signerNames) };
  } catch (e) {
    if (!forbidden(e)) throw e;
    return { kind: 'unreadable', why: refusal(e, `the ClusterTrustBundles labelled ${TRUST_BUNDLE_SELECTOR}`, 'list on clustertrustbundles') };
  }
}

/** What status keeps of a request: names, age and its terminal condition (the apiserver allows one). */
function summarize(r: PodCertificateRequestObject): RequestSummary {
  const terminal = terminalCondition(r);
  const created = r.metadata?.creationTimestamp === undefined ? NaN : new Date(r.metadata.creationTimestamp).getTime();
  return {
    namespace: r.metadata?.namespace ?? '',
    name: r.metadata?.name ?? '',
    podName: r.spec?.podName ?? '',
    createdAt: Number.isNaN(created) ? undefined : created,
    outcome: terminal?.type as RequestOutcome | undefined,
    ...(terminal?.reason === undefined ? {} : { reason: terminal.reason.slice(0, MAX_REASON) }),
  };
}

/** One signer's requests, as the controller lists them (field selector spec.signerName), at most {@link MAX_REQUESTS}. */
async function readSignerRequests(api: KubeRestClient, signerName: string, namespace: string | undefined): Promise<SignerRequestsRead> {
  const path = certificatesPath('podcertificaterequests', namespace);
  try {
    const { items, truncated } = await listPages<PodCertificateRequestObject>(api, path, { fieldSelector: `spec.signerName=${signerName}` }, MAX_REQUESTS);
    return { signerName, kind: 'read', requests: items.map(summarize), truncated };
  } catch (e) {
    if (!forbidden(e)) throw e;
    return { signerName, kind: 'unreadable', why: refusal(e, `PodCertificateRequests of ${signerName}`, 'list on podcertificaterequests') };
  }
}

/**
 * The pod-certificate mode's objects: each signer's ClusterTrustBundle by name, and each signer's
 * PodCertificateRequests (in `namespace` only, when given). A refused read is recorded, not thrown.
 */
async function readPodCertificateState(
  api: KubeRestClient,
  signers: { readonly serverSignerName: string; readonly clientSignerName: string },
  namespace: string | undefined,
): Promise<PodCertificateState> {
  const names = [signers.serverSignerName, signers.clientSignerName];
  const trustBundles = await Promise.all(names.map((n) => readTrustBundle(api, n)));
  const requests = await Promise.all(names.map((n) => readSignerRequests(api, n, namespace)));
  return { trustBundles, requests, strays: await readStrayBundles(api, names) };
}

/**
 * With an upstream CA source, what the controller's source observes, read once; undefined with the
 * self-signed CA, or when the apiserver refuses a read (status then says the source was not read).
 */
async function readUpstream(api: KubeRestClient, installation: Installation, caSecret: SecretRead): Promise<UpstreamObservation | undefined> {
  const state =
    caSecret.kind === 'read' && caSecret.secret
      ? { annotations: caSecret.secret.metadata?.annotations ?? {}, data: {}, ownership: 'managed' as const }
      : undefined;
  try {
    return await readUpstreamObservation(api, installation, state);
  } catch (e) {
    if (forbidden(e)) return undefined;
    throw e;
  }
}
