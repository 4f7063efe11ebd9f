/**
 * PKCS#10 CertificationRequest (RFC 2986) for a CA key: what the controller sends an upstream PKI
 * (cert-manager's CertificateRequest) to have its intermediate signed. Built like a TBSCertificate
 * (tbs.ts) and signed through a callback, so a key held in an HSM signs it where it lives. A small
 * reader parses one back.
 */
import { type DerElement, Tag, bitString, children, contentsOf, encodingOf, oid, oidToString, sequence, smallInteger, tlv, toHex } from './der.js';
import { type SubjectAttributes, encodeDistinguishedName, readName } from './distinguished-name.js';
import { type Extension, ExtensionId, type KeyUsageName, readBasicConstraints, readExtensions, readKeyUsage, single, want } from './extensions.js';
import { decodePemBlocks, encodePem } from './pem.js';
import type { SignatureCheck } from './signature-check.js';
import { KeyUsage, basicConstraintsExtension, keyIdentifier, keyUsageExtension, signatureAlgorithmFor, subjectKeyIdentifierExtension } from './tbs.js';

/** PEM label of a PKCS#10 request (RFC 7468 section 7). */
export const CERTIFICATE_REQUEST_LABEL = 'CERTIFICATE REQUEST';
/** PKCS#9 extensionRequest: the attribute carrying the extensions a request asks for. */
const OID_EXTENSION_REQUEST = '1.2.840.113549.1.9.14';

/** What a CA's certification request says, and how it is signed. */
export interface CaRequestOptions {
  /** The subject Name asked for, e.g. `{ organizationName: 'Acme', commonName: 'eso-mtls provider CA intermediate' }`. */
  readonly subject: SubjectAttributes;
  /** DER SubjectPublicKeyInfo of the CA key (ECDSA or RSA). */
  readonly subjectPublicKeyInfo: Uint8Array;
  /**
   * basicConstraints pathLenConstraint to ask for. Default 0: the intermediate signs only leaves.
   * `null` asks for none.
   */
  readonly pathLenConstraint?: number | null;
  /**
   * Signs `data` with the private half of `subjectPublicKeyInfo`, over SHA-256, returning the
   * signature as X.509 places it: `(data) => signer.sign(privateKeyPem, data)`, or a CaSigner's
   * `sign` with a `pkcs11:` reference for a key in an HSM.
   */
  readonly sign: (data: Uint8Array) => Promise<Uint8Array>;
}

/** An encoded certification request. */
export interface CertificationRequest {
  /** DER CertificationRequest. */
  readonly der: Uint8Array;
  /** The same as `CERTIFICATE REQUEST` PEM. */
  readonly pem: string;
}

/**
 * A signed PKCS#10 request for a CA certificate: the subject, the key, and an extensionRequest
 * for basicConstraints cA TRUE (critical, pathLenConstraint 0 by default), keyUsage
 * digitalSignature, keyCertSign and cRLSign (critical) and the subjectKeyIdentifier (RFC 7093
 * method 1, as our own CAs carry). Signed with ecdsa-with-SHA256 or sha256WithRSAEncryption as the
 * key's family decides.
 */
export async function encodeCaCertificationRequest(options: CaRequestOptions): Promise<CertificationRequest> {
  const { subjectPublicKeyInfo } = options;
  const algorithm = signatureAlgorithmFor(subjectPublicKeyInfo);
  const pathLen = options.pathLenConstraint === undefined ? 0 : (options.pathLenConstraint ?? undefined);
  const extensions = sequence(
    basicConstraintsExtension({ pathLen }),
    keyUsageExtension([KeyUsage.digitalSignature, KeyUsage.keyCertSign, KeyUsage.cRLSign]),
    subjectKeyIdentifierExtension(keyIdentifier(subjectPublicKeyInfo)),
  );
  const extensionRequest = sequence(oid(OID_EXTENSION_REQUEST), tlv(Tag.SET, extensions));
  // attributes [0] IMPLICIT SET OF Attribute: the constructed context tag replaces the SET's.
  const info = sequence(smallInteger(0), encodeDistinguishedName(options.subject), subjectPublicKeyInfo, tlv(0xa0, extensionRequest));
  const signature = await options.sign(info);
  const der = sequence(info, algorithm.der, bitString(signature));
  return { der, pem: encodePem(CERTIFICATE_REQUEST_LABEL, der) };
}

/** Raised for input that is not one well-formed PKCS#10 request; the message says why. */
export class CertificationRequestError extends Error {
  /** Always `CertificationRequestError`. */
  override readonly name = 'CertificationRequestError';
}

