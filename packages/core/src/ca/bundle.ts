import { type CaLayout, layoutCertificates } from './ca-rotation.js';
import type { CertificateView } from '../x509/certificate.js';
import { bundlePem } from '../x509/parse.js';

/**
 * The trust bundle (`ca.crt` of every leaf Secret) for CA certificates in order active, next,
 * retired: canonical PEM, each certificate once.
 */
export function trustBundle(certificates: readonly CertificateView[]): string {
  const seen = new Set<string>();
  return bundlePem(certificates.filter((c) => !seen.has(c.pem) && (seen.add(c.pem), true)));
}

/** The bundle a layout gives, or undefined while it holds a CA still to be generated. */
export function expectedBundle(layout: CaLayout): string | undefined {
  const parts = layoutCertificates(layout);
  return parts.every((p): p is CertificateView => typeof p !== 'string') ? trustBundle(parts) : undefined;
}
