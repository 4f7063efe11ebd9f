// What the kubelet writes into a projected volume, from what the API holds. It reads PEM the lenient
// way Go's pem.Decode does (text between blocks and block headers are skipped) and re-encodes each
// block bare, so nothing but the blocks themselves reaches the pod.
import { encodePem } from '@eso-mtls/core';

/** Go's pem.Decode, repeated: the body of every well-formed block, in order; everything else is skipped. */
function pemBodies(text: string): Buffer[] {
  const bodies: Buffer[] = [];
  for (const match of text.matchAll(/-----BEGIN ([^\r\n-]+)-----\r?\n([\s\S]*?)-----END \1-----/g)) {
    // Header lines ("Key: value") precede the base64, which never holds a colon.
    const base64 = match[2]!
      .split(/\r?\n/)
      .filter((line) => !line.includes(':'))
      .join('');
    bodies.push(Buffer.from(base64.replace(/\s/g, ''), 'base64'));
  }
  return bodies;
}

/**
 * The chain as the kubelet keeps it (its cleanCertificateChain): each PEM block of the issued
 * `certificateChain`, re-encoded as a bare `CERTIFICATE` block, in order.
 */
export function cleanCertificateChain(certificateChain: string): string {
  return pemBodies(certificateChain)
    .map((der) => encodePem('CERTIFICATE', der))
    .join('');
}

/** `credentials.pem`: the PKCS#8 `PRIVATE KEY` block, then the chain's `CERTIFICATE` blocks, leaf first. */
export function credentialBundle(pkcs8Pem: string, certificateChain: string): string {
  return pkcs8Pem + cleanCertificateChain(certificateChain);
}

/**
 * The `ca.crt` of a `clusterTrustBundle` projection: every certificate of the matching bundles'
 * `trustBundle` PEM, each once, as bare `CERTIFICATE` blocks. The kubelet orders them by DER and
 * then shuffles once per kubelet start; this keeps the sorted order, so a test sees the same file
 * for the same set (a reader must not depend on the order either way).
 */
export function trustAnchors(trustBundles: readonly string[]): string {
  const unique = new Map<string, Buffer>();
  for (const der of trustBundles.flatMap(pemBodies)) unique.set(der.toString('latin1'), der);
  return [...unique.keys()]
    .sort()
    .map((key) => encodePem('CERTIFICATE', unique.get(key)!))
    .join('');
}
