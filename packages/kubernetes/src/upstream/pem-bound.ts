/*
 * The one size bound on PEM from an upstream source (a user's Secret, the trust anchors, a
 * CertificateRequest's status): over 1 MiB is refused as `too_large` before it is decoded or
 * parsed, so whatever a tenant or an issuer puts there costs us at most its transfer. A stock
 * kube-apiserver already refuses Secrets and ConfigMaps over 1 MiB of data; an aggregated or
 * patched one, and a custom resource's status, need not.
 */

/** Most bytes of PEM taken from any one upstream input (1 MiB). */
export const MAX_UPSTREAM_PEM_BYTES = 1024 * 1024;

/** PEM text taken from an upstream input, or why not. */
export type BoundedPem =
  { readonly ok: true; readonly pem: string } | { readonly ok: false; readonly reason: 'too_large'; readonly bytes: number; readonly message: string };

/** The `too_large` refusal of `what`, `bytes` long. */
const tooLarge = (what: string, bytes: number): BoundedPem => ({
  ok: false,
  reason: 'too_large',
  bytes,
  message: `${what} holds ${bytes} bytes, over the limit of ${MAX_UPSTREAM_PEM_BYTES} bytes of PEM: not read`,
});

/** Base64 data (a Secret's `data`, a ConfigMap's `binaryData`, a request's `status.certificate`) as PEM text, refused unread when its decoded size is over the bound. */
export function pemFromBase64(base64: string, what: string): BoundedPem {
  // Buffer.byteLength computes the decoded length from the text, without decoding it.
  const bytes = Buffer.byteLength(base64, 'base64');
  if (bytes > MAX_UPSTREAM_PEM_BYTES) return tooLarge(what, bytes);
  return { ok: true, pem: Buffer.from(base64, 'base64').toString('utf8') };
}

/** Text already decoded (a ConfigMap's `data`), refused when its UTF-8 size is over the bound. */
export function pemFromText(text: string, what: string): BoundedPem {
  // UTF-8 is at most 3 bytes per UTF-16 unit: only a long string needs counting.
  const bytes = text.length * 3 <= MAX_UPSTREAM_PEM_BYTES ? text.length : Buffer.byteLength(text, 'utf8');
  return bytes > MAX_UPSTREAM_PEM_BYTES ? tooLarge(what, bytes) : { ok: true, pem: text };
}
