import type { LeaseRecord } from './lease-lock.js';

/**
 * True when the record differs from the one seen before in anything a live holder changes: a new
 * holder, a renewal, a transition or a new duration. Liveness is judged by when it last changed
 * on our own monotonic clock, as client-go does, so clock skew between nodes does not matter.
 */
export function leaseRecordChanged(before: LeaseRecord | undefined, after: LeaseRecord): boolean {
  return (
    !before ||
    before.holderIdentity !== after.holderIdentity ||
    before.renewTime?.getTime() !== after.renewTime?.getTime() ||
    before.leaseTransitions !== after.leaseTransitions ||
    before.leaseDurationSeconds !== after.leaseDurationSeconds
  );
}

/** True when someone other than `identity` holds the Lease and its record changed less than its duration ago. */
export function heldByAnother(record: LeaseRecord, identity: string, changedAtMs: number, nowMs: number): boolean {
  return record.holderIdentity !== '' && record.holderIdentity !== identity && changedAtMs + record.leaseDurationSeconds * 1000 > nowMs;
}
