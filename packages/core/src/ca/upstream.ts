import type { CertificateCache } from '../crypto/cache.js';
import { type Duration, type Instant, formatDuration } from '../common/time.js';
import { truncate } from '../common/truncate.js';
import type { ChainRefusalReason } from '../x509/chain-rules.js';
import { MAX_ANCHOR_CERTIFICATES, readChainPem, verifyChain } from '../x509/chain.js';
import type { CertificateView, KeyedCertificate } from '../x509/certificate.js';
import type { SecretData } from '../secret/observe.js';
import type { CaRequestObservation, UpstreamObservation, UpstreamText } from '../secret/upstream-observation.js';
import { textOf } from '../x509/pem.js';

/*
 * An upstream CA source (docs/chaining-to-your-pki.md): the organisation's PKI gives the
 * intermediate that signs, through a cert-manager issuer or a Secret the user maintains, and the
 * user names the trust anchors it must chain to. The adapter reads the objects, bounded in size;
 * this file judges what they hold, purely: a verified intermediate on offer, or why not.
 */

/** Why the upstream gives no usable intermediate, or warns; the `reason` label of `eso_ca_upstream_problem`. */
export type UpstreamProblemReason =
  | ChainRefusalReason
  | 'anchors_unreadable'
  | 'source_unreadable'
  | 'issuer_missing'
  | 'issuer_not_ready'
  | 'request_denied'
  | 'request_failed'
  | 'request_overdue'
  | 'renewal_overdue'
  | 'status_ca_mismatch';

/** One standing upstream problem. */
export interface UpstreamProblem {
  /** Why, one of {@link UpstreamProblemReason}: the metric's and the Event's reason. */
  readonly reason: UpstreamProblemReason;
  /** A sentence naming the object and the fault, bounded. */
  readonly message: string;
}

/** What the CA phases read of the upstream. */
export interface UpstreamReading {
  readonly kind: 'issuer' | 'secret';
  readonly source: string;
  /** The trust anchors, when readable. */
  readonly anchors?: readonly CertificateView[];
  /** A verified intermediate with its key and its path up to the anchor (`chain`, anchor last). */
  readonly offer?: KeyedCertificate;
  /** `issuer`: the key of the intermediate asked for, from the CA Secret, and the request named. */
  readonly pending?: { readonly key: string; readonly request?: CaRequestObservation };
  readonly problems: readonly UpstreamProblem[];
  readonly requestedValidity: Duration;
  readonly requestDeadline: Duration;
}

/** Annotation on the CA Secret: the CertificateRequest asked for with its pending key. */
export const CA_REQUEST_ANNOTATION = 'eso-mtls.io/ca-request';
/** Annotation on the CA Secret: the source of its active CA (`self-signed`, `issuer/<Kind>/<name>`, `secret/<name>`); absent means self-signed. */
export const CA_SOURCE_ANNOTATION = 'eso-mtls.io/ca-source';
/** The source value of the self-signed CA. */
export const SELF_SIGNED_SOURCE = 'self-signed';
/** CA Secret keys of the pending intermediate's key: PEM, or a reference to a CaSigner's key. */
export const PENDING_KEY_FIELDS = ['pending.key', 'pending.key-ref'] as const;

/**
 * The least validity an upstream intermediate must have left when it arrives. Less leaves no room
 * for leaves and their renewal (an issuer that returns ten minutes is refused as `too_short`).
 */
export const MIN_INTERMEDIATE_REMAINING: Duration = 24 * 60 * 60 * 1000;
/** After a request is denied or fails, the next one waits this long (a policy approver answers the same). */
export const CA_REQUEST_RETRY: Duration = 60 * 60 * 1000;

const problem = (reason: UpstreamProblemReason, message: string): UpstreamProblem => ({ reason, message: truncate(message, 1024) });

/** The anchors as certificates (CAs only), or the problem. */
function readAnchors(text: UpstreamText, source: string): readonly CertificateView[] | UpstreamProblem {
  if (!text.ok) return problem('anchors_unreadable', `the trust anchors of ${source}: ${text.message}`);
  const read = readChainPem(text.text, MAX_ANCHOR_CERTIFICATES);
  if (!read.ok) return problem('anchors_unreadable', `the trust anchors: ${read.message}`);
  if (read.certificates.length === 0) return problem('anchors_unreadable', 'the trust anchors hold no certificate');
  const notCa = read.certificates.find((c) => !c.isCa);
  if (notCa) return problem('anchors_unreadable', `the trust anchor ${truncate(notCa.subject)} is not a CA`);
  return read.certificates;
}

/** What an offer is judged against. */
interface OfferContext {
  readonly now: Instant;
  readonly cache: CertificateCache;
  readonly anchors: readonly CertificateView[];
  readonly from: string;
}

