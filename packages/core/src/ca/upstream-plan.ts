import type { Instant } from '../common/time.js';
import type { RotationReason } from '../policy/rules.js';
import type { CaLayout } from './ca-layout.js';
import type { CaReading, CaStep } from './ca-phases.js';
import { CA_REQUEST_RETRY, type UpstreamProblem } from './upstream.js';

/*
 * The upstream side of a CA plan: whether to ask the issuer for an intermediate now, and every
 * problem that stands, for the adapter to report (a metric, an Event, one log line per interval)
 * and for `eso-mtls status`. Pure, like the phases it reads.
 */

/** What the adapter does about the issuer this round. */
export type CaRequestAction =
  /** Generate a new key, store it in the CA Secret as pending, then send its request. */
  | { readonly kind: 'create'; readonly reason: RotationReason; readonly message: string }
  /** Send the request of the pending key again (the CertificateRequest is gone). */
  | { readonly kind: 'submit'; readonly reason: RotationReason; readonly message: string };

/** The upstream part of a CA plan. */
export interface UpstreamPlan {
  /** A cert-manager issuer, or a Secret the user maintains. */
  readonly kind: 'issuer' | 'secret';
  /** The source, as the CA Secret records it (`issuer/<Kind>/<name>`, `secret/<name>`). */
  readonly source: string;
  /** Why a new intermediate is wanted while the source offers none; undefined when none is wanted. */
  readonly wants?: string;
  /** The request to make now (issuer only). */
  readonly request?: CaRequestAction;
  /** Every problem that stands. */
  readonly problems: readonly UpstreamProblem[];
  /** When the upstream part acts next: a retry after a refusal, a request's deadline. */
  readonly dueAt: readonly Instant[];
}

/** The upstream plan after the phases (`steps`) left `slots`. */
export function upstreamPlan(reading: CaReading, steps: readonly CaStep[], slots: CaLayout): UpstreamPlan {
  const upstream = reading.input.upstream!;
  const { now } = reading.input;
  const wanting = steps.find((s) => s.wants !== undefined);
  const problems = [...upstream.problems];
  const base = { kind: upstream.kind, source: upstream.source };
  if (!wanting) return { ...base, problems, dueAt: [] };
  const wants = wanting.wants!;
  const reason = wanting.wantsReason ?? 'expiring';
  if (upstream.kind === 'secret') {
    if (slots.active) problems.push({ reason: 'renewal_overdue', message: `${wants}: ${upstream.source} holds no new intermediate yet; renew it there` });
    return { ...base, wants, problems, dueAt: [] };
  }
  const action = requestAction(reading, reason, wants, now);
  return { ...base, wants, problems, ...(action.request ? { request: action.request } : {}), dueAt: action.dueAt };
}

/** Whether to ask now: a new key when none is pending or the last answer was a refusal past its back-off; the same key when its request is gone. */
function requestAction(reading: CaReading, reason: RotationReason, wants: string, now: Instant): { request?: CaRequestAction; dueAt: Instant[] } {
  const upstream = reading.input.upstream!;
  const pending = upstream.pending;
  if (!pending) return { request: { kind: 'create', reason, message: wants }, dueAt: [] };
  const request = pending.request;
  if (!request || request.state === 'missing') return { request: { kind: 'submit', reason, message: wants }, dueAt: [] };
  // Issued yet refused here (no offer) is a refusal too: the issuer answers the same until it is fixed.
  const refused = request.state === 'denied' || request.state === 'failed' || (request.state === 'issued' && !upstream.offer);
  if (refused) {
    const retryAt = (request.since ?? now) + CA_REQUEST_RETRY;
    return now >= retryAt
      ? { request: { kind: 'create', reason, message: `${wants}; asking again after ${request.name} was ${request.state}` }, dueAt: [] }
      : { dueAt: [retryAt] };
  }
  const overdueAt = request.since === undefined ? undefined : request.since + upstream.requestDeadline;
  return { dueAt: overdueAt !== undefined && overdueAt > now ? [overdueAt] : [] };
}
