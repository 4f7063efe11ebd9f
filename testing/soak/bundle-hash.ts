import { createHash } from 'node:crypto';

/** A short hash of a trust bundle's PEM text: how the soak compares bundles across processes. */
export function bundleHash(pem: string): string {
  return createHash('sha256').update(pem).digest('hex').slice(0, 16);
}