/** The intermediate in `certificateText` with `key`, verified up to an anchor; or the problem. */
function judgeOffer(certificateText: string, key: string, ctx: OfferContext): KeyedCertificate | UpstreamProblem {
  const read = readChainPem(certificateText);
  if (!read.ok) return problem(read.reason, `${ctx.from}: ${read.message}`);
  const verified = verifyChain({
    chain: read.certificates,
    anchors: ctx.anchors,
    at: ctx.now,
    verifier: ctx.cache.signatureCheck,
    minimumRemaining: MIN_INTERMEDIATE_REMAINING,
  });
  if (!verified.ok) return problem(verified.reason, `${ctx.from}: ${verified.message}`);
  const [certificate, ...chain] = verified.path;
  const keyCheck = ctx.cache.checkKey(certificate!, key);
  if (keyCheck === 'mismatch' || keyCheck === 'unreadable') {
    return problem(
      'key_mismatch',
      `${ctx.from}: the key is ${keyCheck === 'mismatch' ? 'not the key of' : 'unreadable, so not the key of'} ${truncate(certificate!.subject)}`,
    );
  }
  return { certificate: certificate!, privateKeyPem: key, chain };
}

/** `status.ca` disagrees with the anchor the chain ends at: said, never acted on. */
function statusCaMismatch(ca: string | undefined, offer: KeyedCertificate, from: string): UpstreamProblem | undefined {
  if (ca === undefined || ca.trim() === '') return undefined;
  const read = readChainPem(ca);
  const anchor = offer.chain!.at(-1)!;
  if (read.ok && read.certificates.some((c) => c.pem === anchor.pem)) return undefined;
  return problem(
    'status_ca_mismatch',
    `${from}: status.ca does not hold the trust anchor the chain ends at (${truncate(anchor.subject)}); the anchors given are used, status.ca only cross-checks`,
  );
}

/** The pending key stored in the CA Secret, if any. */
export function pendingKeyOf(data: SecretData): string | undefined {
  for (const field of PENDING_KEY_FIELDS) {
    const value = data[field];
    if (value === undefined) continue;
    try {
      const text = textOf(value as string | Uint8Array);
      if (text.trim() !== '') return text;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** What the request's state says, as a problem, at `now`. */
function requestProblem(request: CaRequestObservation, now: Instant, deadline: Duration): UpstreamProblem | undefined {
  const what = `CertificateRequest ${request.name}`;
  switch (request.state) {
    case 'denied':
      return problem('request_denied', `${what} was denied: ${request.message}`);
    case 'failed':
      return problem('request_failed', `${what} failed: ${request.message}`);
    case 'pending':
    case 'approved':
      return request.since !== undefined && now >= request.since + deadline
        ? problem('request_overdue', `${what} has been ${request.state} for over ${formatDuration(deadline)}: ${request.message}`)
        : undefined;
    default:
      return undefined;
  }
}

/**
 * Judges the upstream: the anchors, then the source's intermediate (the user's Secret, or our
 * issued request with the CA Secret's pending key) verified up to one of them, at least
 * {@link MIN_INTERMEDIATE_REMAINING} from its end. Never throws; every fault is a named problem.
 */
export function readUpstream(observation: UpstreamObservation, caSecretData: SecretData, now: Instant, cache: CertificateCache): UpstreamReading {
  const { kind, source, requestedValidity, requestDeadline } = observation;
  const base = { kind, source, requestedValidity, requestDeadline };
  const anchors = readAnchors(observation.anchors, source);
  const problems: UpstreamProblem[] = [];
  if (!Array.isArray(anchors)) problems.push(anchors as UpstreamProblem);
  const anchorList = Array.isArray(anchors) ? (anchors as readonly CertificateView[]) : undefined;
  if (kind === 'secret') {
    const secret = observation.secret;
    const unreadable = !secret ? 'not read' : !secret.certificate.ok ? secret.certificate.message : !secret.key.ok ? secret.key.message : undefined;
    if (unreadable !== undefined) return { ...base, anchors: anchorList, problems: [...problems, problem('source_unreadable', `${source}: ${unreadable}`)] };
    if (!anchorList) return { ...base, problems };
    const offer = judgeOffer((secret!.certificate as { text: string }).text, (secret!.key as { text: string }).text, {
      now,
      cache,
      anchors: anchorList,
      from: source,
    });
    return 'reason' in offer ? { ...base, anchors: anchorList, problems: [...problems, offer] } : { ...base, anchors: anchorList, offer, problems };
  }
  if (observation.issuer && observation.issuer.state !== 'ready') {
    problems.push(problem(observation.issuer.state === 'missing' ? 'issuer_missing' : 'issuer_not_ready', `${source}: ${observation.issuer.message}`));
  }
  const key = pendingKeyOf(caSecretData);
  const request = observation.request;
  const pending = key === undefined ? undefined : { key, ...(request ? { request } : {}) };
  const stateProblem = request && requestProblem(request, now, requestDeadline);
  if (stateProblem) problems.push(stateProblem);
  if (!pending || request?.state !== 'issued' || !anchorList) return { ...base, anchors: anchorList, pending, problems };
  const from = `CertificateRequest ${request.name}`;
  const offer =
    request.certificate === undefined
      ? problem(request.unread ?? 'empty', `${from}: ${request.unread === undefined ? 'Ready without status.certificate' : request.message}`)
      : judgeOffer(request.certificate, key!, { now, cache, anchors: anchorList, from });
  if ('reason' in offer) return { ...base, anchors: anchorList, pending, problems: [...problems, offer] };
  const mismatch = statusCaMismatch(request.ca, offer, from);
  return { ...base, anchors: anchorList, pending, offer, problems: mismatch ? [...problems, mismatch] : problems };
}
