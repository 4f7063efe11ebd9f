import type { CertificateCache } from '../crypto/cache.js';
import type { CertificateView } from '../x509/certificate.js';
import { SecretKeys, type SecretData } from '../secret/observe.js';
import { textOf } from '../x509/pem.js';
import type { Policy } from '../policy/policy.js';
import { type Duration, type Instant, days } from '../common/time.js';

/** A broken promise found while simulating. */
export interface Violation {
  /** The simulated instant it was found. */
  readonly at: Instant;
  /** trust: a handshake would fail; expiry: a certificate in use reached its last day; idempotence: re-planning was not empty. */
  readonly kind: 'trust' | 'expiry' | 'idempotence';
  /** What broke, naming the Secret and the certificates. */
  readonly message: string;
}

/** A peer-visible Secret: the client Secret, or a provider namespace's. */
export type PeerTarget = 'client' | { readonly namespace: string };

interface Version {
  readonly id: number;
  readonly writtenAt: Instant;
  replacedAt?: Instant;
  /** Written by the planner; chaos (deleted, corrupted, foreign) versions are not ours. */
  ours: boolean;
  readonly leaf?: CertificateView;
  readonly bundle: readonly CertificateView[];
}

const LAST_DAY = days(1);
const key = (t: PeerTarget): string => (t === 'client' ? 'client' : t.namespace);
const iso = (t: Instant): string => new Date(t).toISOString();

/**
 * Checks the two promises of rotation as a simulation runs. Peers see a Secret's content with any
 * delay up to propagationDelay: at instant t a peer may hold any version written within
 * (t − propagationDelay, t], or the one current at t − propagationDelay.
 * - trust: every server leaf a provider may serve chains to a valid CA in every bundle the ESO
 *   client may hold, and the other way round;
 * - expiry: no certificate in use is within its last day of validity.
 */
export class InvariantChecker {
  private readonly versions = new Map<string, Version[]>();
  /** Smallest remaining validity of a certificate in use seen so far. */
  minRemaining: Duration = Infinity;
  private readonly checkedPairs = new Set<string>();
  private nextId = 0;

  constructor(
    private readonly policy: Policy,
    private readonly cache: CertificateCache,
  ) {}

  /** Records a write to a peer-visible Secret (`data` undefined: deleted). */
  record(target: PeerTarget, at: Instant, data: SecretData | undefined, ours: boolean): Violation[] {
    const list = this.versions.get(key(target)) ?? [];
    this.versions.set(key(target), list);
    const previous = list[list.length - 1];
    const violations: Violation[] = [];
    if (previous && previous.replacedAt === undefined) {
      previous.replacedAt = at;
      // The leaf we replace may still be served for propagationDelay. (Chaos replacing a leaf,
      // e.g. deleting a Secret no Service uses any more, says nothing about our renewals.)
      if (ours && previous.ours && previous.leaf) violations.push(...this.remaining(target, previous.leaf, at + this.policy.propagationDelay, at));
    }
    const leaf = data && this.parse(data[SecretKeys.certificate]);
    const bundle = (data && this.parseAll(data[SecretKeys.caCertificate])) ?? [];
    list.push({ id: this.nextId++, writtenAt: at, ours: ours && leaf !== undefined, leaf, bundle });
    // Keep only what a peer may still hold.
    while (list.length > 1 && list[0]!.replacedAt! + this.policy.propagationDelay <= at) list.shift();
    return violations;
  }

  /** Every version recorded so far stops counting: trust was given up on purpose (emergency, total loss). */
  breakTrust(): void {
    for (const list of this.versions.values()) for (const v of list) v.ours = false;
  }

  /** Expiry: the current leaves of `peers` and the active CA have more than a day left at `at`. */
  checkExpiry(at: Instant, peers: readonly PeerTarget[], activeCa: CertificateView | undefined): Violation[] {
    const violations: Violation[] = [];
    for (const peer of peers) {
      const current = this.versions.get(key(peer))?.at(-1);
      if (current?.ours && current.leaf) violations.push(...this.remaining(peer, current.leaf, at, at));
    }
    if (activeCa) violations.push(...this.remaining('client', activeCa, at, at, 'the active CA'));
    return violations;
  }

  /** Trust: every pair of versions the client and a provider may hold at `at` completes a handshake. */
  checkTrust(at: Instant, namespaces: readonly string[]): Violation[] {
    const violations: Violation[] = [];
    const clients = this.window('client', at);
    for (const namespace of namespaces) {
      for (const server of this.window({ namespace }, at)) {
        for (const client of clients) {
          const pair = `${server.id}/${client.id}`;
          const problem = this.handshake(server, client, at);
          if (problem && !this.checkedPairs.has(pair)) {
            this.checkedPairs.add(pair);
            violations.push({
              at,
              kind: 'trust',
              message: `namespace ${namespace} (written ${iso(server.writtenAt)}) and client (written ${iso(client.writtenAt)}): ${problem}`,
            });
          }
        }
      }
    }
    return violations;
  }

  private window(target: PeerTarget, at: Instant): Version[] {
    return (this.versions.get(key(target)) ?? []).filter(
      (v) => v.ours && v.writtenAt <= at && (v.replacedAt === undefined || v.replacedAt + this.policy.propagationDelay > at),
    );
  }

  private handshake(server: Version, client: Version, at: Instant): string | undefined {
    const chains = (leaf: CertificateView | undefined, bundle: readonly CertificateView[]): boolean =>
      leaf !== undefined &&
      leaf.notBefore <= at &&
      at < leaf.notAfter &&
      bundle.some((ca) => ca.notBefore <= at && at < ca.notAfter && this.cache.isSignedBy(leaf, ca));
    if (!chains(server.leaf, client.bundle)) return `the server leaf ${server.leaf?.serialNumber} does not chain to the client's bundle`;
    if (!chains(client.leaf, server.bundle)) return `the client leaf ${client.leaf?.serialNumber} does not chain to the provider's bundle`;
    return undefined;
  }

  private remaining(target: PeerTarget, cert: CertificateView, until: Instant, at: Instant, what?: string): Violation[] {
    const left = cert.notAfter - until;
    this.minRemaining = Math.min(this.minRemaining, left);
    if (left >= LAST_DAY) return [];
    const name = what ?? (target === 'client' ? 'the client leaf' : `the leaf of namespace ${target.namespace}`);
    return [
      { at, kind: 'expiry', message: `${name} (serial ${cert.serialNumber}, notAfter ${iso(cert.notAfter)}) is in its last day of validity at ${iso(until)}` },
    ];
  }

  private parse(value: SecretData[string]): CertificateView | undefined {
    const all = this.parseAll(value);
    return all?.length === 1 ? all[0] : undefined;
  }

  private parseAll(value: SecretData[string]): readonly CertificateView[] | undefined {
    if (value === undefined) return undefined;
    try {
      return this.cache.parseBundle(textOf(value));
    } catch {
      return undefined;
    }
  }
}
