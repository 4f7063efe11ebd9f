import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { type DataProblem, MAX_CHAIN_CERTIFICATES, splitPemCertificates } from '@eso-mtls/core';
import { type TlsChainProblem, tlsChainRefusal } from './chain-check.js';
import type { MountedFileProblem } from './mounted-file.js';

/** The extended key usage a leaf must carry for its side of the connection. */
export type CertificatePurpose = 'serverAuth' | 'clientAuth';

const PURPOSE_OID: Record<CertificatePurpose, string> = {
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
};

// RFC 5280's names (section 4.2.1.12) for the purposes a reader may meet; messages use them.
const EKU_NAMES: Readonly<Record<string, string>> = {
  ...Object.fromEntries(Object.entries(PURPOSE_OID).map(([name, oid]) => [oid, name])),
  '1.3.6.1.5.5.7.3.3': 'codeSigning',
  '1.3.6.1.5.5.7.3.4': 'emailProtection',
  '1.3.6.1.5.5.7.3.8': 'timeStamping',
  '1.3.6.1.5.5.7.3.9': 'OCSPSigning',
};

/** extendedKeyUsage OIDs as messages name them: `serverAuth`, `clientAuth`, ...; an OID without a name stays dotted. */
export const extendedKeyUsageNames = (oids: readonly string[]): string[] => oids.map((oid) => EKU_NAMES[oid] ?? oid);

/** The three PEM texts of a mounted `kubernetes.io/tls` Secret with a bundle, or of a pod-certificate credential bundle split in two plus its ca.crt. */
export interface TlsMaterialPems {
  /** tls.crt: the leaf, optionally followed by intermediates. */
  readonly certificate: string;
  /** tls.key: the leaf's private key. */
  readonly privateKey: string;
  /** ca.crt: the trust bundle, one or more CA certificates (two or three during a CA rotation). */
  readonly caBundle: string;
}

/** A checked, usable set: the leaf matches its key, chains to the bundle and is valid now. */
export interface TlsMaterial extends TlsMaterialPems {
  readonly leaf: X509Certificate;
  readonly caCertificates: readonly X509Certificate[];
  /** Lower-case hex serial of the leaf. */
  readonly serialNumber: string;
  /** Leaf validity, epoch milliseconds. */
  readonly notBefore: number;
  readonly notAfter: number;
}

/**
 * Why material was refused; the reason label of failure counters and logs. What is wrong with the
 * bytes is named in the core's words (empty, missing_certificate, missing_key, garbage_pem,
 * key_mismatch, not_a_ca), as the controller names it; tls.crt may carry intermediates here, so
 * never multiple_certificates. Why the other reasons are the provider's own:
 * docs/connections-and-rotation.md, "One vocabulary with the controller".
 */
export type TlsMaterialProblem =
  | MountedFileProblem // a file could not be read, or was refused before reading (not_found, fifo, too_large, ...)
  | Exclude<DataProblem, 'multiple_certificates'>
  | 'missing_ca_bundle' // ca.crt empty
  | 'untrusted' // the leaf does not chain to a CA of ca.crt valid now
  | 'wrong_purpose' // the leaf lacks the required extendedKeyUsage
  | 'not_yet_valid'
  | 'expired'
  | TlsChainProblem; // an intermediate in tls.crt refused by the core's verifyChain: out_of_order, not_ca, path_length, ...

/** Unusable material: `reason` for counters, the message names the file and what to do. */
export class TlsMaterialError extends Error {
  override readonly name = 'TlsMaterialError';
  constructor(
    readonly reason: TlsMaterialProblem,
    message: string,
  ) {
    super(message);
  }
}

/** How {@link checkTlsMaterial} judges material. */
export interface TlsMaterialCheck {
  /** The extended key usage the leaf must carry. */
  readonly purpose: CertificatePurpose;
  /** The current time, epoch milliseconds. */
  readonly now: number;
  /** Clock difference tolerated at either end of a validity period; default 5 minutes. */
  readonly clockSkewToleranceMs?: number;
  /**
   * Require the leaf to chain to ca.crt; default true, as the core issues both from one CA. Turn
   * off only for user-supplied client material whose ca.crt trusts a different server CA.
   */
  readonly chainToBundle?: boolean;
  /** File names for messages; default tls.crt, tls.key, ca.crt. */
  readonly fileNames?: { readonly certificate: string; readonly privateKey: string; readonly caBundle: string };
}

