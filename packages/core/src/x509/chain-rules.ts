/**
 * The rules a certification path must pass once it is assembled (leaf, intermediates, anchor): one
 * small pure function per rule, each returning a refusal or nothing, evaluated in order by
 * verifyChain (chain.ts). Terms and checks follow RFC 5280 section 6.1 where OpenSSL does too.
 */
import type { CertificateView } from './certificate.js';
import { ExtensionId, type PathExtensions } from './extensions.js';
import { type SignatureCheck, isSignedBy } from './signature-check.js';
import { truncate, truncateList } from '../common/truncate.js';
import { type Duration, type Instant, formatDuration } from '../common/time.js';

/**
 * Why a chain is refused, first match wins; the strings are meant for logs, Events and metric
 * labels. `too_large`, `out_of_order`, `too_short` and `key_mismatch` are stricter than OpenSSL,
 * which reads any amount in any order and has no minimum; the others are refusals OpenSSL makes too.
 */
export const CHAIN_REFUSAL_REASONS = [
  'too_large',
  'malformed',
  'empty',
  'key_mismatch',
  'out_of_order',
  'missing_issuer',
  'no_anchor',
  'bad_signature',
  'critical_extension',
  'not_ca',
  'key_usage',
  'path_length',
  'name_constraints',
  'not_yet_valid',
  'expired',
  'too_short',
] as const;
/** One of {@link CHAIN_REFUSAL_REASONS}. */
export type ChainRefusalReason = (typeof CHAIN_REFUSAL_REASONS)[number];

/** A refused chain: the reason, and a sentence naming the certificate at fault (subject, serial). */
export interface ChainRefusal {
  /** Always false: the chain is refused. */
  readonly ok: false;
  /** Why, one of {@link CHAIN_REFUSAL_REASONS}. */
  readonly reason: ChainRefusalReason;
  /** A sentence for logs and Events naming the certificate at fault by subject and serial; bounded in length. */
  readonly message: string;
}

/** One certificate of an assembled path, with the extensions the rules read. */
export interface PathCertificate {
  readonly certificate: CertificateView;
  readonly extensions: PathExtensions;
}

/** An assembled path and what the rules judge it by. */
export interface PathContext {
  /** Bottom to top: the leaf when there is one, the intermediates, the anchor last. Each is signed by the next. */
  readonly path: readonly PathCertificate[];
  /** True when `path[0]` is an end-entity certificate, not a CA that will issue. */
  readonly hasLeaf: boolean;
  readonly at: Instant;
  /** Each CA of the path must stay valid this long after `at`, when set. */
  readonly minimumRemaining: Duration | undefined;
  readonly verifier: SignatureCheck;
}

/** One rule: a refusal, or undefined when the path passes it. Pure. */
export type PathRule = (ctx: PathContext) => ChainRefusal | undefined;

/** `CN=x (serial 0a1b)`: a certificate as messages name it, cut to a bounded length. */
export const describeCertificate = (c: CertificateView): string => `${truncate(c.subject || '(empty subject)')} (serial ${truncate(c.serialNumber, 64)})`;
const iso = (t: Instant): string => new Date(t).toISOString();
const refuse = (reason: ChainRefusalReason, message: string): ChainRefusal => ({ ok: false, reason, message });

/** The CAs of the path: every certificate but a leaf. */
const casOf = (ctx: PathContext): readonly PathCertificate[] => (ctx.hasLeaf ? ctx.path.slice(1) : ctx.path);

/** Extensions whose meaning the rules apply; a critical one outside this set cannot be honoured. */
const UNDERSTOOD = new Set<string>(Object.values(ExtensionId));

/** Each certificate is signed by the next (the top's signature by its anchor was checked while assembling). */
export const signatureRule: PathRule = ({ path, verifier }) => {
  for (let i = 0; i + 2 < path.length; i++) {
    const [child, parent] = [path[i]!.certificate, path[i + 1]!.certificate];
    if (!isSignedBy(child, parent, verifier))
      return refuse('bad_signature', `${describeCertificate(child)} is not signed by the key of its issuer ${describeCertificate(parent)}`);
  }
  return undefined;
};

/** RFC 5280 4.2: a certificate with a critical extension the verifier does not process is refused. */
export const criticalExtensionRule: PathRule = ({ path }) => {
  for (const { certificate, extensions } of path) {
    const unknown = extensions.critical.filter((id) => !UNDERSTOOD.has(id));
    if (unknown.length > 0)
      return refuse(
        'critical_extension',
        `${describeCertificate(certificate)} has critical extensions this verifier does not process: ${truncateList(unknown)}`,
      );
  }
  return undefined;
};

/** Every CA of the path says cA TRUE in basicConstraints. */
export const notCaRule: PathRule = (ctx) => {
  const bad = casOf(ctx).find((c) => !c.certificate.isCa);
  return bad
    ? refuse('not_ca', `${describeCertificate(bad.certificate)} is not a CA certificate (basicConstraints cA is absent or FALSE), yet it is asked to issue`)
    : undefined;
};

