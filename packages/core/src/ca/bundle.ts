import { type CaLayout, layoutCertificates } from './ca-layout.js';
import type { CertificateView } from '../x509/certificate.js';
import { bundlePem } from '../x509/parse.js';
import type { Instant } from '../common/time.js';

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

/** A managed Secret's ca.crt: its certificates (undefined: unreadable) and when we last wrote it, if known. */
export interface ObservedBundle {
  /** The CA certificates it holds; undefined when unreadable. */
  readonly certificates?: readonly CertificateView[];
  /** When we last wrote it, if known. */
  readonly writtenAt?: Instant;
  /**
   * A provider namespace's only: since when our writes to it have been refused for a reason
   * retrying cannot change (immutable, or refused by the apiserver); see left-behind.ts.
   */
  readonly refusedSince?: Instant;
}

/**
 * Annotation on the leaf Secrets we write: since when their ca.crt has held every certificate it
 * holds (RFC 3339), set by each write that adds one. The next CA signs only once every bundle has
 * held it for propagationDelay since that instant.
 */
export const BUNDLE_WRITTEN_AT_ANNOTATION = 'eso-mtls.io/bundle-written-at';
