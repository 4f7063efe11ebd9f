// A deliberately naive protobuf writer, written from the encoding spec
// (protobuf.dev/programming-guides/encoding), so wire tests do not trust the library they test.

const VARINT = 0;
const LEN = 2;

/** Base-128 varint, least significant group first. */
export function varint(n: number): Buffer {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return Buffer.from(out);
}

const tag = (field: number, wireType: number): Buffer => varint((field << 3) | wireType);

/** A varint field (int32, bool, enum). */
export const varintField = (field: number, value: number): Buffer => Buffer.concat([tag(field, VARINT), varint(value)]);

/** A length-delimited field: string, bytes or an embedded message. */
export function lenField(field: number, payload: string | Uint8Array): Buffer {
  const bytes = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : Buffer.from(payload);
  return Buffer.concat([tag(field, LEN), varint(bytes.length), bytes]);
}

/** An embedded message made of the given encoded fields. */
export const messageField = (field: number, ...fields: Buffer[]): Buffer => lenField(field, Buffer.concat(fields));

/** One map entry: maps are repeated messages with key = 1 and value = 2. */
export const mapEntry = (field: number, key: string, value: string | Uint8Array): Buffer => messageField(field, lenField(1, key), lenField(2, value));
