/**
 * A minimal DER (ITU-T X.690) writer and reader: just what building a TBSCertificate and slicing
 * raw fields out of certificates and keys needs. Issuing builds DER directly because a schema
 * serialiser spends far more time than key generation and signing together (see bench/). Raw
 * fields read as text (serial numbers, key identifiers, digests) are lower-case hex.
 */

/** Universal and context-specific tags used by X.509. */
export const Tag = {
  BOOLEAN: 0x01,
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  NULL: 0x05,
  OID: 0x06,
  UTF8_STRING: 0x0c,
  PRINTABLE_STRING: 0x13,
  IA5_STRING: 0x16,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
  SEQUENCE: 0x30,
  SET: 0x31,
} as const;

/** Raised for bytes that are not well-formed DER where DER was expected. */
export class DerError extends Error {
  override readonly name = 'DerError';
}

/** True when `a` and `b` hold the same bytes. */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** One TLV: `tag`, DER length, then the concatenated `contents`. */
export function tlv(tag: number, ...contents: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const c of contents) length += c.length;
  const lengthOctets = length < 0x80 ? 1 : length < 0x100 ? 2 : length < 0x10000 ? 3 : 4;
  const out = new Uint8Array(1 + lengthOctets + length);
  out[0] = tag;
  if (lengthOctets === 1) out[1] = length;
  else {
    out[1] = 0x80 | (lengthOctets - 1);
    for (let i = lengthOctets - 1, l = length; i >= 1; i--, l >>>= 8) out[1 + i] = l & 0xff;
  }
  let offset = 1 + lengthOctets;
  for (const c of contents) {
    out.set(c, offset);
    offset += c.length;
  }
  return out;
}

/** SEQUENCE of the given encoded elements. */
export const sequence = (...elements: readonly Uint8Array[]): Uint8Array => tlv(Tag.SEQUENCE, ...elements);

/** Context-specific constructed (EXPLICIT) tag `[n]`. */
export const explicit = (n: number, ...elements: readonly Uint8Array[]): Uint8Array => tlv(0xa0 | n, ...elements);

/** BOOLEAN; DER encodes TRUE as 0xff. */
export const boolean = (value: boolean): Uint8Array => tlv(Tag.BOOLEAN, Uint8Array.of(value ? 0xff : 0));

/** INTEGER from a small non-negative number. */
export function smallInteger(value: number): Uint8Array {
  if (!Number.isInteger(value) || value < 0 || value > 0x7fffffff) throw new DerError(`integer ${value} out of range`);
  const bytes: number[] = [];
  for (let v = value; v > 0; v >>>= 8) bytes.unshift(v & 0xff);
  return unsignedInteger(Uint8Array.from(bytes));
}

/**
 * INTEGER from unsigned big-endian magnitude bytes: leading zero octets are dropped and one is
 * added back when the top bit is set, as DER's minimal two's-complement encoding requires.
 */
export function unsignedInteger(magnitude: Uint8Array): Uint8Array {
  let start = 0;
  while (start < magnitude.length - 1 && magnitude[start] === 0) start++;
  const body = magnitude.subarray(start);
  if (body.length === 0) return tlv(Tag.INTEGER, Uint8Array.of(0));
  return (body[0]! & 0x80) !== 0 ? tlv(Tag.INTEGER, Uint8Array.of(0), body) : tlv(Tag.INTEGER, body);
}

/** OBJECT IDENTIFIER from its dotted form. */
export function oid(dotted: string): Uint8Array {
  const arcs = dotted.split('.').map(Number);
  if (arcs.length < 2 || arcs.some((a) => !Number.isSafeInteger(a) || a < 0)) throw new DerError(`invalid OID ${dotted}`);
  const bytes: number[] = [];
  const push = (arc: number): void => {
    const chunk: number[] = [arc % 128];
    for (let a = Math.floor(arc / 128); a > 0; a = Math.floor(a / 128)) chunk.unshift(0x80 | (a % 128));
    bytes.push(...chunk);
  };
  push(arcs[0]! * 40 + arcs[1]!);
  for (const arc of arcs.slice(2)) push(arc);
  return tlv(Tag.OID, Uint8Array.from(bytes));
}

/**
 * Dotted form of the OBJECT IDENTIFIER whose contents octets are `body`, exact for arcs of any
 * size. Throws DerError unless they are DER (X.690 8.19.2): a subidentifier must not start with a
 * 0x80 octet nor be cut short, so no two encodings read as the same identifier.
 */
