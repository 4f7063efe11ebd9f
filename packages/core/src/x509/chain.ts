/**
 * Verifies a certification path handed over by an upstream PKI: leaf → intermediates → one of the
 * organisation's trust anchors. The chain must come in order, each certificate followed by its
 * issuer, as a TLS 1.2 peer expects the bundle we later serve. Assembling the path refuses a chain
 * that is too large, broken, out of order or under no anchor; the rules of chain-rules.ts judge
 * the assembled path.
 */
import type { CertificateView } from './certificate.js';
import { type ChainRefusal, PATH_RULES, type PathCertificate, describeCertificate } from './chain-rules.js';
import { equalBytes } from './der.js';
import { pathExtensionsOf } from './extensions.js';
import { CertificateParseError, parseCertificate, splitPemCertificates } from './parse.js';
import { type SignatureCheck, isSignedBy } from './signature-check.js';
import { truncate } from '../common/truncate.js';
import type { Duration, Instant } from '../common/time.js';

/**
 * The most certificates of a chain, leaf included. An organisation's path is root, a policy CA or
 * two, an issuing CA and our intermediate: eight leaves room and stops a flood early.
 */
export const MAX_CHAIN_CERTIFICATES = 8;
/** The most trust anchors: a bundle of an organisation's roots, old and new. */
export const MAX_ANCHOR_CERTIFICATES = 32;
/**
 * The most PEM bytes of a chain, and of the anchors. The leaf and the intermediates travel in one
 * TLS Certificate message, which OpenSSL and Node cap at 100 KiB (docs/x509.md); the
 * pod-certificate API caps a chain at 100 KiB of PEM.
 */
export const MAX_CHAIN_PEM_BYTES = 100 * 1024;

/** What {@link verifyChain} checks. */
export interface ChainInput {
  /** An end-entity certificate issued by `chain[0]`, checked with the chain when given. */
  readonly leaf?: CertificateView;
  /**
   * The CA certificates, bottom up, each signed by the next; the last is signed by an anchor, or is
   * one (a bundle may end with its root). Without a leaf, `chain[0]` is the CA that will issue.
   */
  readonly chain: readonly CertificateView[];
  /** The trust anchors: the organisation's roots. */
  readonly anchors: readonly CertificateView[];
  /** The instant every certificate must be valid at. */
  readonly at: Instant;
  /** Checks signatures; a `SignatureVerifier` is one. */
  readonly verifier: SignatureCheck;
  /** When set, every CA of the path must stay valid this long after `at` (refused as `too_short`). */
  readonly minimumRemaining?: Duration;
  /** When set, `chain[0]` must certify this public key (DER SubjectPublicKeyInfo): the one whose request was sent. */
  readonly subjectPublicKeyInfo?: Uint8Array;
}

/** A path that passed every rule. */
export interface VerifiedChain {
  /** Always true: every rule passed. */
  readonly ok: true;
  /** Bottom to top: the leaf if given, the intermediates, and the anchor that signs them. */
  readonly path: readonly CertificateView[];
  /** The anchor the path ends at. */
  readonly anchor: CertificateView;
  /** The earliest notAfter of the path's CAs: a leaf issued under it must end by then (see {@link clampNotAfter}). */
  readonly notAfter: Instant;
}

/** What {@link verifyChain} returns. */
export type ChainVerification = VerifiedChain | ChainRefusal;

const refuse = (reason: ChainRefusal['reason'], message: string): ChainRefusal => ({ ok: false, reason, message });
const pemBytes = (certificates: readonly CertificateView[]): number => certificates.reduce((n, c) => n + c.pem.length, 0);

/** The bound on the certificates of the chain and of the anchors, by count and PEM bytes. */
function sizeRefusal(input: ChainInput): ChainRefusal | undefined {
  const chain = input.leaf ? [input.leaf, ...input.chain] : input.chain;
  if (chain.length > MAX_CHAIN_CERTIFICATES)
    return refuse('too_large', `the chain holds ${chain.length} certificates, over the limit of ${MAX_CHAIN_CERTIFICATES}`);
  if (input.anchors.length > MAX_ANCHOR_CERTIFICATES) {
    return refuse('too_large', `${input.anchors.length} trust anchors are given, over the limit of ${MAX_ANCHOR_CERTIFICATES}`);
  }
  for (const [what, certificates] of [
    ['the chain', chain],
    ['the trust anchors', input.anchors],
  ] as const) {
    const bytes = pemBytes(certificates);
    if (bytes > MAX_CHAIN_PEM_BYTES) return refuse('too_large', `${what} take ${bytes} bytes of PEM, over the limit of ${MAX_CHAIN_PEM_BYTES}`);
  }
  return undefined;
}

/** True when `parent`'s name (and key identifier, when both carry one) is the issuer `child` names. */
function namesIssuer(child: CertificateView, parent: CertificateView): boolean {
  if (child.issuer !== parent.subject) return false;
  const aki = child.authorityKeyIdentifier;
  const ski = parent.subjectKeyIdentifier;
  return aki === undefined || ski === undefined || aki === ski;
}

/** Each certificate is followed by its issuer: refuses the first that is not, saying whether its issuer is elsewhere or absent. */
function linkRefusal(certificates: readonly CertificateView[]): ChainRefusal | undefined {
  for (let i = 0; i + 1 < certificates.length; i++) {
    const [child, next] = [certificates[i]!, certificates[i + 1]!];
    if (namesIssuer(child, next)) continue;
    const at = certificates.findIndex((c, j) => j !== i && namesIssuer(child, c));
    if (at >= 0) {
      return refuse(
        'out_of_order',
        `${describeCertificate(child)} is issued by ${describeCertificate(certificates[at]!)}, certificate ${at + 1} of the chain, not by the next one, ${describeCertificate(next)}: the chain must run bottom up, each certificate followed by its issuer`,
      );
    }
    return refuse(
      'missing_issuer',
      `${describeCertificate(child)} is issued by ${truncate(child.issuer)}, which is not the next certificate, ${describeCertificate(next)}, nor any in the chain`,
    );
  }
  return undefined;
}

