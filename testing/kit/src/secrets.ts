// Reading what a Secret holds, as a tenant's workload would: its keys' text and its certificates,
// checked with Node's X509Certificate (not our own parser).
import { X509Certificate } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';

/** Decoded text of one key of a Secret; '' when the Secret or the key is absent. */
export const text = (secret: V1Secret | undefined, key: string): string => Buffer.from(secret?.data?.[key] ?? '', 'base64').toString('utf8');

/** PEM blocks of a bundle as X509Certificates. */
export function certificates(pem: string): X509Certificate[] {
  return (pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? []).map((b) => new X509Certificate(b));
}

/** The Secret's leaf certificate and bundle as X509Certificates. */
export function leafAndBundle(secret: V1Secret | undefined): { leaf: X509Certificate; bundle: X509Certificate[] } {
  return { leaf: new X509Certificate(text(secret, 'tls.crt')), bundle: certificates(text(secret, 'ca.crt')) };
}

/**
 * True when `leaf`, through `intermediates` (PEM, bottom up, as served after it in tls.crt), was
 * issued and signed by one of `cas` (Node's own checks, not ours).
 */
export function chainsTo(leaf: X509Certificate, cas: readonly X509Certificate[], intermediates: readonly string[] = []): boolean {
  let top = leaf;
  for (const pem of intermediates) {
    const next = new X509Certificate(pem);
    if (!(top.checkIssued(next) && top.verify(next.publicKey))) return false;
    top = next;
  }
  return cas.some((ca) => top.checkIssued(ca) && top.verify(ca.publicKey));
}
