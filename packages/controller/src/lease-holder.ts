import { truncate } from '@eso-mtls/core';
import type { LeaderLeaseForeignReason } from '@eso-mtls/metrics';
import type { LeaseRecord } from './lease-lock.js';

/**
 * The rule that tells a Lease held by one of our replicas from one held by anybody else, without
 * reading pods (the controller's Role grants no pod read): a holder must have our replicas'
 * identity form, and must not claim the Lease for far longer than we are configured to. Anyone
 * who may write the Lease can still forge a holder of our form with our duration; that stops
 * issuance for one lease duration per write at most, which is why docs/rbac.md says who must
 * never get write on it.
 */

/** A Deployment pod's name ends in `-<pod-template-hash>-<5 random>`, both in Kubernetes' safe alphabet (no vowels, no 0, 1, 3). */
const POD_SUFFIX = /-[bcdfghjklmnpqrstvwxz2456789]{1,10}-[bcdfghjklmnpqrstvwxz2456789]{5}$/;
/** The CLI's default identity appends `_<random UUID>` to the host name, as client-go does. */
const UUID_SUFFIX = /_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Held longer than this many times the configured lease duration is far above it... */
const DURATION_FACTOR = 2;
/** ...and by more than this many seconds, so that a rollout changing a short duration does not trip it. */
const DURATION_MARGIN_SECONDS = 60;

/** What {@link judgeLeaseHolder} compares a holder with. */
export interface LeaseHolderRule {
  /**
   * Our own holder identity: a holder is ours when it has the same stem ({@link identityStem}).
   * Undefined (`eso-mtls status`, which has none): ours when it has any of our identity forms.
   */
  readonly identity?: string;
  /** The configured lease duration, milliseconds. */
  readonly leaseDuration: number;
}

/** A Lease held by no replica of ours: why, who holds it, for how long, and a sentence saying so. */
export interface ForeignLease {
  /** At least one reason. */
  readonly reasons: readonly LeaderLeaseForeignReason[];
  readonly holder: string;
  readonly leaseDurationSeconds: number;
  /** What is wrong and what it does, naming the holder and the duration. */
  readonly message: string;
}

/** A last `-<name or number>`, as a StatefulSet's `-0` or numbered identities given by hand (`replica-a`, `replica-b`). */
const LAST_SEGMENT = /-[a-z0-9]+$/;

/**
 * The part of a holder identity shared by every replica of one workload: a Deployment pod's name
 * without its ReplicaSet hash and random suffix, and the host name of the CLI's default
 * `<host>_<uuid>` (a pod name there too). `eso-mtls-controller-7d9f8b6c5-x2k9z` and
 * `eso-mtls-controller-5c6b7d8f9-q4w7r_<uuid>` both give `eso-mtls-controller`. Any other identity
 * loses its last `-` segment: `eso-mtls-0` and `eso-mtls-1` give `eso-mtls`.
 */
export function identityStem(identity: string): string {
  const host = identity.replace(UUID_SUFFIX, '');
  if (POD_SUFFIX.test(host)) return host.replace(POD_SUFFIX, '');
  return host === identity ? host.replace(LAST_SEGMENT, '') : host;
}

/** True when `identity` has one of the forms our replicas write: a Deployment pod's name, or `<host>_<uuid>`. */
export function hasReplicaIdentityForm(identity: string): boolean {
  return UUID_SUFFIX.test(identity) || POD_SUFFIX.test(identity);
}

/** The longest leaseDurationSeconds a replica of ours may write, for a configured duration in milliseconds. */
export function maxLeaseDurationSeconds(leaseDuration: number): number {
  const configured = Math.ceil(leaseDuration / 1000);
  return Math.max(DURATION_FACTOR * configured, configured + DURATION_MARGIN_SECONDS);
}

/**
 * Judges the Lease as last read: undefined when it is absent, released (empty holder) or held by
 * a replica of ours with a duration we could have written; otherwise every reason it is not.
 * Pure: `eso-mtls status` and every replica judge alike.
 */
export function judgeLeaseHolder(record: LeaseRecord | undefined, rule: LeaseHolderRule): ForeignLease | undefined {
  if (record === undefined || record.holderIdentity === '') return undefined;
  const holder = record.holderIdentity;
  const seconds = record.leaseDurationSeconds;
  const reasons: LeaderLeaseForeignReason[] = [];
  const ours = rule.identity === undefined ? hasReplicaIdentityForm(holder) : holder === rule.identity || identityStem(holder) === identityStem(rule.identity);
  if (!ours) reasons.push('unknown_holder');
  const max = maxLeaseDurationSeconds(rule.leaseDuration);
  if (seconds > max) reasons.push('duration_too_long');
  if (reasons.length === 0) return undefined;
  const shownHolder = JSON.stringify(truncate(holder, 128));
  const why = [
    ...(ours
      ? []
      : [
          rule.identity === undefined
            ? `holder ${shownHolder} is not of our replicas' identity form (<Deployment>-<hash>-<suffix> or <host>_<uuid>)`
            : `holder ${shownHolder} is not a replica of ${JSON.stringify(identityStem(rule.identity))}`,
        ]),
    ...(seconds > max
      ? [`leaseDurationSeconds ${seconds} is above the ${max} s our replicas may write (--leader-election-lease-duration ${rule.leaseDuration / 1000}s)`]
      : []),
  ];
  return {
    reasons,
    holder,
    leaseDurationSeconds: seconds,
    message: `the leader election Lease is held by no replica of this installation: ${why.join('; ')}. No replica issues until it expires; if nobody of yours wrote it, find who may write this Lease (docs/rbac.md) and delete it`,
  };
}
