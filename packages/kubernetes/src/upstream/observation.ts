import { CA_REQUEST_ANNOTATION, type CaRequestObservation, type SecretState, type UpstreamObservation, type UpstreamText } from '@eso-mtls/core';
import type { CaSource } from '../installation/ca-source.js';
import type { Installation } from '../installation/installation.js';
import { type CertificateRequestObject, caRequestStatus, getCaRequest, isOurCaRequest } from './certificate-requests.js';
import { type IssuerReadiness, readIssuerReadiness } from './issuer-readiness.js';
import { type SourceSecret, readSourceSecret } from './source-secret.js';
import { type TrustAnchors, readTrustAnchors } from './trust-anchors.js';
import type { UpstreamReadRefusal, UpstreamReader } from './upstream-read.js';

/*
 * The one way what was read of an upstream source becomes the core's UpstreamObservation: from the
 * adapter's caches each round (ca-upstream-source.ts), or by one GET each for `eso-mtls status`
 * ({@link readUpstreamObservation}).
 */

/** An upstream source: the CA source when it is not the self-signed CA. */
export type UpstreamSource = Exclude<CaSource, { kind: 'self-signed' }>;

/** The source as the CA Secret records it and messages name it: `issuer/<Kind>/<name>` (with the group when not cert-manager's) or `secret/<name>`. */
export function sourceName(source: UpstreamSource): string {
  if (source.kind === 'secret') return `secret/${source.secretName}`;
  const kind = source.issuer.group === 'cert-manager.io' ? source.issuer.kind : `${source.issuer.kind}.${source.issuer.group}`;
  return `issuer/${kind}/${source.issuer.name}`;
}

/** What was read of the source's objects. */
export interface UpstreamReads {
  readonly anchors: TrustAnchors | UpstreamReadRefusal;
  /** `secret`: the user's Secret. */
  readonly secret?: SourceSecret | UpstreamReadRefusal;
  /** `issuer`: the issuer's readiness. */
  readonly issuer?: IssuerReadiness;
  /** `issuer`: the request the CA Secret names, and the object of that name (undefined: none). */
  readonly request?: { readonly name: string; readonly object: CertificateRequestObject | undefined };
}

const text = (read: TrustAnchors | UpstreamReadRefusal): UpstreamText => (read.ok ? { ok: true, text: read.pem } : { ok: false, message: read.message });

/** The request the CA Secret names, as the core reads it. */
function requestObservation(name: string, object: CertificateRequestObject | undefined, installation: Installation): CaRequestObservation {
  if (!object || !isOurCaRequest(object, installation.id)) {
    return { name, state: 'missing', message: `CertificateRequest ${installation.esoNamespace}/${name} does not exist (or is not ours)` };
  }
  const status = caRequestStatus(object);
  return {
    name,
    state: status.state,
    ...(status.since === undefined ? {} : { since: status.since }),
    message: status.refusal?.message ?? status.message,
    ...(status.certificatePem === undefined ? {} : { certificate: status.certificatePem }),
    ...(status.caPem === undefined ? {} : { ca: status.caPem }),
    ...(status.refusal ? { unread: status.refusal.reason === 'too_large' ? ('too_large' as const) : ('malformed' as const) } : {}),
  };
}

/** The core's observation of what was read. */
export function upstreamObservation(source: UpstreamSource, installation: Installation, reads: UpstreamReads): UpstreamObservation {
  const base = {
    kind: source.kind,
    source: sourceName(source),
    anchors: text(reads.anchors),
    requestedValidity: (source.kind === 'issuer' ? source.duration : undefined) ?? installation.policy.caValidity,
    requestDeadline: source.kind === 'issuer' ? source.requestDeadline : installation.policy.reconcileInterval,
  };
  if (source.kind === 'secret') {
    const read = reads.secret;
    const secret: UpstreamObservation['secret'] =
      read === undefined || !read.ok
        ? { certificate: { ok: false, message: read?.message ?? 'not read' }, key: { ok: false, message: read?.message ?? 'not read' } }
        : { certificate: { ok: true, text: read.certificatePem }, key: { ok: true, text: read.keyPem } };
    return { ...base, secret };
  }
  const readiness = reads.issuer;
  const issuer = readiness === undefined ? { state: 'missing' as const, message: 'not read' } : { state: readiness.state, message: readiness.message };
  const request = reads.request && requestObservation(reads.request.name, reads.request.object, installation);
  return { ...base, issuer, ...(request ? { request } : {}) };
}

/**
 * Reads the source once, one GET per object (`eso-mtls status`): the anchors, and the user's Secret
 * or the issuer and the request the CA Secret names. Apiserver errors other than 404 are thrown.
 */
export async function readUpstreamObservation(
  client: UpstreamReader,
  installation: Installation,
  caSecret: SecretState | undefined,
): Promise<UpstreamObservation | undefined> {
  const source = installation.caSource;
  if (source.kind === 'self-signed') return undefined;
  const namespace = installation.esoNamespace;
  const anchors = await readTrustAnchors(client, namespace, source.trustAnchors);
  if (source.kind === 'secret')
    return upstreamObservation(source, installation, { anchors, secret: await readSourceSecret(client, namespace, source.secretName) });
  const issuer = await readIssuerReadiness(client, source.issuer, namespace);
  const name = caSecret?.annotations[CA_REQUEST_ANNOTATION];
  const request = name ? { name, object: await getCaRequest(client, namespace, name) } : undefined;
  return upstreamObservation(source, installation, { anchors, issuer, ...(request ? { request } : {}) });
}
