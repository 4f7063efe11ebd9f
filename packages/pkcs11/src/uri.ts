/**
 * RFC 7512 `pkcs11:` URIs naming a key: the token's label, the object's label and its CKA_ID. The
 * CA Secret stores one where the software backend stores a PKCS#8 PEM key.
 */

/** What a key reference names. */
export interface KeyReference {
  /** CKA_LABEL of the token. */
  readonly token: string;
  /** CKA_LABEL of the key objects. */
  readonly object: string;
  /** CKA_ID of the key pair. */
  readonly id: Uint8Array;
}

const SCHEME = 'pkcs11:';
// RFC 7512 section 2.3: pchar-like characters left as they are; every other byte is percent-encoded.
const UNRESERVED = /[A-Za-z0-9\-._~:[\]@!$'()*+,=&]/;

/** Percent-encodes the UTF-8 bytes of `s` that RFC 7512 does not allow as they are. */
function encodeText(s: string): string {
  return [...s].map((c) => (UNRESERVED.test(c) ? c : encodeBytes(new TextEncoder().encode(c)))).join('');
}

const encodeBytes = (bytes: Uint8Array): string => Array.from(bytes, (b) => `%${b.toString(16).padStart(2, '0')}`).join('');

/** The `pkcs11:` URI of a private key. */
export function formatKeyReference(ref: KeyReference): string {
  return `${SCHEME}token=${encodeText(ref.token)};object=${encodeText(ref.object)};id=${encodeBytes(ref.id)};type=private`;
}

/** True when `s` is a `pkcs11:` URI (it may still be one this package cannot use). */
export const isPkcs11Uri = (s: string): boolean => s.startsWith(SCHEME);

/** The longest reference read: a Secret's value is not to be trusted with unbounded work. */
const MAX_URI = 1024;

/** Reads a `pkcs11:` URI naming token, object and id; throws an error naming what is wrong. */
export function parseKeyReference(uri: string): KeyReference {
  if (!isPkcs11Uri(uri) || uri.length > MAX_URI) throw new Error(`not a pkcs11: URI of at most ${MAX_URI} characters`);
  const path = uri.slice(SCHEME.length).split('?')[0]!;
  const attributes = new Map<string, Uint8Array>();
  for (const part of path.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) throw new Error(`pkcs11: URI attribute ${JSON.stringify(part)} is not name=value`);
    attributes.set(part.slice(0, eq), decode(part.slice(eq + 1)));
  }
  const text = (name: string): string => {
    const v = attributes.get(name);
    if (v === undefined) throw new Error(`pkcs11: URI without ${name}=`);
    return new TextDecoder('utf-8', { fatal: true }).decode(v);
  };
  const id = attributes.get('id');
  if (id === undefined || id.length === 0) throw new Error('pkcs11: URI without id=');
  return { token: text('token'), object: text('object'), id };
}

/** Percent-decodes `s` to bytes. */
function decode(s: string): Uint8Array {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '%') {
      const hex = s.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) throw new Error(`bad percent-encoding at ${JSON.stringify(s.slice(i, i + 3))}`);
      out.push(parseInt(hex, 16));
      i += 2;
    } else {
      out.push(...new TextEncoder().encode(s[i]!));
    }
  }
  return Uint8Array.from(out);
}