/** The anchor whose key signed `top`, or why there is none. */
function anchorOf(top: CertificateView, anchors: readonly CertificateView[], verifier: SignatureCheck): CertificateView | ChainRefusal {
  const anchor = anchors.find((a) => namesIssuer(top, a) && isSignedBy(top, a, verifier));
  if (anchor) return anchor;
  const sameName = anchors.find((a) => a.subject === top.issuer);
  if (sameName) {
    return refuse(
      'no_anchor',
      `${describeCertificate(top)} is issued by ${truncate(top.issuer)}: the trust anchor ${describeCertificate(sameName)} has the name ${truncate(sameName.subject)} but not the key that signed it`,
    );
  }
  const selfSigned = top.subject === top.issuer ? ', and is self-signed' : '';
  return refuse(
    'no_anchor',
    `${describeCertificate(top)} is issued by ${truncate(top.issuer)}, which is none of the ${anchors.length} trust anchors${selfSigned}`,
  );
}

/**
 * Verifies leaf → intermediates → anchor at `at`: sizes, order, the anchor, then each rule of
 * chain-rules.ts (signatures, critical extensions, cA, keyUsage, pathLenConstraint,
 * nameConstraints, validity, the minimum remaining validity). Returns the path, or the first
 * refusal with its reason and a message naming the certificate at fault. Never throws on a
 * certificate's content; pure.
 */
export function verifyChain(input: ChainInput): ChainVerification {
  const tooLarge = sizeRefusal(input);
  if (tooLarge) return tooLarge;
  if (input.chain.length === 0 && input.leaf === undefined) return refuse('empty', 'the chain holds no certificate');
  const first = input.chain[0];
  if (input.subjectPublicKeyInfo !== undefined && (first === undefined || !equalBytes(first.subjectPublicKeyInfo, input.subjectPublicKeyInfo))) {
    const which = first ? describeCertificate(first) : 'no CA certificate';
    return refuse('key_mismatch', `${which} does not certify the key that was asked for: its public key is another`);
  }
  // A bundle may end with its root; when that root is an anchor, it is the anchor.
  const last = input.chain.at(-1);
  const endsWithAnchor = last !== undefined && input.anchors.some((a) => equalBytes(a.der, last.der));
  const chain = endsWithAnchor ? input.chain.slice(0, -1) : input.chain;
  const certificates = input.leaf ? [input.leaf, ...chain] : chain;
  if (certificates.length === 0) return refuse('empty', `the chain holds only the trust anchor ${describeCertificate(last!)}, no CA below it`);
  const broken = linkRefusal(certificates);
  if (broken) return broken;
  const anchor = anchorOf(certificates.at(-1)!, input.anchors, input.verifier);
  if ('ok' in anchor) return anchor;

  const path = [...certificates, anchor];
  let assembled: PathCertificate[];
  try {
    assembled = path.map((certificate) => ({ certificate, extensions: pathExtensionsOf(certificate) }));
  } catch (e) {
    return refuse('malformed', `a certificate of the chain has a malformed extension: ${truncate((e as Error).message)}`);
  }
  const ctx = { path: assembled, hasLeaf: input.leaf !== undefined, at: input.at, minimumRemaining: input.minimumRemaining, verifier: input.verifier };
  for (const rule of PATH_RULES) {
    const refusal = rule(ctx);
    if (refusal) return refusal;
  }
  return { ok: true, path, anchor, notAfter: chainNotAfter(input.leaf ? path.slice(1) : path) };
}

/** The earliest notAfter of `certificates`: when the first of them ends. */
export function chainNotAfter(certificates: readonly CertificateView[]): Instant {
  return Math.min(...certificates.map((c) => c.notAfter));
}

/**
 * A leaf never outlives its CAs: `requested` cut to the earliest notAfter along `chain`. Rotation
 * lookahead then counts from the clamped time, the shorter of the two.
 */
export function clampNotAfter(requested: Instant, chain: readonly CertificateView[]): Instant {
  return Math.min(requested, chainNotAfter(chain));
}

/** PEM read into certificates, or refused before any parsing when over the bounds. */
export type ChainPemReading = { readonly ok: true; readonly certificates: readonly CertificateView[] } | ChainRefusal;

/**
 * Reads a PEM bundle from an upstream (a chain, or anchors) into certificates, in order. Text over
 * {@link MAX_CHAIN_PEM_BYTES} or holding over `maxCertificates` blocks is refused as `too_large`
 * before it is parsed; text that is not certificates as `malformed`.
 */
export function readChainPem(text: string, maxCertificates: number = MAX_CHAIN_CERTIFICATES): ChainPemReading {
  if (text.length > MAX_CHAIN_PEM_BYTES) return refuse('too_large', `the PEM is ${text.length} bytes, over the limit of ${MAX_CHAIN_PEM_BYTES}`);
  try {
    const pems = splitPemCertificates(text);
    if (pems.length > maxCertificates) return refuse('too_large', `the PEM holds ${pems.length} certificates, over the limit of ${maxCertificates}`);
    return { ok: true, certificates: pems.map((pem) => parseCertificate(pem)) };
  } catch (e) {
    if (!(e instanceof CertificateParseError)) throw e;
    return refuse('malformed', truncate(e.message, 256));
  }
}
