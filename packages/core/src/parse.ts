import { AsnParser } from '@peculiar/asn1-schema';
import {
  AuthorityKeyIdentifier, BasicConstraints, Certificate, ExtendedKeyUsage, SubjectAlternativeName, SubjectKeyIdentifier,
  id_ce_authorityKeyIdentifier, id_ce_basicConstraints, id_ce_extKeyUsage, id_ce_subjectAltName, id_ce_subjectKeyIdentifier,
  id_kp_clientAuth, id_kp_serverAuth,
} from '@peculiar/asn1-x509';
import type { CertificateView } from './certificate.js';
import { Tag, children, encodingOf, readElement } from './der.js';
import { commonNameOf, formatName } from './distinguished-name.js';
import { decodePemBlocks, encodePem } from './pem.js';

/** Raised for input that is not exactly one well-formed X.509 certificate; the message says why. */
export class CertificateParseError extends Error {
  override readonly name = 'CertificateParseError';
}

/** PEM label of an X.509 certificate (RFC 7468 section 5). */
export const CERTIFICATE_LABEL = 'CERTIFICATE';

/** Lower-case hex of `bytes`. */
export function toHex(bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes) out += (b < 16 ? '0' : '') + b.toString(16);
  return out;
}

/** Bytes of a hex string such as {@link CertificateView.subjectKeyIdentifier}. */
export function fromHex(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/** Lower-case hex of an unsigned INTEGER's contents, without leading zero octets. */
export function serialHex(contents: Uint8Array): string {
  let start = 0;
  while (start < contents.length - 1 && contents[start] === 0) start++;
  return toHex(contents.subarray(start));
}

/**
 * Splits PEM text into normalised CERTIFICATE blocks (64-column base64, `\n` line ends). Throws
 * {@link CertificateParseError} on text that is not PEM or holds any block other than a certificate.
 */
export function splitPemCertificates(text: string): string[] {
  let blocks;
  try {
    blocks = decodePemBlocks(text);
  } catch (e) {
    throw new CertificateParseError(`not PEM: ${(e as Error).message}`);
  }
  return blocks.map((block, i) => {
    if (block.label !== CERTIFICATE_LABEL) {
      throw new CertificateParseError(`PEM block ${i + 1} is a ${block.label}, where only CERTIFICATE blocks are expected`);
    }
    return encodePem(CERTIFICATE_LABEL, block.der);
  });
}

/** The canonical bundle text: each certificate's normalised PEM, concatenated in the given order. */
export function bundlePem(certificates: readonly CertificateView[]): string {
  return certificates.map((c) => c.pem).join('');
}

/**
 * Parses one certificate: PEM text holding exactly one CERTIFICATE block, or its DER bytes.
 * Throws {@link CertificateParseError} naming what is wrong.
 */
export function parseCertificate(input: string | Uint8Array): CertificateView {
  let der: Uint8Array;
  if (typeof input === 'string') {
    const pems = splitPemCertificates(input);
    if (pems.length !== 1) throw new CertificateParseError(`expected one certificate, found ${pems.length}`);
    der = decodePemBlocks(pems[0]!)[0]!.der;
  } else {
    der = input;
  }
  try {
    return viewOf(der);
  } catch (e) {
    throw new CertificateParseError(`not a well-formed X.509 certificate: ${(e as Error).message}`);
  }
}

const EKU_NAMES: Readonly<Record<string, string>> = { [id_kp_serverAuth]: 'serverAuth', [id_kp_clientAuth]: 'clientAuth' };

function viewOf(der: Uint8Array): CertificateView {
  // Raw slices come from the DER itself: re-serialising parsed objects need not give the signed bytes back.
  const outer = readElement(der, 0);
  if (outer.tag !== Tag.SEQUENCE || outer.end !== der.length) {
    throw new Error(outer.tag !== Tag.SEQUENCE ? 'does not start with a SEQUENCE' : `${der.length - outer.end} bytes of trailing data`);
  }
  const [tbsElement] = children(der, outer);
  if (tbsElement?.tag !== Tag.SEQUENCE) throw new Error('has no TBSCertificate');
  const tbsFields = children(der, tbsElement);
  const versioned = tbsFields[0]?.tag === 0xa0 ? 1 : 0;
  const spkiElement = tbsFields[versioned + 5];
  if (spkiElement?.tag !== Tag.SEQUENCE) throw new Error('has no subjectPublicKeyInfo');

  const cert = AsnParser.parse(der, Certificate);
  const tbs = cert.tbsCertificate;
  let isCa = false;
  let pathLenConstraint: number | undefined;
  let subjectKeyIdentifier: string | undefined;
  let authorityKeyIdentifier: string | undefined;
  const dnsNames: string[] = [];
  const uris: string[] = [];
  const extendedKeyUsage: string[] = [];
  const seen = new Set<string>();
  for (const ext of tbs.extensions ?? []) {
    // RFC 5280 4.2: a certificate must not include more than one instance of an extension.
    if (seen.has(ext.extnID)) throw new Error(`extension ${ext.extnID} appears twice`);
    seen.add(ext.extnID);
    const value = ext.extnValue.buffer;
    switch (ext.extnID) {
      case id_ce_basicConstraints: {
        const bc = AsnParser.parse(value, BasicConstraints);
        isCa = bc.cA;
        pathLenConstraint = bc.pathLenConstraint;
        break;
      }
      case id_ce_subjectKeyIdentifier:
        subjectKeyIdentifier = toHex(new Uint8Array(AsnParser.parse(value, SubjectKeyIdentifier).buffer));
        break;
      case id_ce_authorityKeyIdentifier: {
        const aki = AsnParser.parse(value, AuthorityKeyIdentifier);
        if (aki.keyIdentifier) authorityKeyIdentifier = toHex(new Uint8Array(aki.keyIdentifier.buffer));
        break;
      }
      case id_ce_subjectAltName:
        for (const name of AsnParser.parse(value, SubjectAlternativeName)) {
          if (name.dNSName !== undefined) dnsNames.push(name.dNSName);
          if (name.uniformResourceIdentifier !== undefined) uris.push(name.uniformResourceIdentifier);
        }
        break;
      case id_ce_extKeyUsage:
        for (const purpose of AsnParser.parse(value, ExtendedKeyUsage)) extendedKeyUsage.push(EKU_NAMES[purpose] ?? purpose);
        break;
    }
  }
  const notBefore = tbs.validity.notBefore.getTime().getTime();
  const notAfter = tbs.validity.notAfter.getTime().getTime();
  if (!Number.isFinite(notBefore) || !Number.isFinite(notAfter)) throw new Error('has an unreadable validity time');
  return Object.freeze({
    pem: encodePem(CERTIFICATE_LABEL, der),
    der,
    serialNumber: serialHex(new Uint8Array(tbs.serialNumber)),
    subject: formatName(tbs.subject),
    issuer: formatName(tbs.issuer),
    subjectCommonName: commonNameOf(tbs.subject),
    notBefore,
    notAfter,
    isCa,
    pathLenConstraint,
    dnsNames,
    uris,
    extendedKeyUsage,
    subjectKeyIdentifier,
    authorityKeyIdentifier,
    subjectPublicKeyInfo: encodingOf(der, spkiElement),
    tbsCertificate: encodingOf(der, tbsElement),
    signatureAlgorithm: cert.signatureAlgorithm.algorithm,
    signatureValue: new Uint8Array(cert.signatureValue),
  });
}
