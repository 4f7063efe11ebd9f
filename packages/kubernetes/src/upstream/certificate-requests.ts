import { type Duration, readCertificationRequest, sha256 } from '@eso-mtls/core';
import { apiErrorOf } from '../client/api-error.js';
import type { KubeRestClient } from '../client/rest-client.js';
import type { IssuerReference } from '../installation/ca-source.js';
import { INSTALLATION_ANNOTATION, MANAGED_BY, MANAGED_BY_LABEL } from '../installation/ownership.js';
import { type CaRequestStatus, type CertificateRequestStatusObject, classifyCaRequest } from './certificate-request-status.js';
import { pemFromBase64 } from './pem-bound.js';
import { getIfExists } from './upstream-read.js';

/*
 * The cert-manager CertificateRequests through which the controller asks an issuer for its
 * intermediate (docs/chaining-to-your-pki.md): built, created, read, listed and deleted here, in
 * ESO's namespace. The name comes from the key, so a retry after a crash finds the request the
 * key already has instead of asking twice.
 */

/** cert-manager's API group and version of CertificateRequest. */
export const CERT_MANAGER_API_VERSION = 'cert-manager.io/v1';
/** Label on every CertificateRequest of ours, beside {@link MANAGED_BY_LABEL}. */
export const CA_REQUEST_LABEL = 'eso-mtls.io/ca-request';
/** The label selector of our CertificateRequests. */
export const CA_REQUEST_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY},${CA_REQUEST_LABEL}=true`;
/** Prefix of our CertificateRequests' names, before 10 hex digits of the key's SHA-256. */
export const CA_REQUEST_NAME_PREFIX = 'eso-mtls-ca-';
/** The key usages asked for: what an intermediate that signs leaves needs, and no more. */
export const CA_REQUEST_USAGES: readonly string[] = Object.freeze(['cert sign', 'crl sign', 'digital signature']);

/** A CertificateRequest as we write and read it. */
export interface CertificateRequestObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly resourceVersion?: string;
    readonly creationTimestamp?: string;
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
  };
  readonly spec: {
    /** base64 of the PEM CSR. */
    readonly request: string;
    readonly isCA?: boolean;
    readonly usages?: readonly string[];
    readonly issuerRef: { readonly name: string; readonly kind?: string; readonly group?: string };
    /** A Go duration (`8760h0m0s`). */
    readonly duration?: string;
  };
  readonly status?: CertificateRequestStatusObject;
}

/** What a request for an intermediate asks. */
export interface CaRequestSpec {
  /** ESO's namespace, where the request lives. */
  readonly namespace: string;
  /** The installation (`<esoNamespace>/<caSecretName>`), so two installations in one namespace never take each other's. */
  readonly installation: string;
  /** The PKCS#10 request, PEM (core's encodeCaCertificationRequest). */
  readonly csrPem: string;
  readonly issuer: IssuerReference;
  /** The validity asked for; the issuer may return less. Left to the issuer's default when undefined. */
  readonly duration?: Duration;
}

/** `eso-mtls-ca-` and the first 10 hex digits of the SHA-256 of the DER SubjectPublicKeyInfo. */
export function caRequestName(subjectPublicKeyInfo: Uint8Array): string {
  return CA_REQUEST_NAME_PREFIX + Buffer.from(sha256(subjectPublicKeyInfo)).toString('hex').slice(0, 10);
}

/** A duration as Go's time.ParseDuration reads it, in whole seconds (`8760h0m0s`). */
export function goDuration(duration: Duration): string {
  const total = Math.floor(duration / 1000);
  if (!Number.isFinite(total) || total <= 0) throw new RangeError(`a CertificateRequest duration must be at least one second, not ${duration} ms`);
  return `${Math.floor(total / 3600)}h${Math.floor((total % 3600) / 60)}m${total % 60}s`;
}

/**
 * The CertificateRequest for `spec`: named from the key the CSR carries (core's reader; a CSR it
 * cannot read throws its CertificationRequestError), labelled ours, isCA with the CA usages.
 */
export function caRequestManifest(spec: CaRequestSpec): CertificateRequestObject {
  const csr = readCertificationRequest(spec.csrPem);
  return {
    apiVersion: CERT_MANAGER_API_VERSION,
    kind: 'CertificateRequest',
    metadata: {
      name: caRequestName(csr.subjectPublicKeyInfo),
      namespace: spec.namespace,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY, [CA_REQUEST_LABEL]: 'true' },
      annotations: { [INSTALLATION_ANNOTATION]: spec.installation },
    },
    spec: {
      request: Buffer.from(spec.csrPem, 'utf8').toString('base64'),
      isCA: true,
      usages: [...CA_REQUEST_USAGES],
      issuerRef: { name: spec.issuer.name, kind: spec.issuer.kind, group: spec.issuer.group },
      ...(spec.duration === undefined ? {} : { duration: goDuration(spec.duration) }),
    },
  };
}

/** The API path of CertificateRequests in `namespace`, or of the one named. */
export function caRequestPath(namespace: string, name?: string): string {
  return `/apis/${CERT_MANAGER_API_VERSION}/namespaces/${encodeURIComponent(namespace)}/certificaterequests${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;
}

