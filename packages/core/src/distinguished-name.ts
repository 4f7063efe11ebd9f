import type { Name } from '@peculiar/asn1-x509';
import { Tag, oid, sequence, text, tlv } from './der.js';

/** id-at-commonName. */
export const OID_COMMON_NAME = '2.5.4.3';

// RFC 4514 section 3 short names; every other attribute type is written as its dotted OID.
const SHORT_NAMES: Readonly<Record<string, string>> = {
  '2.5.4.3': 'CN', '2.5.4.6': 'C', '2.5.4.7': 'L', '2.5.4.8': 'ST', '2.5.4.9': 'STREET',
  '2.5.4.10': 'O', '2.5.4.11': 'OU', '0.9.2342.19200300.100.1.25': 'DC', '0.9.2342.19200300.100.1.1': 'UID',
};

/** RFC 4514 escaping of one attribute value. */
function escapeValue(value: string): string {
  let out = value.replace(/[\\"+,;<>]/g, (c) => `\\${c}`).replace(/\0/g, '\\00');
  if (out.startsWith('#') || out.startsWith(' ')) out = `\\${out}`;
  if (out.endsWith(' ') && out.length > 1) out = `${out.slice(0, -1)}\\ `;
  return out;
}

const hex = (bytes: ArrayBuffer): string => [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, '0')).join('');

/**
 * RFC 4514 string of a parsed Name: RDNs in reverse order, comma-separated, multi-valued RDNs
 * joined by `+`; values that are not strings are written `#<hex of their encoding>`.
 */
export function formatName(name: Name): string {
  const rdns: string[] = [];
  for (const rdn of name) {
    const parts = rdn.map((atv) => {
      const type = SHORT_NAMES[atv.type] ?? atv.type;
      const v = atv.value;
      const str = v.utf8String ?? v.printableString ?? v.ia5String ?? v.teletexString ?? v.bmpString ?? v.universalString;
      return `${type}=${str !== undefined ? escapeValue(str) : `#${v.anyValue ? hex(v.anyValue) : ''}`}`;
    });
    rdns.push(parts.join('+'));
  }
  return rdns.reverse().join(',');
}

/** First commonName value of a parsed Name, or undefined. */
export function commonNameOf(name: Name): string | undefined {
  for (const rdn of name) {
    for (const atv of rdn) {
      if (atv.type === OID_COMMON_NAME) {
        const v = atv.value;
        return v.utf8String ?? v.printableString ?? v.ia5String ?? v.teletexString ?? v.bmpString ?? v.universalString;
      }
    }
  }
  return undefined;
}

/** DER Name holding one RDN, commonName as a UTF8String (RFC 5280 4.1.2.6 prefers UTF8String). */
export function encodeCommonNameDn(commonName: string): Uint8Array {
  return sequence(tlv(Tag.SET, sequence(oid(OID_COMMON_NAME), text(Tag.UTF8_STRING, commonName))));
}

/** RFC 4514 string of the Name {@link encodeCommonNameDn} builds for `commonName`. */
export const formatCommonNameDn = (commonName: string): string => `CN=${escapeValue(commonName)}`;
