import type { Instant } from '@eso-mtls/core';
import { DEFAULT_ISSUER_GROUP, type IssuerReference } from '../installation/ca-source.js';
import { type StatusCondition, conditionOf, instantOf } from './conditions.js';
import { type UpstreamReader, describeObject, getIfExists } from './upstream-read.js';

/*
 * Whether the cert-manager issuer `--ca-issuer` names can sign: its Ready condition, as
 * cert-manager's issuers controllers set it (a CA issuer whose Secret is missing or holds no CA is
 * Ready=False with the reason in the message). A request to an issuer that is not ready waits;
 * this is how the adapter says why (`issuer_not_ready`, `issuer_missing`).
 */

/** An issuer's readiness: it can sign, it exists but cannot (and why), or it does not exist. */
export type IssuerReadiness =
  | { readonly state: 'ready' }
  | { readonly state: 'not_ready'; readonly reason: string | undefined; readonly message: string; readonly since: Instant | undefined }
  | { readonly state: 'missing'; readonly message: string };

/** The fields of an Issuer or ClusterIssuer this reader looks at. */
export interface IssuerObject {
  readonly metadata?: { readonly generation?: number };
  readonly status?: { readonly conditions?: readonly StatusCondition[] };
}

/** `ClusterIssuer/name` or `Issuer/namespace/name`, as messages name an issuer. */
export function describeIssuer(issuer: IssuerReference, namespace: string): string {
  const kind = issuer.group === DEFAULT_ISSUER_GROUP ? issuer.kind : `${issuer.kind}.${issuer.group}`;
  return issuer.kind === 'ClusterIssuer' ? `${kind} ${issuer.name}` : describeObject(kind, namespace, issuer.name);
}

/**
 * The readiness an issuer object says (undefined: it does not exist). Ready only with
 * Ready=True for the issuer's current generation: a condition of an older generation describes a
 * spec that is gone.
 */
export function issuerReadinessOf(object: IssuerObject | undefined, issuer: IssuerReference, namespace: string): IssuerReadiness {
  const described = describeIssuer(issuer, namespace);
  if (object === undefined) return { state: 'missing', message: `${described} does not exist; create it, or fix --ca-issuer` };
  const ready = conditionOf(object.status?.conditions, 'Ready');
  if (ready === undefined)
    return { state: 'not_ready', reason: undefined, message: `${described} has no Ready condition yet (is cert-manager running?)`, since: undefined };
  const since = instantOf(ready.lastTransitionTime);
  const generation = object.metadata?.generation;
  if (generation !== undefined && ready.observedGeneration !== undefined && ready.observedGeneration < generation) {
    return {
      state: 'not_ready',
      reason: ready.reason,
      message: `${described}: cert-manager has not yet looked at generation ${generation} (Ready is of ${ready.observedGeneration})`,
      since,
    };
  }
  if (ready.status === 'True') return { state: 'ready' };
  return {
    state: 'not_ready',
    reason: ready.reason,
    message: `${described} is not Ready (${ready.reason ?? 'no reason'}): ${ready.message ?? 'no message'}`,
    since,
  };
}

/**
 * The API path of the issuer (an Issuer in `namespace`, or a ClusterIssuer). cert-manager's own
 * group is served at v1; an external issuer's group at the version `preferredVersion` names.
 */
export function issuerPath(issuer: IssuerReference, namespace: string, version = 'v1'): string {
  const scope = issuer.kind === 'Issuer' ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `/apis/${issuer.group}/${version}${scope}/${issuer.kind === 'Issuer' ? 'issuers' : 'clusterissuers'}/${encodeURIComponent(issuer.name)}`;
}

/** The served version of an external issuer's API group (discovery), or undefined when the apiserver does not serve the group. */
async function preferredVersion(client: UpstreamReader, group: string): Promise<string | undefined> {
  const found = await getIfExists<{ preferredVersion?: { version?: string } }>(client, `/apis/${group}`);
  return found?.preferredVersion?.version;
}

/**
 * Reads the issuer's readiness (an Issuer in `namespace`, ESO's, or a ClusterIssuer): one GET, one
 * more for an external issuer's group. A group the apiserver does not serve is `missing` (its
 * CRDs are not installed); apiserver errors other than 404 are thrown.
 */
export async function readIssuerReadiness(client: UpstreamReader, issuer: IssuerReference, namespace: string): Promise<IssuerReadiness> {
  const version = issuer.group === DEFAULT_ISSUER_GROUP ? 'v1' : await preferredVersion(client, issuer.group);
  if (version === undefined)
    return { state: 'missing', message: `the API group ${issuer.group} of ${describeIssuer(issuer, namespace)} is not served: is its issuer installed?` };
  return issuerReadinessOf(await getIfExists<IssuerObject>(client, issuerPath(issuer, namespace, version)), issuer, namespace);
}
