import { Tag, children, encodingOf, readElement } from '../x509/der.js';

/**
 * The largest stub PKCS#10 request read, in bytes. A kubelet's request carries an empty subject,
 * no attributes and one key: about 1.2 KiB for RSA-4096, the largest type it makes.
 */
export const MAX_STUB_REQUEST_BYTES = 16 * 1024;

/** A stub PKCS#10 request the signer cannot read; the message says what is wrong. */
export class StubRequestError extends Error {
  /** Always `StubRequestError`. */
  override readonly name = 'StubRequestError';
}

/**
 * The DER SubjectPublicKeyInfo of a PodCertificateRequest's `spec.stubPKCS10Request` (a DER
 * CertificationRequest, RFC 2986), copied out of the request. Only the key is taken: the
 * request's subject, attributes and extensions are never read, because nothing vouches for them.
 * The signature is not checked here: kube-apiserver verifies it during validation, for every
 * creator (docs/pod-certificates-facts.md, section 3).
 */
export function stubRequestPublicKey(der: Uint8Array): Uint8Array {
  if (der.length > MAX_STUB_REQUEST_BYTES) throw new StubRequestError(`the stub request is ${der.length} bytes, over the limit of ${MAX_STUB_REQUEST_BYTES}`);
  try {
    const request = readElement(der, 0);
    if (request.tag !== Tag.SEQUENCE || request.end !== der.length) throw new StubRequestError('not one DER CertificationRequest');
    const [info] = children(der, request);
    if (info?.tag !== Tag.SEQUENCE) throw new StubRequestError('no certificationRequestInfo');
    // certificationRequestInfo: version INTEGER, subject Name, subjectPKInfo, attributes [0].
    const [version, subject, spki] = children(der, info);
    if (version?.tag !== Tag.INTEGER || subject?.tag !== Tag.SEQUENCE || spki?.tag !== Tag.SEQUENCE) {
      throw new StubRequestError('certificationRequestInfo lacks a version, subject or subjectPKInfo');
    }
    return Uint8Array.from(encodingOf(der, spki));
  } catch (e) {
    if (e instanceof StubRequestError) throw e;
    throw new StubRequestError(`not a DER CertificationRequest: ${(e as Error).message}`);
  }
}
