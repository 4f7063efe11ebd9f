import type { CertificateView, KeyedCertificate } from '../x509/certificate.js';
import { bundlePem } from '../x509/parse.js';
import { anchorOf } from '../x509/ca-path.js';

/*
 * What the CA Secret holds after a plan: the CA that signs, the next one, the retired ones, and
 * since when the active one signs; and the trust bundle they make. Both the CA phases and the plan
 * read it.
 */

/** A CA slot after the plan: kept as it is, or generated when the plan is executed. */
export type CaMaterial = { readonly kind: 'existing'; readonly keyed: KeyedCertificate } | { readonly kind: 'generate' };

/**
 * The CA Secret's content after a plan: active (signs), next (its anchor published), retired
 * (anchors still trusted, no key). A slot's CA carries its path up to its anchor in `chain`.
 */
export interface CaLayout {
  /** The CA that signs leaves. */
  readonly active?: CaMaterial;
  /** The CA published in every bundle before it signs. */
  readonly next?: CaMaterial;
  /** Former anchors still trusted until nothing in use depends on them (for a self-signed CA, the CA itself). */
  readonly retired: readonly CertificateView[];
  /** With an upstream issuer: the key of the intermediate asked for, kept until its answer is placed. */
  readonly pending?: string;
}

/**
 * The trust anchors a layout publishes, in bundle order: active's, next's, the retired ones. A
 * self-signed CA is its own anchor; an upstream intermediate publishes the anchor its path ends at.
 */
export function layoutCertificates(layout: CaLayout): (CertificateView | 'active' | 'next')[] {
  const slot = (m: CaMaterial | undefined, name: 'active' | 'next'): (CertificateView | 'active' | 'next')[] =>
    m === undefined ? [] : m.kind === 'existing' ? [anchorOf(m.keyed)] : [name];
  return [...slot(layout.active, 'active'), ...slot(layout.next, 'next'), ...layout.retired];
}

/**
 * Annotation on the CA Secret: since when its active CA has signed (RFC 3339), set by each write
 * that makes a CA active. In pod-certificate mode a retired CA stays trusted until every pod
 * certificate it signed has expired: at most this instant plus the longest pod certificate.
 */
export const ACTIVE_SINCE_ANNOTATION = 'eso-mtls.io/active-since';

/**
 * Annotation on the CA Secret, with an upstream CA: since when its next CA has been published
 * (RFC 3339), set by the write that places it. An intermediate may have been issued long before
 * it reached us, so its notBefore does not tell.
 */
export const NEXT_SINCE_ANNOTATION = 'eso-mtls.io/next-since';

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