export function oidToString(body: Uint8Array): string {
  if (body.length === 0) throw new DerError('an OBJECT IDENTIFIER is empty');
  const arcs: string[] = [];
  // Numbers stay exact below 2^53; an arc that grows past 2^45 continues as a bigint.
  let value = 0;
  let big: bigint | undefined;
  let first = true;
  for (const b of body) {
    if (first && b === 0x80) throw new DerError('an OBJECT IDENTIFIER has a subidentifier that starts with 0x80 (not DER)');
    first = false;
    if (big === undefined && value >= 2 ** 45) big = BigInt(value);
    if (big === undefined) value = value * 128 + (b & 0x7f);
    else big = big * 128n + BigInt(b & 0x7f);
    if ((b & 0x80) !== 0) continue;
    if (arcs.length > 0) arcs.push(big === undefined ? String(value) : big.toString());
    else if (big !== undefined) arcs.push('2', (big - 80n).toString());
    else arcs.push(value < 80 ? String(Math.floor(value / 40)) : '2', String(value < 80 ? value % 40 : value - 80));
    value = 0;
    big = undefined;
    first = true;
  }
  if (!first) throw new DerError('an OBJECT IDENTIFIER ends inside a subidentifier');
  return arcs.join('.');
}

/** BIT STRING with no unused bits (keys and signatures). */
export const bitString = (bytes: Uint8Array): Uint8Array => tlv(Tag.BIT_STRING, Uint8Array.of(0), bytes);

/**
 * BIT STRING of named bits (e.g. keyUsage), bit 0 being the most significant bit of the first
 * octet; DER drops trailing zero bits and records how many bits of the last octet are unused.
 */
export function namedBits(bits: readonly number[]): Uint8Array {
  const highest = Math.max(...bits);
  const bytes = new Uint8Array(Math.floor(highest / 8) + 1);
  for (const b of bits) bytes[b >> 3]! |= 0x80 >> (b & 7);
  return tlv(Tag.BIT_STRING, Uint8Array.of(7 - (highest & 7)), bytes);
}

/** OCTET STRING. */
export const octetString = (bytes: Uint8Array): Uint8Array => tlv(Tag.OCTET_STRING, bytes);

/** A string of type `tag` (UTF8String, IA5String...) from JavaScript text, UTF-8 encoded. */
export const text = (tag: number, value: string): Uint8Array => tlv(tag, utf8(value));

// TextEncoder is a stateless, deterministic builtin, not an ambient service.
const encoder = new TextEncoder();
/** UTF-8 bytes of `value`. */
export const utf8 = (value: string): Uint8Array => encoder.encode(value);

/**
 * RFC 5280 Time: UTCTime for years 1950-2049, GeneralizedTime otherwise, always in whole seconds
 * with `Z`, as section 4.1.2.5 requires.
 */
export function time(epochMs: number): Uint8Array {
  const d = new Date(epochMs);
  const year = d.getUTCFullYear();
  const two = (n: number): string => String(n).padStart(2, '0');
  const rest = `${two(d.getUTCMonth() + 1)}${two(d.getUTCDate())}${two(d.getUTCHours())}${two(d.getUTCMinutes())}${two(d.getUTCSeconds())}Z`;
  if (year >= 1950 && year < 2050) return text(Tag.UTC_TIME, `${two(year % 100)}${rest}`);
  return text(Tag.GENERALIZED_TIME, `${String(year).padStart(4, '0')}${rest}`);
}

/** One element found by {@link readElement}: its tag, where its contents lie, and where it ends. */
export interface DerElement {
  readonly tag: number;
  /** Offset of the tag octet. */
  readonly start: number;
  /** Offset of the first contents octet. */
  readonly contentStart: number;
  /** Offset just past the element. */
  readonly end: number;
}

/** Reads the element starting at `offset` of `der`, checking that it fits within `limit`. */
export function readElement(der: Uint8Array, offset: number, limit: number = der.length): DerElement {
  if (offset + 2 > limit) throw new DerError(`DER element at offset ${offset} is truncated`);
  const tag = der[offset]!;
  if ((tag & 0x1f) === 0x1f) throw new DerError(`high tag numbers are not used in X.509 (offset ${offset})`);
  let length = der[offset + 1]!;
  let contentStart = offset + 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    if (count === 0 || count > 4) throw new DerError(`unsupported DER length form at offset ${offset}`);
    if (contentStart + count > limit) throw new DerError(`DER length at offset ${offset} is truncated`);
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + der[contentStart + i]!;
    contentStart += count;
  }
  const end = contentStart + length;
  if (end > limit) throw new DerError(`DER element at offset ${offset} claims ${length} bytes, past the end of its container`);
  return { tag, start: offset, contentStart, end };
}

/** The elements directly inside the constructed element `outer`. */
export function children(der: Uint8Array, outer: DerElement): DerElement[] {
  const out: DerElement[] = [];
  for (let offset = outer.contentStart; offset < outer.end;) {
    const e = readElement(der, offset, outer.end);
    out.push(e);
    offset = e.end;
  }
  return out;
}

/** The whole encoding of `e` (tag, length and contents), without copying. */
export const encodingOf = (der: Uint8Array, e: DerElement): Uint8Array => der.subarray(e.start, e.end);

/** The contents octets of `e`, without copying. */
export const contentsOf = (der: Uint8Array, e: DerElement): Uint8Array => der.subarray(e.contentStart, e.end);

/** Lower-case hex of `bytes`. */
export function toHex(bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes) out += (b < 16 ? '0' : '') + b.toString(16);
  return out;
}

/** Bytes of a hex string such as a CertificateView's subjectKeyIdentifier. */
export function fromHex(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}
