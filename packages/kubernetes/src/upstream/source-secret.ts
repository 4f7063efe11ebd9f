import { corePath } from '../client/rest-client.js';
import { pemFromBase64 } from './pem-bound.js';
import { type UpstreamReadRefusal, type UpstreamReader, describeObject, getIfExists, missingKey, notFound } from './upstream-read.js';

/*
 * `--ca-from-secret=NAME`: the Secret the user maintains in ESO's namespace, holding the
 * intermediate first then its chain (`tls.crt`) and the intermediate's key (`tls.key`). Read and
 * watched, never written. Each key is bounded before it is decoded; nothing here parses a
 * certificate or a key (the core does, from what this returns).
 */

/** The certificate data key of the source Secret. */
export const SOURCE_CERTIFICATE_KEY = 'tls.crt';
/** The private key data key of the source Secret. */
export const SOURCE_KEY_KEY = 'tls.key';

/** The Secret's fields this reader looks at. */
export interface SourceSecretObject {
  readonly metadata?: { readonly resourceVersion?: string };
  readonly data?: Readonly<Record<string, string>>;
}

/** The source Secret's PEM, unparsed, and the version it was read at. */
export interface SourceSecret {
  readonly ok: true;
  /** `tls.crt`: the intermediate, then the certificates above it. */
  readonly certificatePem: string;
  /** `tls.key`: the intermediate's private key. */
  readonly keyPem: string;
  /** The Secret's resourceVersion, so a watcher knows what it has seen. */
  readonly resourceVersion: string | undefined;
}

/**
 * What the source Secret `namespace/name` gives (undefined: it does not exist): both keys, each
 * within the PEM bound, or the first problem found (the object, then each key's presence, then
 * each key's size).
 */
export function sourceSecretOf(secret: SourceSecretObject | undefined, namespace: string, name: string): SourceSecret | UpstreamReadRefusal {
  const object = describeObject('Secret', namespace, name);
  if (secret === undefined) return notFound(object, `create it with ${SOURCE_CERTIFICATE_KEY} and ${SOURCE_KEY_KEY}, or fix --ca-from-secret`);
  const data = secret.data ?? {};
  for (const key of [SOURCE_CERTIFICATE_KEY, SOURCE_KEY_KEY]) {
    if (data[key] === undefined) return missingKey(object, key, Object.keys(data));
  }
  const certificate = pemFromBase64(data[SOURCE_CERTIFICATE_KEY]!, `${object} key ${SOURCE_CERTIFICATE_KEY}`);
  if (!certificate.ok) return { ok: false, problem: 'too_large', message: certificate.message };
  const key = pemFromBase64(data[SOURCE_KEY_KEY]!, `${object} key ${SOURCE_KEY_KEY}`);
  if (!key.ok) return { ok: false, problem: 'too_large', message: key.message };
  return { ok: true, certificatePem: certificate.pem, keyPem: key.pem, resourceVersion: secret.metadata?.resourceVersion };
}

/** Reads the source Secret `namespace/name` (one GET); apiserver errors other than 404 are thrown. */
export async function readSourceSecret(client: UpstreamReader, namespace: string, name: string): Promise<SourceSecret | UpstreamReadRefusal> {
  return sourceSecretOf(await getIfExists<SourceSecretObject>(client, corePath('secrets', namespace, name)), namespace, name);
}
