import type { CertificateCache } from '../crypto/cache.js';
import { BUNDLE_WRITTEN_AT_ANNOTATION, type ObservedBundle } from '../secret/observe.js';
import { type MaterializedCa, bundleStamp } from './execute.js';
import { type Instant, parseInstant } from '../common/time.js';

/*
 * Trust bundles published outside Secrets: in pod-certificate mode, the ClusterTrustBundles the
 * kubelet projects into pods. They follow the rules of a Secret's ca.crt: they hold the CA layout's
 * certificates, and a write that adds one is stamped, so the next CA signs only once they have
 * held it for propagationDelay.
 */

/** A published bundle as read: its PEM text and annotations. */
export interface PublishedBundle {
  /** The bundle's PEM text (a ClusterTrustBundle's spec.trustBundle). */
  readonly text: string;
  /** Its annotations, where the stamp lives. */
  readonly annotations: Readonly<Record<string, string>>;
}

/** What the CA activation reads of a published bundle: its CA certificates (undefined: unreadable) and its stamp. */
export function observePublishedBundle(bundle: PublishedBundle | undefined, cache: CertificateCache): ObservedBundle {
  if (bundle === undefined) return { certificates: [] };
  let certificates: ObservedBundle['certificates'];
  try {
    certificates = cache.parseBundle(bundle.text).filter((c) => c.isCa);
  } catch {
    certificates = undefined;
  }
  const writtenAt = parseInstant(bundle.annotations[BUNDLE_WRITTEN_AT_ANNOTATION]);
  return writtenAt === undefined ? { certificates } : { certificates, writtenAt };
}

/**
 * The write that brings a published bundle to the materialized CA's bundle, or undefined when it
 * already holds exactly that text. The annotations are merged over the existing ones: a write that
 * adds a CA certificate is stamped with `now`; one that only drops some keeps the old stamp.
 */
export function publishedBundleWrite(
  current: PublishedBundle | undefined,
  ca: MaterializedCa,
  cache: CertificateCache,
  now: Instant,
): { readonly text: string; readonly annotations: Readonly<Record<string, string>> } | undefined {
  if (current?.text === ca.bundle) return undefined;
  const observed = observePublishedBundle(current, cache);
  return { text: ca.bundle, annotations: bundleStamp(current === undefined ? undefined : observed.certificates, ca, now) };
}
