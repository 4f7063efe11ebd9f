import { X509Certificate } from 'node:crypto';
import { type Issued, issueCa, issueServerLeaf, resolvePolicy } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { text } from './cluster.js';
import type { V1Secret } from '@kubernetes/client-node';

const crypto = createNodeCryptoBackend();

/** A CA nobody in the cluster trusts (an attacker's, or another cluster's), and a leaf it signed. */
export async function rogueCa(dnsNames: readonly string[]): Promise<{ ca: Issued; leaf: Issued }> {
  const ctx = { crypto, policy: resolvePolicy(), now: Date.now() };
  const ca = await issueCa(ctx, { commonName: 'rogue-ca' });
  const leaf = await issueServerLeaf(ctx, ca, dnsNames);
  return { ca, leaf };
}

/** The Secret's leaf certificate and bundle as X509Certificates. */
export function leafAndBundle(secret: V1Secret | undefined): { leaf: X509Certificate; bundle: X509Certificate[] } {
  const bundle = (text(secret, 'ca.crt').match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? []).map((b) => new X509Certificate(b));
  return { leaf: new X509Certificate(text(secret, 'tls.crt')), bundle };
}

/** True when `leaf` was issued and signed by one of `cas` (Node's own checks, not ours). */
export function chainsTo(leaf: X509Certificate, cas: readonly X509Certificate[]): boolean {
  return cas.some((ca) => leaf.checkIssued(ca) && leaf.verify(ca.publicKey));
}
