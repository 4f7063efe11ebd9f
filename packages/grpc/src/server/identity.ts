import type { PeerCertificate } from 'node:tls';
import { CLIENT_COMMON_NAME } from '@eso-mtls/core';
import { extendedKeyUsageNames } from '../tls/material.js';

const CLIENT_AUTH_OID = '1.3.6.1.5.5.7.3.2';

/** The client identity a provider requires on every call, beyond a certificate from its CA. */
export interface ClientIdentityRequirement {
  /** Subject common name; default `external-secrets-core`, the name ESO's client certificate carries. */
  readonly commonName?: string;
  /** A URI subjectAltName that must be present, e.g. `spiffe://cluster.local/ns/external-secrets-system/sa/external-secrets`. */
  readonly spiffeId?: string;
}

/** What the verified client certificate says about the caller. */
export interface PeerIdentity {
  /** The certificate subject's commonName, if any. */
  readonly subjectCommonName: string | undefined;
  /** Its subjectAltName URIs, such as the ESO client's SPIFFE ID. */
  readonly uris: readonly string[];
  /** Its serial number, lower-case hex. */
  readonly serialNumber: string;
  /** Its extendedKeyUsage purposes, as OIDs. */
  readonly extendedKeyUsage: readonly string[];
}

/** The identity of a verified peer certificate as Node presents it. */
export function peerIdentity(certificate: PeerCertificate): PeerIdentity {
  const cn = certificate.subject?.CN as string | string[] | undefined;
  return {
    subjectCommonName: Array.isArray(cn) ? cn[0] : cn,
    uris: subjectAltNames(certificate.subjectaltname, 'URI'),
    serialNumber: (certificate.serialNumber ?? '').toLowerCase(),
    extendedKeyUsage: certificate.ext_key_usage ?? [],
  };
}

// Node renders subjectAltName as `DNS:a, URI:spiffe://x`; values may be JSON-quoted when they
// contain a comma or quote, which a SPIFFE ID never does, so a quoted entry is decoded first.
function subjectAltNames(text: string | undefined, kind: string): string[] {
  if (!text) return [];
  const out: string[] = [];
  for (const match of text.matchAll(/(\w+):("(?:[^"\\]|\\.)*"|[^,]*)(?:,\s*|$)/g)) {
    const [, type, raw = ''] = match;
    if (type === kind) out.push(raw.startsWith('"') ? (JSON.parse(raw) as string) : raw);
  }
  return out;
}

/**
 * Why `peer` does not satisfy `requirement`, naming what was expected and what was presented,
 * or undefined when it does. A certificate without EKU clientAuth never satisfies it (the TLS
 * layer refuses those already; this keeps the promise if the credentials ever change).
 */
export function clientIdentityMismatch(peer: PeerIdentity, requirement: ClientIdentityRequirement | false): string | undefined {
  if (!peer.extendedKeyUsage.includes(CLIENT_AUTH_OID)) {
    return `client certificate (serial ${peer.serialNumber}) lacks extendedKeyUsage clientAuth; presented [${extendedKeyUsageNames(peer.extendedKeyUsage).join(', ')}]`;
  }
  if (requirement === false) return undefined;
  const commonName = requirement.commonName ?? CLIENT_COMMON_NAME;
  if (peer.subjectCommonName !== commonName) {
    return `client certificate subject CN ${JSON.stringify(peer.subjectCommonName ?? null)} (serial ${peer.serialNumber}) is not the required ${JSON.stringify(commonName)}`;
  }
  if (requirement.spiffeId !== undefined && !peer.uris.includes(requirement.spiffeId)) {
    return `client certificate (serial ${peer.serialNumber}) does not carry the required URI SAN ${requirement.spiffeId}; presented [${peer.uris.join(', ')}]`;
  }
  return undefined;
}