const DEFAULT_FILE_NAMES = { certificate: 'tls.crt', privateKey: 'tls.key', caBundle: 'ca.crt' };
const DEFAULT_SKEW_MS = 5 * 60_000;

const iso = (t: number) => new Date(t).toISOString();
const describe = (c: X509Certificate) => `${c.subject.replaceAll('\n', ', ')} (serial ${c.serialNumber.toLowerCase()})`;

/** The PEM blocks of a certificate list, each with its parsed certificate. */
interface ParsedCertificates {
  readonly pems: readonly string[];
  readonly certificates: readonly X509Certificate[];
}

function parseCertificates(text: string, file: string, maxCertificates = Infinity): ParsedCertificates {
  let pems: string[];
  try {
    pems = splitPemCertificates(text);
    if (pems.length === 0) throw new Error('no CERTIFICATE block');
  } catch (e) {
    throw new TlsMaterialError('garbage_pem', `${file} is not a PEM certificate list: ${(e as Error).message}; write PEM CERTIFICATE blocks`);
  }
  // Counted before any is parsed: a flood of certificates costs nothing but the split.
  if (pems.length > maxCertificates) {
    throw new TlsMaterialError(
      'too_large',
      `${file} holds ${pems.length} certificates, over the limit of ${maxCertificates}: the leaf and at most ${maxCertificates - 1} CAs above it`,
    );
  }
  try {
    return { pems, certificates: pems.map((pem) => new X509Certificate(pem)) };
  } catch (e) {
    throw new TlsMaterialError('garbage_pem', `${file} is not a PEM certificate list: ${(e as Error).message}; write PEM CERTIFICATE blocks`);
  }
}

function parseKey(text: string, file: string): KeyObject {
  try {
    return createPrivateKey(text);
  } catch (e) {
    throw new TlsMaterialError('garbage_pem', `${file} is not a PEM private key: ${(e as Error).message}`);
  }
}

type FileNames = NonNullable<TlsMaterialCheck['fileNames']>;

const untrustedMessage = (files: FileNames, leaf: X509Certificate, cas: readonly X509Certificate[], detail = '') =>
  `${files.certificate} ${describe(leaf)} is not signed by any CA in ${files.caBundle} valid now [${cas.map(describe).join('; ')}]${detail}; was the bundle updated before the CA that signs it?`;

/**
 * Why the leaf does not chain to ca.crt, or undefined when it does. A lone leaf, today's layout,
 * is trusted when a CA of ca.crt valid now signed it, as before. A leaf with intermediates is
 * judged by the core's verifyChain (chain-check.ts) against the CAs of ca.crt valid now that
 * issued a certificate of tls.crt: the others cannot end its path, and a large bundle (a
 * ClusterTrustBundle projection) stays within verifyChain's bound on anchors.
 */
function chainProblem(
  chain: ParsedCertificates,
  cas: ParsedCertificates,
  files: FileNames,
  valid: (c: X509Certificate) => boolean,
  now: number,
  skew: number,
): TlsMaterialError | undefined {
  const leaf = chain.certificates[0]!;
  const usable = cas.certificates.map((ca, i) => ({ ca, pem: cas.pems[i]! })).filter(({ ca }) => valid(ca));
  if (chain.certificates.length === 1) {
    if (usable.some(({ ca }) => leaf.checkIssued(ca) && leaf.verify(ca.publicKey))) return undefined;
    return new TlsMaterialError('untrusted', untrustedMessage(files, leaf, cas.certificates));
  }
  const anchors = usable.filter(({ ca }) => chain.certificates.some((c) => c.checkIssued(ca)));
  const refusal = tlsChainRefusal({
    certificates: chain.pems,
    anchors: anchors.map((a) => a.pem),
    now,
    clockSkewToleranceMs: skew,
    fileNames: files,
  });
  if (refusal === undefined) return undefined;
  if (refusal.reason === 'untrusted') return new TlsMaterialError('untrusted', untrustedMessage(files, leaf, cas.certificates, `: ${refusal.message}`));
  return new TlsMaterialError(refusal.reason, `${files.certificate}, the chain of ${describe(leaf)}: ${refusal.message}`);
}