/** True when `request` is one of ours and of `installation`. */
export function isOurCaRequest(request: CertificateRequestObject, installation: string): boolean {
  const { labels, annotations } = request.metadata;
  return labels?.[MANAGED_BY_LABEL] === MANAGED_BY && labels[CA_REQUEST_LABEL] === 'true' && annotations?.[INSTALLATION_ANNOTATION] === installation;
}

/** A request's status, classified (certificate-request-status.ts). */
export const caRequestStatus = (request: CertificateRequestObject): CaRequestStatus =>
  classifyCaRequest(request.status, request.metadata.creationTimestamp, `CertificateRequest ${request.metadata.namespace ?? ''}/${request.metadata.name}`);

/** Raised when the request's name is taken by one that is not ours; the message says by what. */
export class CaRequestConflictError extends Error {
  /** Always `CaRequestConflictError`. */
  override readonly name = 'CaRequestConflictError';
}

/**
 * The DER SubjectPublicKeyInfo a request's CSR carries, or undefined when its `spec.request` is
 * over the PEM bound or not a CSR the core reads.
 */
function requestedKey(request: CertificateRequestObject): Uint8Array | undefined {
  const csr = pemFromBase64(request.spec.request, 'spec.request');
  if (!csr.ok) return undefined;
  try {
    return readCertificationRequest(csr.pem).subjectPublicKeyInfo;
  } catch {
    return undefined;
  }
}

/**
 * Creates the request (a POST). When its name is taken, as after a crash between the create and
 * its record, the existing request is returned with `created: false` if it is ours and asks for
 * the same key (its CSR's bytes may differ: an ECDSA signature is new each time), else
 * {@link CaRequestConflictError}. Other apiserver errors are thrown as they came.
 */
export async function createCaRequest(
  client: Pick<KubeRestClient, 'create' | 'get'>,
  manifest: CertificateRequestObject,
): Promise<{ readonly created: boolean; readonly request: CertificateRequestObject }> {
  const namespace = manifest.metadata.namespace ?? '';
  try {
    return { created: true, request: await client.create<CertificateRequestObject>(caRequestPath(namespace), manifest) };
  } catch (e) {
    if (apiErrorOf(e).code !== 409) throw e;
  }
  const existing = await client.get<CertificateRequestObject>(caRequestPath(namespace, manifest.metadata.name));
  const installation = manifest.metadata.annotations?.[INSTALLATION_ANNOTATION] ?? '';
  const key = requestedKey(existing);
  if (!isOurCaRequest(existing, installation) || key === undefined || Buffer.compare(key, requestedKey(manifest) ?? new Uint8Array()) !== 0) {
    throw new CaRequestConflictError(
      `CertificateRequest ${namespace}/${manifest.metadata.name} exists and is not ours for this key (installation ${JSON.stringify(installation)}): delete it, or let its owner do so`,
    );
  }
  return { created: false, request: existing };
}

/** One request, or undefined when it does not exist. */
export function getCaRequest(client: Pick<KubeRestClient, 'get'>, namespace: string, name: string): Promise<CertificateRequestObject | undefined> {
  return getIfExists<CertificateRequestObject>(client, caRequestPath(namespace, name));
}

/**
 * Deletes a request; with `uid`, only that incarnation of the name (a precondition: a request
 * created again meanwhile stays, and the answer is `conflict`). `gone` when it was not there.
 */
export async function deleteCaRequest(
  client: Pick<KubeRestClient, 'request'>,
  namespace: string,
  name: string,
  uid?: string,
): Promise<'deleted' | 'gone' | 'conflict'> {
  try {
    const body = uid === undefined ? undefined : { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid } };
    await client.request('DELETE', caRequestPath(namespace, name), { body });
    return 'deleted';
  } catch (e) {
    const { code } = apiErrorOf(e);
    if (code === 404) return 'gone';
    if (code === 409) return 'conflict';
    throw e;
  }
}
