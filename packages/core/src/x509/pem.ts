/**
 * PEM (RFC 7468) and base64 (RFC 4648) in plain TypeScript. The decoder is strict on purpose:
 * a truncated or corrupted Secret must be reported as garbage, not half-read the way lenient
 * decoders (Node's Buffer among them) silently skip characters they do not understand.
 */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const DECODE = new Int16Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DECODE[ALPHABET.charCodeAt(i)] = i;

/** Raised for text that is not well-formed PEM or base64; the message says where and why. */
export class PemError extends Error {
  /** Always `PemError`. */
  override readonly name = 'PemError';
}

const ALPHABET_CODES = Uint8Array.from(ALPHABET, (c) => c.charCodeAt(0));
const ascii = new TextDecoder('utf-8');

/**
 * Standard base64 with padding. Built as bytes and decoded once: a string grown by `+=` is a tree
 * of thousands of cons-strings, which a cache holding certificates by their PEM keeps alive.
 */
export function encodeBase64(bytes: Uint8Array): string {
  const out = new Uint8Array(Math.ceil(bytes.length / 3) * 4);
  let o = 0;
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out[o++] = ALPHABET_CODES[n >> 18]!;
    out[o++] = ALPHABET_CODES[(n >> 12) & 63]!;
    out[o++] = ALPHABET_CODES[(n >> 6) & 63]!;
    out[o++] = ALPHABET_CODES[n & 63]!;
  }
  const rest = bytes.length - i;
  if (rest > 0) {
    const n = (bytes[i]! << 16) | (rest === 2 ? bytes[i + 1]! << 8 : 0);
    out[o++] = ALPHABET_CODES[n >> 18]!;
    out[o++] = ALPHABET_CODES[(n >> 12) & 63]!;
    out[o++] = rest === 2 ? ALPHABET_CODES[(n >> 6) & 63]! : 61; /* = */
    out[o] = 61;
  }
  return ascii.decode(out);
}

/** Strict standard base64: length a multiple of 4, padding only at the end, no stray characters. */
export function decodeBase64(text: string): Uint8Array<ArrayBuffer> {
  if (text.length % 4 !== 0) throw new PemError(`base64 length ${text.length} is not a multiple of 4 (truncated?)`);
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const out = new Uint8Array((text.length / 4) * 3 - padding);
  let o = 0;
  for (let i = 0; i < text.length; i += 4) {
    let n = 0;
    for (let j = 0; j < 4; j++) {
      const c = text.charCodeAt(i + j);
      const last = i + 4 === text.length;
      if (c === 61 /* = */ && last && j >= 4 - padding) {
        n <<= 6;
        continue;
      }
      const v = c < 128 ? DECODE[c]! : -1;
      if (v < 0) throw new PemError(`invalid base64 character ${JSON.stringify(text[i + j])} at position ${i + j}`);
      n = (n << 6) | v;
    }
    out[o++] = n >> 16;
    if (o < out.length) out[o++] = (n >> 8) & 0xff;
    if (o < out.length) out[o++] = n & 0xff;
  }
  return out;
}

/** Base64 wrapped at 64 columns between BEGIN/END lines, with a trailing newline. */
export function encodePem(label: string, der: Uint8Array): string {
  const b64 = encodeBase64(der);
  // join() returns one flat string, not a tree of slices and concatenations (see encodeBase64).
  const lines = [`-----BEGIN ${label}-----`];
  for (let i = 0; i < b64.length; i += 64) lines.push(b64.slice(i, i + 64));
  lines.push(`-----END ${label}-----`, '');
  return lines.join('\n');
}

/** One PEM block: its label (e.g. CERTIFICATE) and decoded contents. */
export interface PemBlock {
  /** The label of the BEGIN/END lines, e.g. `CERTIFICATE`. */
  readonly label: string;
  /** The decoded base64 body. */
  readonly der: Uint8Array<ArrayBuffer>;
}

const BEGIN = /^-----BEGIN ([A-Z0-9 ]+)-----$/;
const END = /^-----END ([A-Z0-9 ]+)-----$/;

/**
 * Every PEM block in `text`, in order. Accepts CRLF line ends and surrounding whitespace; rejects
 * text outside the blocks, unterminated or mismatched blocks, and bad base64, naming the line.
 */
export function decodePemBlocks(text: string): PemBlock[] {
  const blocks: PemBlock[] = [];
  const lines = text.split(/\r?\n/);
  let label: string | undefined;
  let body: string[] = [];
  let beganAt = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (label === undefined) {
      if (line === '') continue;
      const begin = BEGIN.exec(line);
      if (!begin) throw new PemError(`line ${i + 1} is outside any PEM block: ${JSON.stringify(clip(line))}`);
      label = begin[1]!;
      body = [];
      beganAt = i + 1;
      continue;
    }
    const end = END.exec(line);
    if (end) {
      if (end[1] !== label) throw new PemError(`line ${i + 1}: END ${end[1]} does not close BEGIN ${label} of line ${beganAt}`);
      let der: Uint8Array<ArrayBuffer>;
      try {
        der = decodeBase64(body.join(''));
      } catch (e) {
        throw new PemError(`${label} block starting at line ${beganAt}: ${(e as Error).message}`);
      }
      if (der.length === 0) throw new PemError(`${label} block starting at line ${beganAt} is empty`);
      blocks.push({ label, der });
      label = undefined;
      continue;
    }
    if (line.startsWith('-----')) throw new PemError(`line ${i + 1}: unexpected ${JSON.stringify(clip(line))} inside ${label} block`);
    if (line.includes(':')) throw new PemError(`line ${i + 1}: encapsulated headers are not supported in a ${label} block`);
    body.push(line);
  }
  if (label !== undefined) throw new PemError(`${label} block starting at line ${beganAt} has no END line (truncated?)`);
  if (blocks.length === 0) throw new PemError('no PEM block found');
  return blocks;
}

// A stateless, deterministic builtin; non-fatal, so invalid UTF-8 becomes U+FFFD instead of throwing.
const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: false });

/**
 * Text of a Secret value, never throwing. PEM is ASCII, so whatever a non-ASCII byte decodes to
 * can only end up rejected by the PEM parser. Native decoding matters: observing thousands of
 * Secrets per resync decodes every value every time.
 */
export function textOf(value: Uint8Array | string): string {
  return typeof value === 'string' ? value : decoder.decode(value);
}

const clip = (s: string): string => (s.length > 40 ? `${s.slice(0, 40)}...` : s);
