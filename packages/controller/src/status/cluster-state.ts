import { PROVIDER_SECRET_NAME } from '@eso-mtls/core';
import { KubeApiError, type KubeRestClient, type ListPage, PROVIDER_SERVICE_SELECTOR, corePath, trimSecret, trimService } from '@eso-mtls/kubernetes';
import type { V1Secret, V1Service } from '@kubernetes/client-node';

/** Where status looks: ESO's namespace and Secret names, and optionally one provider namespace. */
export interface StatusScope {
  readonly esoNamespace: string;
  readonly caSecretName: string;
  readonly clientSecretName: string;
  /** Only this provider namespace (`--namespace`); undefined: every one. */
  readonly namespace?: string;
}

/** A Secret read by name: its content (undefined when absent), or why it could not be read. */
export type SecretRead = { readonly kind: 'read'; readonly secret: V1Secret | undefined } | { readonly kind: 'unreadable'; readonly why: string };

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
}

/** The first read (the labelled Services) failed: nothing can be shown. */
export class ClusterUnreachableError extends Error {
  override readonly name = 'ClusterUnreachableError';
}

const PAGE = 500;
const forbidden = (e: unknown): boolean => e instanceof KubeApiError && (e.code === 403 || e.code === 401);

/** Why a read was refused, in words that name the right to grant. */
function refusal(e: unknown, what: string, right: string): string {
  return `${what} not checked: ${e instanceof KubeApiError ? `HTTP ${e.code}${e.reason ? ` ${e.reason}` : ''}` : (e as Error).message}; it needs ${right} (ClusterRole eso-mtls-status)`;
}

/** Every item of a paged list. */
async function listAll<T>(api: KubeRestClient, path: string, selector: Record<string, string>): Promise<T[]> {
  const items: T[] = [];
  let next: string | undefined;
  do {
    const page = await api.get<ListPage<T>>(path, { ...selector, limit: PAGE, continue: next });
    items.push(...(page.items ?? []));
    next = page.metadata?.continue || undefined;
  } while (next !== undefined);
  return items;
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

/**
 * Reads what the controller's informers watch, once, with the user's credentials: labelled Services,
 * the provider Secrets (cluster-wide by name; where that is refused, one namespace at a time), the
 * CA and client Secrets. A refused Secret read is recorded as unreadable; a refused or failed
 * Service list throws {@link ClusterUnreachableError}, since nothing can be shown without it.
 */
export async function readClusterState(api: KubeRestClient, scope: StatusScope): Promise<ClusterState> {
  let services: V1Service[];
  try {
    services = (await listAll<V1Service>(api, corePath('services', scope.namespace), { labelSelector: PROVIDER_SERVICE_SELECTOR })).map(trimService);
  } catch (e) {
    const where = scope.namespace === undefined ? 'in any namespace' : `in namespace ${scope.namespace}`;
    const why = forbidden(e) ? 'the apiserver refused: it needs list on services (ClusterRole eso-mtls-status)' : (e as Error).message;
    throw new ClusterUnreachableError(`cannot list the Services labelled ${PROVIDER_SERVICE_SELECTOR} ${where}: ${why}`, { cause: e });
  }
  const unreadableNamespaces = new Map<string, string>();
  let providerSecrets: V1Secret[] | undefined;
  if (scope.namespace === undefined) {
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
    if (scope.namespace !== undefined) namespaces.add(scope.namespace);
    for (const namespace of [...namespaces].filter((n) => n !== '').sort()) {
      const read = await readSecret(api, namespace, PROVIDER_SECRET_NAME);
      if (read.kind === 'unreadable') unreadableNamespaces.set(namespace, read.why);
      else if (read.secret) providerSecrets.push(read.secret);
    }
  }
  const [caSecret, clientSecret] = await Promise.all([
    readSecret(api, scope.esoNamespace, scope.caSecretName),
    readSecret(api, scope.esoNamespace, scope.clientSecretName),
  ]);
  return { services, providerSecrets, unreadableNamespaces, caSecret, clientSecret };
}
