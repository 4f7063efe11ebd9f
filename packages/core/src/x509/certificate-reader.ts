/**
 * Reads an X.509 certificate (RFC 5280 section 4.1) straight from its DER into a
 * {@link CertificateView}. A schema-driven parser (@peculiar/asn1-schema) took ~0.3-0.7 ms per
 * certificate here, which a controller pays for every Secret of every namespace at start-up;
 * reading only the fields the view needs is some thirty times faster. Every read is
 * bounds-checked; anything malformed throws, and parseCertificate turns that into a
 * CertificateParseError.
 */
import type { CertificateView } from './certificate.js';
import { type DerElement, Tag, children, contentsOf, encodingOf, equalBytes, oidToString, readElement, toHex } from './der.js';
import { ExtensionId, readBasicConstraints, readExtensions, single, want } from './extensions.js';
import { decodeString, readName } from './distinguished-name.js';
import { truncate } from '../common/truncate.js';

const EKU_NAMES: Readonly<Record<string, string>> = { '1.3.6.1.5.5.7.3.1': 'serverAuth', '1.3.6.1.5.5.7.3.2': 'clientAuth' };

/** UTCTime (YYMMDDHHMMSSZ) or GeneralizedTime (YYYYMMDDHHMMSSZ), as RFC 5280 4.1.2.5 restricts them. */
function readTime(der: Uint8Array, e: DerElement | undefined, what: string): number {
  // A time is 15 characters: the first 41 are enough to reject and show a long value, never spread whole.
  const s = e ? String.fromCharCode(...contentsOf(der, e).subarray(0, 41)) : '';
  const m =
    e?.tag === Tag.UTC_TIME
      ? /^(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(s)
      : e?.tag === Tag.GENERALIZED_TIME
        ? /^(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(s)
        : null;
  if (!m) throw new Error(`${what} ${JSON.stringify(truncate(s, 40))} is not an RFC 5280 time`);
  let year = Number(m[1]);
  if (e!.tag === Tag.UTC_TIME) year += year < 50 ? 2000 : 1900;
  const [month, day, hour, minute, second] = m.slice(2).map(Number) as [number, number, number, number, number];
  const t = Date.UTC(year, month - 1, day, hour, minute, second);
  const d = new Date(t);
  if (d.getUTCMonth() !== month - 1 || d.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59) {
    throw new Error(`${what} ${JSON.stringify(truncate(s, 40))} is not a valid date`);
  }
  return t;
}

/** The mutable parts of a view that the extensions fill in. */
interface ExtensionFields {
  isCa: boolean;
  pathLenConstraint: number | undefined;
  subjectKeyIdentifier: string | undefined;
  authorityKeyIdentifier: string | undefined;
  readonly dnsNames: string[];
  readonly uris: string[];
  readonly extendedKeyUsage: string[];
}

function readExtension(id: string, value: Uint8Array, out: ExtensionFields): void {
  switch (id) {
    case ExtensionId.basicConstraints:
      Object.assign(out, readBasicConstraints(value));
      break;
    case ExtensionId.subjectKeyIdentifier:
      out.subjectKeyIdentifier = toHex(contentsOf(value, want(single(value, 'subjectKeyIdentifier'), Tag.OCTET_STRING, 'subjectKeyIdentifier')));
      break;
    case ExtensionId.authorityKeyIdentifier: {
      const keyId = children(value, want(single(value, 'authorityKeyIdentifier'), Tag.SEQUENCE, 'authorityKeyIdentifier')).find((e) => e.tag === 0x80);
      if (keyId) out.authorityKeyIdentifier = toHex(contentsOf(value, keyId));
      break;
    }
    case ExtensionId.subjectAltName:
      for (const name of children(value, want(single(value, 'subjectAltName'), Tag.SEQUENCE, 'subjectAltName'))) {
        if (name.tag === 0x82) out.dnsNames.push(decodeString(Tag.IA5_STRING, contentsOf(value, name))!);
        if (name.tag === 0x86) out.uris.push(decodeString(Tag.IA5_STRING, contentsOf(value, name))!);
      }
      break;
    case ExtensionId.extKeyUsage:
      for (const purpose of children(value, want(single(value, 'extendedKeyUsage'), Tag.SEQUENCE, 'extendedKeyUsage'))) {
        const dotted = oidToString(contentsOf(value, want(purpose, Tag.OID, 'a KeyPurposeId')));
        out.extendedKeyUsage.push(EKU_NAMES[dotted] ?? dotted);
      }
      break;
  }
}

/** Reads every field of a {@link CertificateView} but `pem` from one DER certificate. */
export function readCertificate(der: Uint8Array): Omit<CertificateView, 'pem'> {
  const outer = readElement(der, 0);
  if (outer.tag !== Tag.SEQUENCE) throw new Error('does not start with a SEQUENCE');
  if (outer.end !== der.length) throw new Error(`${der.length - outer.end} bytes of trailing data`);
  const [tbsElement, sigAlg, sigValue, extra] = children(der, outer);
  if (extra) throw new Error('has more than three top-level fields');
  const tbs = want(tbsElement, Tag.SEQUENCE, 'tbsCertificate');
  const signatureAlgorithm = oidToString(
    contentsOf(der, want(children(der, want(sigAlg, Tag.SEQUENCE, 'signatureAlgorithm'))[0], Tag.OID, 'signatureAlgorithm')),
  );
  const bits = contentsOf(der, want(sigValue, Tag.BIT_STRING, 'signatureValue'));
  if (bits[0] !== 0) throw new Error('signatureValue has unused bits');

  const fields = children(der, tbs);
  let i = fields[0]?.tag === 0xa0 ? 1 : 0;
  const serial = contentsOf(der, want(fields[i++], Tag.INTEGER, 'serialNumber'));
  // RFC 5280 4.1.1.2: the same AlgorithmIdentifier inside and outside the signed part; OpenSSL
  // refuses to verify a certificate whose two differ, so we must not call it signed either.
  if (!equalBytes(encodingOf(der, want(fields[i++], Tag.SEQUENCE, 'signature')), encodingOf(der, sigAlg!))) {
    throw new Error('signatureAlgorithm differs from the signature field of tbsCertificate');
  }
  const issuer = readName(der, want(fields[i++], Tag.SEQUENCE, 'issuer'));
  const validity = children(der, want(fields[i++], Tag.SEQUENCE, 'validity'));
  const subject = readName(der, want(fields[i++], Tag.SEQUENCE, 'subject'));
  const spki = want(fields[i++], Tag.SEQUENCE, 'subjectPublicKeyInfo');

  const ext: ExtensionFields = {
    isCa: false,
    pathLenConstraint: undefined,
    subjectKeyIdentifier: undefined,
    authorityKeyIdentifier: undefined,
    dnsNames: [],
    uris: [],
    extendedKeyUsage: [],
  };
  const extensions = fields.slice(i).find((f) => f.tag === 0xa3);
  if (extensions) {
    for (const { extnID, extnValue } of readExtensions(der, children(der, extensions)[0])) readExtension(extnID, extnValue, ext);
  }
  return {
    der,
    serialNumber: serialHex(serial),
    subject: subject.rfc4514,
    issuer: issuer.rfc4514,
    subjectCommonName: subject.commonName,
    notBefore: readTime(der, validity[0], 'notBefore'),
    notAfter: readTime(der, validity[1], 'notAfter'),
    ...ext,
    subjectPublicKeyInfo: encodingOf(der, spki),
    tbsCertificate: encodingOf(der, tbs),
    signatureAlgorithm,
    signatureValue: bits.subarray(1),
  };
}

/** Lower-case hex of an unsigned INTEGER's contents, without leading zero octets. */
export function serialHex(contents: Uint8Array): string {
  let start = 0;
  while (start < contents.length - 1 && contents[start] === 0) start++;
  return toHex(contents.subarray(start));
}
