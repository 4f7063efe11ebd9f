import { KubeApiError, type KubeRestClient } from '@eso-mtls/kubernetes';
import type { V1Lease } from '@kubernetes/client-node';

/** The part of a coordination.k8s.io/v1 Lease that leader election reads and writes. */
export interface LeaseRecord {
  /** Empty when nobody holds the lease (released). */
  readonly holderIdentity: string;
  /** How long the holder's claim lasts after each renewal. */
  readonly leaseDurationSeconds: number;
  /** When the current holder took it. */
  readonly acquireTime: Date | undefined;
  /** When the holder last renewed it. */
  readonly renewTime: Date | undefined;
  /** How many times it changed hands. */
  readonly leaseTransitions: number;
}

/** A Lease as last read or written, with the resourceVersion an update must carry. */
export interface ObservedLease {
  /** The Lease's spec. */
  readonly record: LeaseRecord;
  /** The version an update must name. */
  readonly resourceVersion: string;
}

/** The outcome of a write that lost a race (409) or found the Lease missing (404) or present (409). */
export class LeaseRaceError extends Error {
  /** Always `LeaseRaceError`. */
  override readonly name = 'LeaseRaceError';
}

/**
 * One Lease, read with GET, created with POST and updated with PUT carrying the resourceVersion
 * it was read at. client-node ships no leader election, so this is client-go's LeaseLock.
 */
export class LeaseLock {
  private readonly collection: string;
  private readonly path: string;

  constructor(
    private readonly api: Pick<KubeRestClient, 'get' | 'create' | 'replace'>,
    readonly namespace: string,
    readonly name: string,
  ) {
    this.collection = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
    this.path = `${this.collection}/${encodeURIComponent(name)}`;
  }

  /** The Lease, or undefined when it does not exist. Other API errors propagate. */
  async get(): Promise<ObservedLease | undefined> {
    try {
      return toObserved(await this.api.get<V1Lease>(this.path));
    } catch (e) {
      if (e instanceof KubeApiError && e.code === 404) return undefined;
      throw e;
    }
  }

  /** Creates the Lease; throws {@link LeaseRaceError} when another replica created it first. */
  async create(record: LeaseRecord): Promise<ObservedLease> {
    try {
      return toObserved(
        await this.api.create<V1Lease>(this.collection, {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.name, namespace: this.namespace },
          spec: toSpec(record),
        }),
      );
    } catch (e) {
      if (e instanceof KubeApiError && e.code === 409) throw new LeaseRaceError(`Lease ${this.namespace}/${this.name} was created by another replica first`);
      throw e;
    }
  }

  /**
   * Replaces the Lease's spec, only if it is still at `previous.resourceVersion`; throws
   * {@link LeaseRaceError} when it changed in between (409) or was deleted (404).
   */
  async update(previous: ObservedLease, record: LeaseRecord): Promise<ObservedLease> {
    try {
      return toObserved(
        await this.api.replace<V1Lease>(this.path, {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.name, namespace: this.namespace, resourceVersion: previous.resourceVersion },
          spec: toSpec(record),
        }),
      );
    } catch (e) {
      if (e instanceof KubeApiError && (e.code === 409 || e.code === 404)) {
        throw new LeaseRaceError(`Lease ${this.namespace}/${this.name} changed since resourceVersion ${previous.resourceVersion} (HTTP ${e.code})`);
      }
      throw e;
    }
  }
}

/** The Lease spec as JSON: MicroTime fields in RFC 3339 with exactly six fractional digits, as the apiserver parses them. */
export function toSpec(r: LeaseRecord): Record<string, unknown> {
  const micro = (d: Date | undefined): string | undefined => (d === undefined ? undefined : d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z'));
  return {
    holderIdentity: r.holderIdentity,
    leaseDurationSeconds: r.leaseDurationSeconds,
    acquireTime: micro(r.acquireTime),
    renewTime: micro(r.renewTime),
    leaseTransitions: r.leaseTransitions,
  };
}

function toObserved(lease: V1Lease): ObservedLease {
  const spec = lease.spec ?? {};
  // MicroTime fields arrive as strings.
  const time = (v: unknown): Date | undefined => {
    if (v === undefined || v === null) return undefined;
    const d = new Date(v as string | Date);
    return Number.isNaN(d.getTime()) ? undefined : d;
  };
  return {
    resourceVersion: lease.metadata?.resourceVersion ?? '',
    record: {
      holderIdentity: spec.holderIdentity ?? '',
      leaseDurationSeconds: spec.leaseDurationSeconds ?? 0,
      acquireTime: time(spec.acquireTime),
      renewTime: time(spec.renewTime),
      leaseTransitions: spec.leaseTransitions ?? 0,
    },
  };
}

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
