// The apiserver's audit log, read for writes: when each completed, by whom, of what. The suites
// count and time writes from it rather than by polling, which a loaded machine starves.
import type { AuditEvent } from '../../envtest/src/control-plane.js';

/** A successful write (create, update, patch, delete) the audit log recorded, at its ResponseComplete stage. */
export interface AuditedWrite {
  readonly resource: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly user: string;
  /** When it completed (stageTimestamp), in fractional ms since the epoch. */
  readonly at: number;
}

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete']);

/** Every successful write of `resource` (e.g. `secrets`, `clustertrustbundles`) in the log, in order. */
export function auditedWrites(events: readonly AuditEvent[], resource: string): AuditedWrite[] {
  return events
    .filter((e) => e.objectRef?.resource === resource && WRITE_VERBS.has(e.verb))
    .filter((e) => e.stage === 'ResponseComplete' && (e.responseStatus?.code ?? 0) < 300)
    .map((e) => ({ resource, namespace: e.objectRef!.namespace, name: e.objectRef!.name, user: e.user.username, at: microsToMs(e.stageTimestamp) }));
}

/** An RFC 3339 time with microseconds, as the audit log writes it, in fractional ms (Date.parse would drop the µs). */
export function microsToMs(rfc3339: string): number {
  const m = /\.(\d+)Z$/.exec(rfc3339);
  const fraction = m === null ? 0 : Number(`0.${m[1]}`) * 1000;
  return Date.parse(rfc3339.replace(/\.\d+Z$/, 'Z')) + fraction;
}
