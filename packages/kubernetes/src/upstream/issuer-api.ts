import { ResourceNotServedError, isNotServed } from '../informers/informer.js';
import type { IssuerReference } from '../installation/ca-source.js';
import type { UpstreamReader } from './upstream-read.js';

/*
 * Where the apiserver serves an issuer's kind, as its discovery says: the version of the group
 * (cert-manager's own is `v1`; an external issuer's may be `v1beta1`), the plural, and whether the
 * kind is namespaced (an external kind's scope cannot be told from its name: `OriginIssuer` is
 * namespaced, `ClusterOriginIssuer` is not). Looked up again before each list of the issuer's
 * cache, so an issuer installed after the controller is found.
 */

/** An issuer kind as the apiserver serves it. */
export interface ServedIssuer {
  readonly version: string;
  /** The resource's plural, e.g. `clusterissuers`. */
  readonly plural: string;
  readonly namespaced: boolean;
}

interface ApiGroup {
  readonly preferredVersion?: { readonly version?: string };
  readonly versions?: readonly { readonly version?: string }[];
}

interface ApiResourceList {
  readonly resources?: readonly { readonly name?: string; readonly kind?: string; readonly namespaced?: boolean }[];
}

/** The resource of `kind` in a discovery resource list (subresources, `x/status`, left out). */
export function servedKind(list: ApiResourceList, kind: string, version: string): ServedIssuer | undefined {
  const found = list.resources?.find((r) => r.kind === kind && r.name !== undefined && !r.name.includes('/'));
  return found?.name === undefined ? undefined : { version, plural: found.name, namespaced: found.namespaced === true };
}

/**
 * Where the issuer's kind is served: two discovery GETs, the group's preferred version and that
 * version's resources. Throws {@link ResourceNotServedError} when the group (cert-manager's or the
 * external issuer's CRDs not installed) or the kind is not served, and any other apiserver error
 * as it came.
 */
export async function servedIssuer(client: UpstreamReader, issuer: IssuerReference): Promise<ServedIssuer> {
  const notServed = (what: string): ResourceNotServedError => new ResourceNotServedError(`the apiserver does not serve ${what}`);
  const group = await client.get<ApiGroup>(`/apis/${issuer.group}`).catch((e: unknown) => {
    throw isNotServed(e) ? notServed(`the API group ${issuer.group}`) : e;
  });
  const version = group.preferredVersion?.version ?? group.versions?.[0]?.version;
  if (version === undefined) throw notServed(`any version of the API group ${issuer.group}`);
  const resources = await client.get<ApiResourceList>(`/apis/${issuer.group}/${version}`).catch((e: unknown) => {
    throw isNotServed(e) ? notServed(`${issuer.group}/${version}`) : e;
  });
  const served = servedKind(resources, issuer.kind, version);
  if (!served) throw notServed(`the kind ${issuer.kind} in ${issuer.group}/${version}`);
  return served;
}

/** The issuer's collection: its plural at its version, in ESO's namespace when the kind is namespaced. */
export function issuersPath(issuer: IssuerReference, namespace: string, served: ServedIssuer): string {
  const scope = served.namespaced ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `/apis/${issuer.group}/${served.version}${scope}/${served.plural}`;
}

/** The API path of the issuer itself. */
export const issuerPath = (issuer: IssuerReference, namespace: string, served: ServedIssuer): string =>
  `${issuersPath(issuer, namespace, served)}/${encodeURIComponent(issuer.name)}`;