/**
 * Parses and checks `pems` the way a TLS peer will: the leaf matches its key, carries the
 * purpose's extendedKeyUsage, chains to a CA in ca.crt and is within its validity. tls.crt holds
 * the leaf alone or the leaf then its intermediates, at most `MAX_CHAIN_CERTIFICATES` in all,
 * each signed by the next and the last by a CA of ca.crt (see the core's `verifyChain`). Throws
 * {@link TlsMaterialError} naming the first problem; never returns half-checked material.
 */
export function checkTlsMaterial(pems: TlsMaterialPems, check: TlsMaterialCheck): TlsMaterial {
  const files = check.fileNames ?? DEFAULT_FILE_NAMES;
  const skew = check.clockSkewToleranceMs ?? DEFAULT_SKEW_MS;
  const { now } = check;
  const blank = (s: string) => s.trim() === '';
  if (blank(pems.certificate) && blank(pems.privateKey) && blank(pems.caBundle)) {
    throw new TlsMaterialError('empty', `${files.certificate}, ${files.privateKey} and ${files.caBundle} are all empty; the Secret has not been issued yet`);
  }
  if (blank(pems.certificate)) throw new TlsMaterialError('missing_certificate', `${files.certificate} is empty`);
  if (blank(pems.privateKey)) throw new TlsMaterialError('missing_key', `${files.privateKey} is empty`);
  if (blank(pems.caBundle)) throw new TlsMaterialError('missing_ca_bundle', `${files.caBundle} is empty; it must hold the CA certificate(s) to trust`);

  const chain = parseCertificates(pems.certificate, files.certificate, MAX_CHAIN_CERTIFICATES);
  const key = parseKey(pems.privateKey, files.privateKey);
  const parsedCas = parseCertificates(pems.caBundle, files.caBundle);
  const cas = parsedCas.certificates;
  const leaf = chain.certificates[0]!;
  if (!leaf.checkPrivateKey(key)) {
    throw new TlsMaterialError('key_mismatch', `${files.privateKey} is not the private key of ${files.certificate} ${describe(leaf)}; a half-updated pair?`);
  }
  const notCa = cas.find((c) => !c.ca);
  if (notCa) throw new TlsMaterialError('not_a_ca', `${files.caBundle} holds ${describe(notCa)}, which is not a CA certificate`);
  const usages = leaf.keyUsage ?? [];
  if (!usages.includes(PURPOSE_OID[check.purpose])) {
    throw new TlsMaterialError(
      'wrong_purpose',
      `${files.certificate} ${describe(leaf)} lacks extendedKeyUsage ${check.purpose}; it has [${extendedKeyUsageNames(usages).join(', ')}]`,
    );
  }
  const notBefore = Date.parse(leaf.validFrom);
  const notAfter = Date.parse(leaf.validTo);
  const valid = (c: X509Certificate) => Date.parse(c.validFrom) - skew <= now && now <= Date.parse(c.validTo) + skew;
  if (now < notBefore - skew) {
    throw new TlsMaterialError(
      'not_yet_valid',
      `${files.certificate} ${describe(leaf)} is valid only from ${iso(notBefore)} (now ${iso(now)}); check the clocks`,
    );
  }
  if (now > notAfter + skew) {
    throw new TlsMaterialError('expired', `${files.certificate} ${describe(leaf)} expired at ${iso(notAfter)} (now ${iso(now)})`);
  }
  const refused = (check.chainToBundle ?? true) ? chainProblem(chain, parsedCas, files, valid, now, skew) : undefined;
  if (refused) throw refused;
  return {
    ...pems,
    leaf,
    caCertificates: cas,
    serialNumber: leaf.serialNumber.toLowerCase().replace(/^(00)+(?=.)/, ''),
    notBefore,
    notAfter,
  };
}
