import { judgeLeaseHolder, maxLeaseDurationSeconds } from '../lease-holder.js';
import type { LeaseRead } from './cluster-state.js';
import type { LeaseReport, Problem } from './report.js';

/**
 * The leader election Lease as the replicas judge it ({@link judgeLeaseHolder}), without an
 * identity of our own: a holder must have one of our replicas' identity forms, and must not claim
 * the Lease for longer than a replica under `leaseDuration` (milliseconds) writes. An absent or
 * released Lease is no problem: a replica takes it within a retry period.
 */
export function evaluateLease(read: LeaseRead, leaseDuration: number): LeaseReport {
  const lease = `${read.namespace}/${read.name}`;
  const maxSeconds = maxLeaseDurationSeconds(leaseDuration);
  if (read.kind === 'unreadable') return { lease, checked: false, unchecked: read.why, maxLeaseDurationSeconds: maxSeconds, problems: [] };
  const r = read.record;
  if (r === undefined) return { lease, checked: true, exists: false, maxLeaseDurationSeconds: maxSeconds, problems: [] };
  const foreign = judgeLeaseHolder(r, { leaseDuration });
  const problems: Problem[] = foreign ? [{ kind: 'foreign', message: `Lease ${lease}: ${foreign.message}` }] : [];
  return {
    lease,
    checked: true,
    exists: true,
    holder: r.holderIdentity,
    leaseDurationSeconds: r.leaseDurationSeconds,
    ...(r.renewTime ? { renewTime: r.renewTime.toISOString() } : {}),
    maxLeaseDurationSeconds: maxSeconds,
    problems,
  };
}
