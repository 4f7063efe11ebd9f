import type { RotationReason } from '../policy/rules.js';
import type { Instant } from '../common/time.js';

/**
 * The order leaves are issued in when there are more due than one plan may issue (see
 * docs/flood-control.md), most urgent first:
 * - `emergency`: every leaf in use when an emergency CA rotation removes its CA from every bundle;
 *   never held back by the bound (a namespace without a certificate yet is still `new`);
 * - `due`: a certificate that cannot serve (much longer): invalid, its Secret deleted, signed by
 *   none of our CAs, or past its renewal time;
 * - `forced`: a rotation someone asked for;
 * - `ca_rotated`: signed by a retired CA that is still trusted during the overlap;
 * - `new`: a namespace's first certificate, or new names for a namespace already served.
 */
const ISSUANCE_CLASSES = ['emergency', 'due', 'forced', 'ca_rotated', 'new'] as const;
type IssuanceClass = (typeof ISSUANCE_CLASSES)[number];

// secret_missing and ca_mismatch are outages today (a pod that restarts mounts nothing; ESO rejects
// the handshake), so they rank with invalid. dns_changed is a new Service in a namespace already
// served: its other Services keep working, so it waits with the new namespaces a flood brings.
const CLASS_OF_REASON: Readonly<Record<RotationReason, IssuanceClass>> = {
  invalid: 'due',
  secret_missing: 'due',
  ca_mismatch: 'due',
  expiring: 'due',
  forced: 'forced',
  ca_rotated: 'ca_rotated',
  dns_changed: 'new',
  initial: 'new',
};

/** A leaf that is due, with what ranks it among the others. */
export interface DueLeaf<T> {
  /** What the caller issues (or defers). */
  readonly item: T;
  readonly reason: RotationReason;
  /** Re-issued by an emergency CA rotation: its Secret exists and the CA that signed it is gone. */
  readonly emergency: boolean;
  /**
   * The leaf in place has reached its renewal time. It then ranks as `due` whatever rule fired
   * first: a leaf both signed by a retired CA and expiring is as urgent as any expiring one.
   */
  readonly pastRenewal: boolean;
  /** notAfter of the leaf in place; undefined when there is none that can be read. */
  readonly notAfter?: Instant;
  /** When its namespace was first labelled (its oldest labelled Service); undefined when unknown (ranked last). */
  readonly since?: Instant;
}

/**
 * Splits due leaves into those issued now and those deferred to a following plan: by class
 * ({@link ISSUANCE_CLASSES}), and within a class the certificate nearest its end first (none at
 * all first), then the earliest `since` (the planner gives the client's certificate -Infinity),
 * then the planner's order; up to `max` in all, except that every emergency leaf is issued (and counts).
 */
export function orderIssuances<T>(due: readonly DueLeaf<T>[], max: number | undefined): { issue: T[]; defer: T[] } {
  const rank = (d: DueLeaf<T>): number =>
    d.emergency ? 0 : Math.min(ISSUANCE_CLASSES.indexOf(CLASS_OF_REASON[d.reason]), d.pastRenewal ? ISSUANCE_CLASSES.indexOf('due') : Infinity);
  const sorted = due
    .map((d, index) => ({ d, index, rank: rank(d) }))
    .sort(
      (a, b) =>
        a.rank - b.rank || (a.d.notAfter ?? -Infinity) - (b.d.notAfter ?? -Infinity) || (a.d.since ?? Infinity) - (b.d.since ?? Infinity) || a.index - b.index,
    );
  if (max === undefined || sorted.length <= max) return { issue: sorted.map((s) => s.d.item), defer: [] };
  const cut = Math.max(max, sorted.filter((s) => s.d.emergency).length);
  return { issue: sorted.slice(0, cut).map((s) => s.d.item), defer: sorted.slice(cut).map((s) => s.d.item) };
}

/** A namespace that asks to be served, with what decides whether the cap leaves it out. */
export interface NamespaceCandidate<T> {
  readonly item: T;
  readonly namespace: string;
  /** It holds (or held) a certificate of ours: it keeps its place over namespaces never served. */
  readonly served: boolean;
  /** Its oldest labelled Service's creationTimestamp; undefined when unknown (ranked newest). */
  readonly since?: Instant;
}

/**
 * The namespaces served under a cap of `max`, and those left out: namespaces already served first,
 * then the oldest (by their oldest labelled Service), then by name. A newly labelled namespace
 * never displaces one that holds a certificate, so none flaps between issued and abandoned.
 */
export function capNamespaces<T>(candidates: readonly NamespaceCandidate<T>[], max: number | undefined): { served: T[]; left: T[] } {
  if (max === undefined || candidates.length <= max) return { served: candidates.map((c) => c.item), left: [] };
  const sorted = [...candidates].sort(
    (a, b) =>
      Number(b.served) - Number(a.served) ||
      (a.since ?? Infinity) - (b.since ?? Infinity) ||
      (a.namespace < b.namespace ? -1 : a.namespace > b.namespace ? 1 : 0),
  );
  const kept = new Set(sorted.slice(0, max));
  // Served ones keep the planner's order (by name), so the rest of the plan does not depend on the cap.
  return { served: candidates.filter((c) => kept.has(c)).map((c) => c.item), left: sorted.slice(max).map((c) => c.item) };
}
