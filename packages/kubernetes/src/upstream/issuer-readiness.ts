import type { Instant } from '@eso-mtls/core';
import { ResourceNotServedError } from '../informers/informer.js';
import { DEFAULT_ISSUER_GROUP, type IssuerReference } from '../installation/ca-source.js';
import { type StatusCondition, conditionOf, instantOf } from './conditions.js';
import { type ServedIssuer, issuerPath, servedIssuer } from './issuer-api.js';
import { type UpstreamReader, describeObject, getIfExists } from './upstream-read.js';

/*
 * Whether the cert-manager issuer `--ca-issuer` names can sign: its Ready condition, as
 * cert-manager's issuers controllers set it (a CA issuer whose Secret is missing or holds no CA is
 * Ready=False with the reason in the message). A request to an issuer that is not ready waits;
 * this is how the adapter says why (`issuer_not_ready`, `issuer_missing`).
 */

/** An issuer's readiness: it can sign, it exists but cannot (and why), or it does not exist. */
export type IssuerReadiness =
  | { readonly state: 'ready'; readonly message: string }
  | { readonly state: 'not_ready'; readonly reason: string | undefined; readonly message: string; readonly since: Instant | undefined }
  | { readonly state: 'missing'; readonly message: string };

/** The fields of an Issuer or ClusterIssuer this reader looks at. */
export interface IssuerObject {
  readonly metadata?: { readonly generation?: number };
  readonly status?: { readonly conditions?: readonly StatusCondition[] };
}

/**
 * `ClusterIssuer name` or `Issuer namespace/name` (an external kind with its group), as messages
 * name an issuer: with ESO's namespace when discovery found its kind namespaced (`served`). Before
 * discovery answered (its kind not served yet), a kind whose name says `Cluster` is named without
 * one: a message only, never a path.
 */
export function describeIssuer(issuer: IssuerReference, namespace: string, served?: ServedIssuer): string {
  const kind = issuer.group === DEFAULT_ISSUER_GROUP ? issuer.kind : `${issuer.kind}.${issuer.group}`;
  const namespaced = served?.namespaced ?? !issuer.kind.includes('Cluster');
  return namespaced ? describeObject(kind, namespace, issuer.name) : `${kind} ${issuer.name}`;
}

/**
 * The readiness an issuer object says (undefined: it does not exist). Ready only with
 * Ready=True for the issuer's current generation: a condition of an older generation describes a
 * spec that is gone.
 */
export function issuerReadinessOf(object: IssuerObject | undefined, issuer: IssuerReference, namespace: string, served?: ServedIssuer): IssuerReadiness {
  const described = describeIssuer(issuer, namespace, served);
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
  if (ready.status === 'True') return { state: 'ready', message: `${described} is Ready` };
  return {
    state: 'not_ready',
    reason: ready.reason,
    message: `${described} is not Ready (${ready.reason ?? 'no reason'}): ${ready.message ?? 'no message'}`,
    since,
  };
}

/**
 * The readiness of an issuer the controller cannot read: its kind not served (`detail`: what
 * discovery found missing), or its list refused (`detail`: the apiserver's answer, a 403 when the
 * controller's RBAC does not name it).
 */
export function issuerUnreadable(
  issuer: IssuerReference,
  namespace: string,
  reason: 'not_served' | 'refused',
  detail: string,
  served?: ServedIssuer,
): IssuerReadiness {
  const install = issuer.group === DEFAULT_ISSUER_GROUP ? "cert-manager's CRDs" : `the CRDs of the issuer of ${issuer.group}`;
  const hint =
    reason === 'not_served'
      ? `install ${install} (looked for again meanwhile), or fix --ca-issuer`
      : `check the controller's RBAC on it (the chart's ca.issuer.resource and ca.issuer.scope), or fix --ca-issuer`;
  return { state: 'missing', message: `${describeIssuer(issuer, namespace, served)} cannot be read: ${detail}; ${hint}` };
}

/**
 * Reads the issuer's readiness (a namespaced kind in `namespace`, ESO's, or a cluster-scoped one):
 * where its kind is served, then the issuer. A kind the apiserver does not serve is `missing`;
 * other apiserver errors are thrown.
 */
export async function readIssuerReadiness(client: UpstreamReader, issuer: IssuerReference, namespace: string): Promise<IssuerReadiness> {
  let served: ServedIssuer;
  try {
    served = await servedIssuer(client, issuer);
  } catch (e) {
    if (e instanceof ResourceNotServedError) return issuerUnreadable(issuer, namespace, 'not_served', e.message);
    throw e;
  }
  return issuerReadinessOf(await getIfExists<IssuerObject>(client, issuerPath(issuer, namespace, served)), issuer, namespace, served);
}
