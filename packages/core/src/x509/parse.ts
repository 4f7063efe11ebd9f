import type { CertificateView } from './certificate.js';
import { readCertificate } from './certificate-reader.js';
import { decodePemBlocks, encodePem } from './pem.js';

/** Raised for input that is not exactly one well-formed X.509 certificate; the message says why. */
export class CertificateParseError extends Error {
  /** Always `CertificateParseError`. */
  override readonly name = 'CertificateParseError';
}

/** PEM label of an X.509 certificate (RFC 7468 section 5). */
export const CERTIFICATE_LABEL = 'CERTIFICATE';

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
    return Object.freeze({ pem: encodePem(CERTIFICATE_LABEL, der), ...readCertificate(der) });
  } catch (e) {
    throw new CertificateParseError(`not a well-formed X.509 certificate: ${(e as Error).message}`);
  }
}