/** A certification request as read back: the fields a CA checks before signing one. */
export interface CertificationRequestView {
  /** The request's DER. */
  readonly der: Uint8Array;
  /** RFC 4514 string of the subject. */
  readonly subject: string;
  /** The subject's commonName, if any. */
  readonly subjectCommonName: string | undefined;
  /** DER SubjectPublicKeyInfo. */
  readonly subjectPublicKeyInfo: Uint8Array;
  /** The extensions of the extensionRequest attribute, in order; none without one. */
  readonly extensions: readonly Extension[];
  /** basicConstraints cA asked for; false without the extension. */
  readonly isCa: boolean;
  /** basicConstraints pathLenConstraint asked for, if any. */
  readonly pathLenConstraint: number | undefined;
  /** keyUsage asked for, when the extension is present. */
  readonly keyUsage: readonly KeyUsageName[] | undefined;
  /** Lower-case hex of the subjectKeyIdentifier asked for, if any. */
  readonly subjectKeyIdentifier: string | undefined;
  /** DER of the signed certificationRequestInfo. */
  readonly certificationRequestInfo: Uint8Array;
  /** Dotted OID of the signatureAlgorithm. */
  readonly signatureAlgorithm: string;
  /** The signature bits. */
  readonly signatureValue: Uint8Array;
}

/** The extensions of the extensionRequest attribute among `attributes` ([0] of certificationRequestInfo). */
function requestedExtensions(der: Uint8Array, attributes: DerElement | undefined): Extension[] {
  if (attributes === undefined) return [];
  for (const attribute of children(der, want(attributes, 0xa0, 'attributes'))) {
    const [type, values] = children(der, want(attribute, Tag.SEQUENCE, 'an Attribute'));
    if (oidToString(contentsOf(der, want(type, Tag.OID, 'an Attribute type'))) !== OID_EXTENSION_REQUEST) continue;
    const [extensions, extra] = children(der, want(values, Tag.SET, 'the extensionRequest values'));
    if (extra) throw new Error('extensionRequest holds more than one value');
    return readExtensions(der, extensions);
  }
  return [];
}

/** Reads a PKCS#10 request: PEM holding one CERTIFICATE REQUEST block, or its DER. Throws {@link CertificationRequestError}. */
export function readCertificationRequest(input: string | Uint8Array): CertificationRequestView {
  try {
    let der = input as Uint8Array;
    if (typeof input === 'string') {
      const blocks = decodePemBlocks(input);
      if (blocks.length !== 1 || blocks[0]!.label !== CERTIFICATE_REQUEST_LABEL) throw new Error(`expected one ${CERTIFICATE_REQUEST_LABEL} PEM block`);
      der = blocks[0]!.der;
    }
    const outer = single(der, 'the CertificationRequest');
    const [infoElement, sigAlg, sigValue] = children(der, want(outer, Tag.SEQUENCE, 'the CertificationRequest'));
    const info = want(infoElement, Tag.SEQUENCE, 'certificationRequestInfo');
    const [version, subjectElement, spki, attributes] = children(der, info);
    if (contentsOf(der, want(version, Tag.INTEGER, 'version'))[0] !== 0) throw new Error('version is not v1 (0)');
    const subject = readName(der, want(subjectElement, Tag.SEQUENCE, 'subject'));
    const bits = contentsOf(der, want(sigValue, Tag.BIT_STRING, 'signature'));
    if (bits[0] !== 0) throw new Error('the signature has unused bits');
    const extensions = requestedExtensions(der, attributes);
    const value = (id: string): Uint8Array | undefined => extensions.find((e) => e.extnID === id)?.extnValue;
    const basicConstraints = value(ExtensionId.basicConstraints);
    const keyUsage = value(ExtensionId.keyUsage);
    const ski = value(ExtensionId.subjectKeyIdentifier);
    return {
      der,
      subject: subject.rfc4514,
      subjectCommonName: subject.commonName,
      subjectPublicKeyInfo: encodingOf(der, want(spki, Tag.SEQUENCE, 'subjectPKInfo')),
      extensions,
      ...(basicConstraints ? readBasicConstraints(basicConstraints) : { isCa: false, pathLenConstraint: undefined }),
      keyUsage: keyUsage ? readKeyUsage(keyUsage) : undefined,
      subjectKeyIdentifier: ski ? toHex(contentsOf(ski, want(single(ski, 'subjectKeyIdentifier'), Tag.OCTET_STRING, 'subjectKeyIdentifier'))) : undefined,
      certificationRequestInfo: encodingOf(der, info),
      signatureAlgorithm: oidToString(contentsOf(der, want(children(der, want(sigAlg, Tag.SEQUENCE, 'signatureAlgorithm'))[0], Tag.OID, 'signatureAlgorithm'))),
      signatureValue: bits.subarray(1),
    };
  } catch (e) {
    throw new CertificationRequestError(`not a well-formed PKCS#10 certification request: ${(e as Error).message}`);
  }
}

/** True when the request is signed by the private half of the key it carries (proof of possession). */
export const isCertificationRequestSigned = (request: CertificationRequestView, check: SignatureCheck): boolean =>
  check.verify(request.subjectPublicKeyInfo, request.signatureAlgorithm, request.certificationRequestInfo, request.signatureValue);
