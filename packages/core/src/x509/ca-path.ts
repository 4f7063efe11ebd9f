import type { CertificateView, KeyedCertificate } from './certificate.js';
import { MAX_CHAIN_CERTIFICATES } from './chain.js';

/*
 * A signing CA's path: the CA that signs first, then the certificates above it, the trust anchor
 * last. A self-signed root is a path of one: it is its own anchor. An intermediate from an
 * upstream PKI carries its issuers in `chain` (docs/chaining-to-your-pki.md). Bundles publish the
 * anchors only; leaves are served with the path's intermediates after them. Upstream paths are
 * judged in full by verifyChain when they arrive; {@link pathBreak} only tells that a path we
 * stored (a CA slot, a leaf's tls.crt) was not altered since.
 */

/** The trust anchor a CA's path ends at: the last of its chain, or the CA itself. */
export function anchorOf(ca: KeyedCertificate): CertificateView {
  return ca.chain?.at(-1) ?? ca.certificate;
}

/** True when the CA is an intermediate under an upstream anchor, not a root of its own. */
export function isIntermediate(ca: KeyedCertificate): boolean {
  return (ca.chain?.length ?? 0) > 0;
}

/**
 * What a leaf signed by `ca` is served with after it: the CA and every certificate above it but the
 * anchor. Nothing for a self-signed root.
 */
export function servedIntermediates(ca: KeyedCertificate): readonly CertificateView[] {
  return isIntermediate(ca) ? [ca.certificate, ...ca.chain!.slice(0, -1)] : [];
}

/** The whole path, bottom up: the CA, its issuers, the anchor. */
export function caPath(ca: KeyedCertificate): readonly CertificateView[] {
  return [ca.certificate, ...(ca.chain ?? [])];
}

/** The latest notBefore along the path: a leaf the CA signs must not begin before it. */
export function pathNotBefore(ca: KeyedCertificate): number {
  return Math.max(...caPath(ca).map((c) => c.notBefore));
}

/** The earliest notAfter along the path: a leaf the CA signs must end by then. */
export function pathNotAfter(ca: KeyedCertificate): number {
  return Math.min(...caPath(ca).map((c) => c.notAfter));
}

/**
 * Why `certificates` (bottom up) are not a path of CAs each signed by the next, or undefined when
 * they are. `isSignedBy` is the caller's memoised check. The length is bounded like any chain.
 */
export function pathBreak(certificates: readonly CertificateView[], isSignedBy: (c: CertificateView, by: CertificateView) => boolean): string | undefined {
  if (certificates.length > MAX_CHAIN_CERTIFICATES) return `${certificates.length} certificates, over the limit of ${MAX_CHAIN_CERTIFICATES}`;
  for (let i = 0; i + 1 < certificates.length; i++) {
    const [child, parent] = [certificates[i]!, certificates[i + 1]!];
    if (!parent.isCa) return `certificate ${i + 2} (${parent.subject}) is not a CA`;
    if (child.issuer !== parent.subject || !isSignedBy(child, parent)) {
      return `certificate ${i + 1} (${child.subject}) is not signed by certificate ${i + 2} (${parent.subject})`;
    }
  }
  return undefined;
}

/** The certificate of a served path an anchor signs: the last certificate of its chain, or the leaf itself. */
export function topOf(served: Pick<KeyedCertificate, 'certificate' | 'chain'>): CertificateView {
  return served.chain?.at(-1) ?? served.certificate;
}