/** A CA with a keyUsage extension asserts keyCertSign (RFC 5280 4.2.1.3); without the extension, any use is allowed. */
export const keyUsageRule: PathRule = (ctx) => {
  const bad = casOf(ctx).find((c) => c.extensions.keyUsage !== undefined && !c.extensions.keyUsage.includes('keyCertSign'));
  return bad
    ? refuse(
        'key_usage',
        `${describeCertificate(bad.certificate)} may not sign certificates: its keyUsage is [${bad.extensions.keyUsage!.join(', ')}], without keyCertSign`,
      )
    : undefined;
};

const isSelfIssued = (c: CertificateView): boolean => c.subject === c.issuer;

/**
 * No CA has more intermediate CAs below it than its pathLenConstraint allows (RFC 5280 6.1.4 (l),
 * (m)); self-issued intermediates do not count. The anchor's constraint counts too, as in OpenSSL.
 * Without a leaf, `path[0]` is a CA that will issue leaves: it counts as an intermediate.
 */
export const pathLengthRule: PathRule = (ctx) => {
  const first = ctx.hasLeaf ? 1 : 0;
  for (let k = first; k < ctx.path.length; k++) {
    const ca = ctx.path[k]!.certificate;
    if (ca.pathLenConstraint === undefined) continue;
    const below = ctx.path.slice(first, k).filter((c) => !isSelfIssued(c.certificate));
    if (below.length > ca.pathLenConstraint) {
      return refuse(
        'path_length',
        `${describeCertificate(ca)} allows ${ca.pathLenConstraint} intermediate CAs below it (pathLenConstraint), but ${below.length} are: ${truncateList(below.map((c) => describeCertificate(c.certificate)))}`,
      );
    }
  }
  return undefined;
};

/**
 * True when `name` is within the dNSName subtree `base` (RFC 5280 4.2.1.10): equal to it, or with
 * labels added on the left. A base with a leading period matches subdomains only, as in OpenSSL and Go.
 */
export function withinDnsSubtree(name: string, base: string): boolean {
  const n = name.toLowerCase();
  const b = base.toLowerCase();
  if (b === '') return true;
  if (b.startsWith('.')) return n.length > b.length && n.endsWith(b);
  return n === b || n.endsWith(`.${b}`);
}

/** The dNSNames of every certificate below each CA satisfy its nameConstraints; constraints not understood are refused when critical. */
export const nameConstraintsRule: PathRule = ({ path }) => {
  for (let k = 1; k < path.length; k++) {
    const { certificate: ca, extensions } = path[k]!;
    const constraints = extensions.nameConstraints;
    if (constraints === undefined) continue;
    if (constraints.critical && constraints.unsupported.length > 0) {
      return refuse(
        'name_constraints',
        `${describeCertificate(ca)} has critical nameConstraints this verifier does not evaluate (${truncateList(constraints.unsupported)}); only dNSName subtrees are`,
      );
    }
    for (const { certificate } of path.slice(0, k)) {
      for (const name of certificate.dnsNames) {
        const excluded = constraints.excludedDnsNames.find((base) => withinDnsSubtree(name, base));
        if (excluded !== undefined) {
          return refuse(
            'name_constraints',
            `${describeCertificate(certificate)} names ${truncate(name)}, which ${describeCertificate(ca)} excludes (${truncate(excluded)})`,
          );
        }
        const permitted = constraints.permittedDnsNames;
        if (permitted.length > 0 && !permitted.some((base) => withinDnsSubtree(name, base))) {
          return refuse(
            'name_constraints',
            `${describeCertificate(certificate)} names ${truncate(name)}, outside the DNS names ${describeCertificate(ca)} permits: ${truncateList(permitted)}`,
          );
        }
      }
    }
  }
  return undefined;
};

/** No certificate of the path starts after `at`. */
export const notYetValidRule: PathRule = ({ path, at }) => {
  const bad = path.find((c) => at < c.certificate.notBefore);
  return bad
    ? refuse('not_yet_valid', `${describeCertificate(bad.certificate)} is not valid before ${iso(bad.certificate.notBefore)} (checked at ${iso(at)})`)
    : undefined;
};

/** No certificate of the path ended before `at`. */
export const expiredRule: PathRule = ({ path, at }) => {
  const bad = path.find((c) => at > c.certificate.notAfter);
  return bad ? refuse('expired', `${describeCertificate(bad.certificate)} expired at ${iso(bad.certificate.notAfter)} (checked at ${iso(at)})`) : undefined;
};

/** Each CA stays valid for at least the minimum asked for: a leaf never outlives its CAs, so a short CA means short leaves. */
export const tooShortRule: PathRule = (ctx) => {
  const minimum = ctx.minimumRemaining;
  if (minimum === undefined) return undefined;
  const bad = casOf(ctx).find((c) => c.certificate.notAfter - ctx.at < minimum);
  return bad
    ? refuse(
        'too_short',
        `${describeCertificate(bad.certificate)} is valid for ${formatDuration(bad.certificate.notAfter - ctx.at)} more (until ${iso(bad.certificate.notAfter)}), less than the ${formatDuration(minimum)} required`,
      )
    : undefined;
};

/** The rules, in the order they are evaluated: the first refusal wins. */
export const PATH_RULES: readonly PathRule[] = [
  signatureRule,
  criticalExtensionRule,
  notCaRule,
  keyUsageRule,
  pathLengthRule,
  nameConstraintsRule,
  notYetValidRule,
  expiredRule,
  tooShortRule,
];
