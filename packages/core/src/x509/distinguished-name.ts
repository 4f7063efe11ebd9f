import { type DerElement, Tag, children, contentsOf, encodingOf, oid, oidToString, sequence, text, tlv } from './der.js';

/** id-at-commonName. */
export const OID_COMMON_NAME = '2.5.4.3';
const COMMON_NAME = oid(OID_COMMON_NAME);

// RFC 4514 section 3 short names; every other attribute type is written as its dotted OID.
const SHORT_NAMES: Readonly<Record<string, string>> = {
  '2.5.4.3': 'CN',
  '2.5.4.6': 'C',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.9': 'STREET',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '0.9.2342.19200300.100.1.25': 'DC',
  '0.9.2342.19200300.100.1.1': 'UID',
};

/** RFC 4514 escaping of one attribute value. */
function escapeValue(value: string): string {
  let out = value.replace(/[\\"+,;<>]/g, (c) => `\\${c}`).replace(/\0/g, '\\00');
  if (out.startsWith('#') || out.startsWith(' ')) out = `\\${out}`;
  if (out.endsWith(' ') && out.length > 1) out = `${out.slice(0, -1)}\\ `;
  return out;
}

const utf8Decoder = new TextDecoder('utf-8', { fatal: true });
/** Latin-1 text of `b`, in chunks: spreading a long value as arguments overflows the stack. */
function latin1(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length; i += 8192) s += String.fromCharCode(...b.subarray(i, i + 8192));
  return s;
}

/** The text of a DirectoryString-like value, or undefined when it is not a string type. */
export function decodeString(tag: number, body: Uint8Array): string | undefined {
  switch (tag) {
    case Tag.UTF8_STRING:
      return utf8Decoder.decode(body);
    case Tag.PRINTABLE_STRING:
    case Tag.IA5_STRING:
    case 0x14 /* TeletexString */:
      return latin1(body);
    case 0x1e /* BMPString, UTF-16BE */: {
      let s = '';
      for (let i = 0; i + 1 < body.length; i += 2) s += String.fromCharCode((body[i]! << 8) | body[i + 1]!);
      return s;
    }
    case 0x1c /* UniversalString, UTF-32BE */: {
      let s = '';
      for (let i = 0; i + 3 < body.length; i += 4)
        s += String.fromCodePoint(((body[i]! << 24) | (body[i + 1]! << 16) | (body[i + 2]! << 8) | body[i + 3]!) >>> 0);
      return s;
    }
    default:
      return undefined;
  }
}

const hex = (bytes: Uint8Array): string => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');

/** A Name read from DER: its RFC 4514 string and its first commonName. */
export interface ReadName {
  readonly rfc4514: string;
  readonly commonName: string | undefined;
}

/**
 * Reads the Name `name` of `der`: RFC 4514 string (RDNs in reverse order, comma-separated,
 * multi-valued RDNs joined by `+`, non-string values as `#<hex of their encoding>`) and first CN.
 */
export function readName(der: Uint8Array, name: DerElement): ReadName {
  if (name.tag !== Tag.SEQUENCE) throw new Error('a Name is not a SEQUENCE');
  const rdns: string[] = [];
  let commonName: string | undefined;
  for (const rdn of children(der, name)) {
    if (rdn.tag !== Tag.SET) throw new Error('a RelativeDistinguishedName is not a SET');
    const parts = children(der, rdn).map((atv) => {
      const [type, value, extra] = atv.tag === Tag.SEQUENCE ? children(der, atv) : [];
      if (type?.tag !== Tag.OID || !value || extra) throw new Error('malformed AttributeTypeAndValue');
      const typeOid = oidToString(contentsOf(der, type));
      const str = decodeString(value.tag, contentsOf(der, value));
      if (typeOid === OID_COMMON_NAME && commonName === undefined) commonName = str;
      return `${SHORT_NAMES[typeOid] ?? typeOid}=${str !== undefined ? escapeValue(str) : `#${hex(encodingOf(der, value))}`}`;
    });
    if (parts.length === 0) throw new Error('an empty RelativeDistinguishedName');
    rdns.push(parts.join('+'));
  }
  return { rfc4514: rdns.reverse().join(','), commonName };
}

/** DER Name holding one RDN, commonName as a UTF8String (RFC 5280 4.1.2.6 prefers UTF8String). */
export function encodeCommonNameDn(commonName: string): Uint8Array {
  return sequence(tlv(Tag.SET, sequence(COMMON_NAME, text(Tag.UTF8_STRING, commonName))));
}

/** RFC 4514 string of the Name {@link encodeCommonNameDn} builds for `commonName`. */
export const formatCommonNameDn = (commonName: string): string => `CN=${escapeValue(commonName)}`;

/** The subject attributes a certification request of ours carries, by their X.520 names. */
export interface SubjectAttributes {
  /** countryName: two letters (ISO 3166), a PrintableString as RFC 5280 appendix A requires. */
  readonly countryName?: string;
  /** organizationName. */
  readonly organizationName?: string;
  /** organizationalUnitName. */
  readonly organizationalUnitName?: string;
  /** commonName. */
  readonly commonName: string;
}

// Most significant first, the order a Name is encoded in (RFC 4514 writes it reversed).
const SUBJECT_ATTRIBUTE_TYPES = [
  ['countryName', '2.5.4.6'],
  ['organizationName', '2.5.4.10'],
  ['organizationalUnitName', '2.5.4.11'],
  ['commonName', OID_COMMON_NAME],
] as const;

/** DER Name of one RDN per attribute given, C, O, OU then CN; UTF8String values but the country's. */
export function encodeDistinguishedName(attributes: SubjectAttributes): Uint8Array {
  const country = attributes.countryName;
  if (country !== undefined && !/^[A-Z]{2}$/.test(country)) throw new Error(`countryName ${JSON.stringify(country)} is not two capital letters (ISO 3166)`);
  const rdns = SUBJECT_ATTRIBUTE_TYPES.flatMap(([name, type]) => {
    const value = attributes[name];
    if (value === undefined) return [];
    if (value.length === 0 || value.length > 64) throw new Error(`${name} ${JSON.stringify(value)} is not 1 to 64 characters (RFC 5280 appendix A)`);
    return [tlv(Tag.SET, sequence(oid(type), text(name === 'countryName' ? Tag.PRINTABLE_STRING : Tag.UTF8_STRING, value)))];
  });
  return sequence(...rdns);
}
