/**
 * Judges a certificate chain in tls.crt (the leaf, then intermediates, as an upstream CA hands
 * them out) against the trust anchors of ca.crt, with the core's `verifyChain`: order, signatures,
 * cA, keyUsage, pathLenConstraint, nameConstraints and validity at every link. Pure but for the
 * signature checks, which node:crypto makes.
 */
import {
  CertificateParseError,
  type CertificateView,
  type ChainRefusal,
  type ChainRefusalReason,
  parseCertificate,
  truncate,
  verifyChain,
} from '@eso-mtls/core';
import { createNodeVerifier } from '@eso-mtls/core/node';

/**
 * Why a chain in tls.crt is refused: the core's `verifyChain` reasons (`out_of_order`,
 * `missing_issuer`, `not_ca`, `path_length`, ...), under their own names, except `no_anchor`,
 * which keeps the watcher's name `untrusted` (a lone leaf under no CA of ca.crt has always been
 * called that). verifyChain is never asked for `too_short`, `empty` or `key_mismatch`: no minimum
 * validity is set, and the leaf and its key are judged before the chain.
 */
export type TlsChainProblem = Exclude<ChainRefusalReason, 'no_anchor' | 'too_short' | 'empty' | 'key_mismatch'>;

/** A refused chain: the reason, and verifyChain's sentence naming the certificate at fault. */
interface TlsChainRefusal {
  readonly reason: TlsChainProblem | 'untrusted';
  readonly message: string;
}

/** What {@link tlsChainRefusal} judges. */
interface TlsChainInput {
  /** tls.crt's certificates, PEM, leaf first, then the intermediates bottom up (a trailing anchor is allowed). */
  readonly certificates: readonly string[];
  /** The CAs of ca.crt that may end the path, PEM. */
  readonly anchors: readonly string[];
  /** The current time, epoch milliseconds. */
  readonly now: number;
  /** Clock difference tolerated at either end of a validity period. */
  readonly clockSkewToleranceMs: number;
  /** How messages name the two files. */
  readonly fileNames: { readonly certificate: string; readonly caBundle: string };
}

// One verifier for every check: it keeps the parsed public keys of the CAs, which sign every link.
const verifier = createNodeVerifier();

const TIME_REASONS: ReadonlySet<ChainRefusalReason> = new Set(['not_yet_valid', 'expired']);

/** `pems` as the core reads certificates, or the refusal naming the one it cannot read. */
function viewsOf(pems: readonly string[], what: string): CertificateView[] | TlsChainRefusal {
  try {
    return pems.map((pem) => parseCertificate(pem));
  } catch (e) {
    if (!(e instanceof CertificateParseError)) throw e;
    return { reason: 'malformed', message: `a certificate of ${what} cannot be read as X.509: ${truncate(e.message, 256)}` };
  }
}

/**
 * The instants at which the path is judged: now first, then every start or end of a certificate
 * within the skew tolerance of now, nearest first. A path valid at one of them is valid at some
 * instant within the tolerance, which is what the tolerance means for a whole path.
 */
function instantsWithinSkew(certificates: readonly CertificateView[], now: number, skew: number): number[] {
  const edges = certificates.flatMap((c) => [c.notBefore, c.notAfter]).filter((t) => t !== now && Math.abs(t - now) <= skew);
  return [now, ...[...new Set(edges)].sort((a, b) => Math.abs(a - now) - Math.abs(b - now))];
}

/** verifyChain's refusal under the watcher's name for it. */
const inWatcherTerms = (refusal: ChainRefusal): TlsChainRefusal =>
  refusal.reason === 'no_anchor' ? { reason: 'untrusted', message: refusal.message } : { reason: refusal.reason as TlsChainProblem, message: refusal.message };

/**
 * The first reason the chain is refused, or undefined when leaf → intermediates → an anchor
 * passes every rule of `verifyChain` at an instant within the skew tolerance of now. A refusal
 * for anything but validity holds at every instant and is returned at once.
 */
export function tlsChainRefusal(input: TlsChainInput): TlsChainRefusal | undefined {
  const chain = viewsOf(input.certificates, input.fileNames.certificate);
  if (!Array.isArray(chain)) return chain;
  const anchors = viewsOf(input.anchors, input.fileNames.caBundle);
  if (!Array.isArray(anchors)) return anchors;
  const [leaf, ...intermediates] = chain;
  let first: ChainRefusal | undefined;
  for (const at of instantsWithinSkew([...chain, ...anchors], input.now, input.clockSkewToleranceMs)) {
    const verdict = verifyChain({ leaf, chain: intermediates, anchors, at, verifier });
    if (verdict.ok) return undefined;
    if (!TIME_REASONS.has(verdict.reason)) return inWatcherTerms(verdict);
    first ??= verdict;
  }
  return inWatcherTerms(first!);
}
