import { corePath } from '../client/rest-client.js';
import type { TrustAnchorsReference } from '../installation/ca-source.js';
import { type BoundedPem, pemFromBase64, pemFromText } from './pem-bound.js';
import { type UpstreamReadRefusal, type UpstreamReader, describeObject, getIfExists, missingKey, notFound } from './upstream-read.js';

/*
 * `--ca-trust-anchors=Secret/NAME[/KEY]` or `ConfigMap/NAME[/KEY]`: the organisation's roots, PEM,
 * in ESO's namespace. A Secret's key is in `data` (base64); a ConfigMap's in `data` (text) or
 * `binaryData` (base64). Bounded before it is decoded; parsed by the core, not here.
 */

/** The fields of a Secret or ConfigMap this reader looks at. */
export interface TrustAnchorsObject {
  readonly metadata?: { readonly resourceVersion?: string };
  readonly data?: Readonly<Record<string, string>>;
  readonly binaryData?: Readonly<Record<string, string>>;
}

/** The trust anchors' PEM, unparsed, and the version it was read at. */
export interface TrustAnchors {
  readonly ok: true;
  readonly pem: string;
  readonly resourceVersion: string | undefined;
}

/** The key's PEM out of a ConfigMap (data as text, or binaryData) or a Secret (data, base64); undefined when absent. */
function anchorsData(object: TrustAnchorsObject, reference: TrustAnchorsReference, what: string): BoundedPem | undefined {
  const { key } = reference;
  if (reference.kind === 'Secret') return object.data?.[key] === undefined ? undefined : pemFromBase64(object.data[key], what);
  if (object.data?.[key] !== undefined) return pemFromText(object.data[key], what);
  return object.binaryData?.[key] === undefined ? undefined : pemFromBase64(object.binaryData[key], what);
}

/** What the referenced Secret or ConfigMap in `namespace` gives (undefined: it does not exist): the key's PEM within the bound, or why not. */
export function trustAnchorsOf(
  object: TrustAnchorsObject | undefined,
  reference: TrustAnchorsReference,
  namespace: string,
): TrustAnchors | UpstreamReadRefusal {
  const described = describeObject(reference.kind, namespace, reference.name);
  if (object === undefined)
    return notFound(described, `create it with the organisation's root certificates (PEM) under ${JSON.stringify(reference.key)}, or fix --ca-trust-anchors`);
  const pem = anchorsData(object, reference, `${described} key ${reference.key}`);
  if (pem === undefined) return missingKey(described, reference.key, [...Object.keys(object.data ?? {}), ...Object.keys(object.binaryData ?? {})]);
  if (!pem.ok) return { ok: false, problem: 'too_large', message: pem.message };
  return { ok: true, pem: pem.pem, resourceVersion: object.metadata?.resourceVersion };
}

/** Reads the trust anchors `reference` names in `namespace` (one GET); apiserver errors other than 404 are thrown. */
export async function readTrustAnchors(
  client: UpstreamReader,
  namespace: string,
  reference: TrustAnchorsReference,
): Promise<TrustAnchors | UpstreamReadRefusal> {
  const resource = reference.kind === 'Secret' ? 'secrets' : 'configmaps';
  return trustAnchorsOf(await getIfExists<TrustAnchorsObject>(client, corePath(resource, namespace, reference.name)), reference, namespace);
}
