import { CertificateCache } from '../crypto/cache.js';
import type { CaPhase } from '../ca/ca-phases.js';
import type { CertificateView } from '../x509/certificate.js';
import type { CryptoBackend } from '../crypto/crypto.js';
import { executePlan } from '../plan/execute.js';
import { InvariantChecker, type PeerTarget, type Violation } from './invariants.js';
import { type Issued, issueCa, issueServerLeaf } from '../crypto/issue.js';
import { MemoryStore } from './memory-store.js';
import { namespaceDnsNames } from '../x509/names.js';
import { SecretKeys, type SecretData } from '../secret/observe.js';
import { planRotation } from '../plan/plan.js';
import { type Plan, isPlanEmpty } from '../plan/vocabulary.js';
import { type SecretTarget, describeTarget } from '../secret/target.js';
import type { Policy } from '../policy/policy.js';
import type { RotationReason } from '../policy/rules.js';
import { LeafKeyPool, type LeafKeyPoolReport } from './key-pool.js';
import { ROTATE_ANNOTATION } from '../secret/rotate-request.js';
import type { Duration, Instant } from '../common/time.js';

/** How a simulated attacker or accident damages a Secret. */
export type Corruption = 'garbage' | 'emptyData' | 'foreignBundle' | 'foreignLeaf';

/** Something that happens to the simulated cluster at an instant. */
export type SimulationEvent = { readonly at: Instant } & (
  | { readonly kind: 'addService' | 'removeService'; readonly namespace: string; readonly service: string }
  | { readonly kind: 'requestRotation'; readonly namespace: string; readonly service: string; readonly token: string }
  | { readonly kind: 'requestCaRotation'; readonly token: string }
  | { readonly kind: 'deleteSecret'; readonly target: SecretTarget }
  | { readonly kind: 'corruptSecret'; readonly target: SecretTarget; readonly corruption: Corruption }
);

/** One line of the timeline: a write the planner made, or an event. */
export interface TimelineEntry {
  /** The simulated instant. */
  readonly at: Instant;
  /** What was written (`ca`, a leaf, the `bundle`), or `event` for a scenario event. */
  readonly kind: 'ca' | 'serverLeaf' | 'clientLeaf' | 'bundle' | 'event';
  /** The Secret written (`ca`, `client` or `namespace/<name>`), or the namespace an event touched. */
  readonly target: string;
  /** Why a leaf was issued. */
  readonly reason?: RotationReason;
  /** The CA rotation phases a CA write carried out. */
  readonly phases?: readonly CaPhase[];
  /** What was done and why, in a sentence. */
  readonly message: string;
}

/** Counts over a whole simulation. */
export interface SimulationSummary {
  /** First simulated instant. */
  readonly start: Instant;
  /** Last simulated instant: the end asked for, or where an abort stopped the run. */
  readonly end: Instant;
  /** Stopped early by the `signal` of {@link SimulationOptions}: the counts cover `start` to `end` only. */
  readonly interrupted: boolean;
  /** Reconciles run. */
  readonly reconciles: number;
  /** Provider (server) leaves issued. */
  readonly serverIssuances: number;
  /** Client leaves issued. */
  readonly clientIssuances: number;
  /** Leaves issued, by the rule that fired. */
  readonly byReason: Readonly<Partial<Record<RotationReason, number>>>;
  /** CA rotation phases carried out, by phase. */
  readonly caPhases: Readonly<Partial<Record<CaPhase, number>>>;
  /** Trust bundle writes. */
  readonly bundleUpdates: number;
  /** Smallest remaining validity of any certificate in use, at any checked instant. */
  readonly minRemainingValidity: Duration;
  /** Every broken invariant; empty when the policy held. */
  readonly violations: readonly Violation[];
  /** Whether leaves shared a small pool of real keys (the default) and how many were generated. */
  readonly leafKeys: LeafKeyPoolReport;
}

/** The result of {@link simulate}. */
export interface SimulationResult {
  /** Every write and event, in order. */
  readonly timeline: readonly TimelineEntry[];
  /** Counts over the whole run. */
  readonly summary: SimulationSummary;
}

const count = <K extends string>(table: Partial<Record<K, number>>, k: K): void => {
  table[k] = (table[k] ?? 0) + 1;
};

/**
 * A cluster in memory driven by the real planner and executor, with the invariants checked at
 * every reconcile. Used by {@link simulate} and by the property tests.
 */
export class SimulatedCluster {
  readonly store = new MemoryStore();
  readonly timeline: TimelineEntry[] = [];
  readonly violations: Violation[] = [];
  readonly byReason: Partial<Record<RotationReason, number>> = {};
  readonly caPhases: Partial<Record<CaPhase, number>> = {};
  reconciles = 0;
  bundleUpdates = 0;
  readonly checker: InvariantChecker;
  readonly cache: CertificateCache;
  private foreign?: Issued;

  constructor(
    readonly policy: Policy,
    readonly crypto: CryptoBackend,
    cache?: CertificateCache,
  ) {
    this.cache = cache ?? new CertificateCache(crypto.verifier);
    this.checker = new InvariantChecker(policy, this.cache);
  }

  /** Applies an event to the store (no reconcile). */
  async applyEvent(event: SimulationEvent): Promise<void> {
    const { store } = this;
    const note = (message: string, target = ''): void => {
      this.timeline.push({ at: event.at, kind: 'event', target, message });
    };
    switch (event.kind) {
      case 'addService':
      case 'removeService': {
        const others = store.servicesOf(event.namespace).filter((s) => s.name !== event.service);
        store.setServices(event.namespace, event.kind === 'addService' ? [...others, { name: event.service }] : others);
        note(`${event.kind === 'addService' ? 'labelled' : 'unlabelled'} Service ${event.namespace}/${event.service}`, event.namespace);
        return;
      }
      case 'requestRotation':
        store.setServices(
          event.namespace,
          store.servicesOf(event.namespace).map((s) => (s.name === event.service ? { ...s, rotateRequest: event.token } : s)),
        );
        note(`rotation requested on Service ${event.namespace}/${event.service}: ${event.token}`, event.namespace);
        return;
      case 'requestCaRotation': {
        const ca = store.get('ca');
        if (ca) store.put('ca', { ...ca, annotations: { ...ca.annotations, [ROTATE_ANNOTATION]: event.token } });
        note(`CA rotation requested: ${event.token}`, 'ca');
        return;
      }
      case 'deleteSecret':
        store.delete(event.target);
        if (event.target !== 'ca') this.checker.record(event.target, event.at, undefined, false);
        note('Secret deleted', describeTarget(event.target));
        return;
      case 'corruptSecret': {
        const current = store.get(event.target);
        if (!current) return;
        const data = await this.corrupt(current.data, event.target, event.corruption, event.at);
        store.put(event.target, { ...current, data });
        if (event.target !== 'ca') this.checker.record(event.target, event.at, data, false);
        note(`Secret corrupted: ${event.corruption}`, describeTarget(event.target));
      }
    }
  }

  /** One reconcile at `at`: check expiry, plan, execute, apply, check trust, re-plan (must be empty). Returns the re-plan. */
  async reconcile(at: Instant): Promise<Plan> {
    this.reconciles++;
    const namespaces = this.store.providerNamespaces();
    const peers: PeerTarget[] = ['client', ...namespaces.map((namespace) => ({ namespace }))];
    this.violations.push(...this.checker.checkExpiry(at, peers, this.activeCa()));
    const plan = planRotation(this.store.snapshot(), { now: at, policy: this.policy, cache: this.cache });
    const phases = plan.ca?.phases ?? [];
    // A hard cut-over gives up trust on purpose: an emergency, or a CA made again from nothing.
    if (phases.includes('emergency') || (phases.includes('create') && (this.caPhases.create ?? 0) > 0)) this.checker.breakTrust();
    for (const write of await executePlan(plan, { crypto: this.crypto, cache: this.cache })) {
      this.store.apply(write);
      const target = describeTarget(write.target);
      if (write.target !== 'ca') this.violations.push(...this.checker.record(write.target, at, write.data, true));
      if (write.kind === 'ca') for (const p of write.phases ?? []) count(this.caPhases, p);
      else if (write.kind === 'bundle') this.bundleUpdates++;
      else count(this.byReason, write.reason!);
      if (write.kind !== 'bundle' || phases.length === 0) {
        this.timeline.push({ at, kind: write.kind, target, reason: write.reason, phases: write.phases, message: write.message ?? 'bundle updated' });
      }
    }
    this.violations.push(...this.checker.checkTrust(at, namespaces));
    const replan = planRotation(this.store.snapshot(), { now: at, policy: this.policy, cache: this.cache });
    if (!isPlanEmpty(replan)) {
      const what = [
        ...(replan.ca ? [`CA ${replan.ca.phases.join('+')}`] : []),
        ...replan.leaves.map((l) => `${describeTarget(l.target)}: ${l.reason}`),
        ...replan.bundles.map((b) => `bundle ${describeTarget(b.target)}`),
      ];
      this.violations.push({ at, kind: 'idempotence', message: `re-planning right after applying is not empty: ${what.join(', ')}` });
    }
    return replan;
  }

  private activeCa(): CertificateView | undefined {
    const text = this.store.get('ca')?.data[SecretKeys.caCertificate];
    try {
      return typeof text === 'string' ? this.cache.parse(text) : undefined;
    } catch {
      return undefined;
    }
  }

  private async corrupt(data: SecretData, target: SecretTarget, corruption: Corruption, at: Instant): Promise<SecretData> {
    const garbage = '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n';
    if (corruption === 'emptyData') return {};
    if (corruption === 'garbage' || target === 'ca') {
      return target === 'ca'
        ? { ...data, [SecretKeys.caCertificate]: garbage, [SecretKeys.caPrivateKey]: 'garbage' }
        : { ...data, [SecretKeys.certificate]: garbage };
    }
    this.foreign ??= await issueCa({ crypto: this.crypto, policy: this.policy, now: at }, { commonName: 'someone-elses-ca' });
    if (corruption === 'foreignBundle') return { ...data, [SecretKeys.caCertificate]: this.foreign.certificate.pem };
    const names = typeof target === 'string' ? ['intruder'] : namespaceDnsNames([{ namespace: target.namespace, name: 'intruder' }], this.policy.clusterDomain);
    const leaf = await issueServerLeaf({ crypto: this.crypto, policy: this.policy, now: at }, this.foreign, names);
    return { ...data, [SecretKeys.certificate]: leaf.certificate.pem, [SecretKeys.privateKey]: leaf.privateKeyPem };
  }
}

/** What to simulate. */
export interface SimulationOptions {
  /** The policy under test, from {@link resolvePolicy}. */
  readonly policy: Policy;
  /** Key generation and signing, e.g. createNodeCryptoBackend() from \@eso-mtls/core/node. */
  readonly crypto: CryptoBackend;
  /** Labelled Services at the start. */
  readonly services: readonly { readonly namespace: string; readonly name: string }[];
  /** Simulated start instant (default 2026-01-01T00:00:00Z). */
  readonly start?: Instant;
  /** How long to simulate. */
  readonly duration: Duration;
  /** What happens to the cluster along the way, in any order. */
  readonly events?: readonly SimulationEvent[];
  /** A cache to share with the caller; a new one by default. */
  readonly cache?: CertificateCache;
  /** Told the simulated instant after each reconcile, e.g. to draw a progress line. */
  readonly onProgress?: (at: Instant) => void;
  /**
   * Stops the run between reconciles: simulate then resolves with what it simulated so far
   * (`summary.interrupted`, `summary.end` the last instant reconciled) and leaves no work behind.
   */
  readonly signal?: AbortSignal;
  /**
   * Generate a fresh key for every leaf, as the controller does. Default false: leaves share a
   * pool of `DEFAULT_LEAF_KEY_POOL_SIZE` real keys per algorithm, because the simulation
   * judges times and phases, not key secrecy, and an RSA key per leaf makes years of RSA cost minutes.
   */
  readonly freshLeafKeys?: boolean;
}

/** Default simulated start: a fixed instant, so runs are reproducible. */
export const SIMULATION_EPOCH: Instant = Date.UTC(2026, 0, 1);

/**
 * Runs the planner over simulated time with an in-memory store: reconciles at each event and at
 * each plan's nextDueAt (nothing can change in between, so the 10-minute safety net is skipped),
 * checks trust and expiry throughout, and returns the timeline and its summary. Leaves share a
 * small pool of real keys unless `freshLeafKeys` is set; `signal` stops the run, which then
 * resolves with the part simulated so far.
 */
export async function simulate(options: SimulationOptions): Promise<SimulationResult> {
  const { signal } = options;
  const pool = options.freshLeafKeys === true ? undefined : new LeafKeyPool(options.crypto.leafKeys ?? options.crypto.signer);
  const crypto = pool === undefined ? options.crypto : { ...options.crypto, leafKeys: pool };
  const cluster = new SimulatedCluster(options.policy, crypto, options.cache);
  const byNamespace = new Map<string, string[]>();
  for (const s of options.services) byNamespace.set(s.namespace, [...(byNamespace.get(s.namespace) ?? []), s.name]);
  for (const [namespace, names] of byNamespace)
    cluster.store.setServices(
      namespace,
      names.map((name) => ({ name })),
    );
  const start = options.start ?? SIMULATION_EPOCH;
  const end = start + options.duration;
  const events = [...(options.events ?? [])].sort((a, b) => a.at - b.at);
  let pending = 0;
  let at = start;
  // The last instant reconciled: where an abort leaves the timeline (the start if none was).
  let reached = start;
  while (at <= end) {
    if (signal?.aborted === true) break;
    while (pending < events.length && events[pending]!.at <= at) await cluster.applyEvent(events[pending++]!);
    const replan = await cluster.reconcile(at);
    reached = at;
    options.onProgress?.(at);
    const next = Math.min(replan.nextDueAt ?? Infinity, events[pending]?.at ?? Infinity);
    if (next > end) break;
    at = Math.max(next, at + 1000);
  }
  const leaves = cluster.timeline.filter((e) => e.kind === 'serverLeaf' || e.kind === 'clientLeaf').length;
  const interrupted = signal?.aborted === true;
  return {
    timeline: cluster.timeline,
    summary: {
      start,
      end: interrupted ? reached : end,
      interrupted,
      reconciles: cluster.reconciles,
      byReason: cluster.byReason,
      caPhases: cluster.caPhases,
      bundleUpdates: cluster.bundleUpdates,
      serverIssuances: cluster.timeline.filter((e) => e.kind === 'serverLeaf').length,
      clientIssuances: cluster.timeline.filter((e) => e.kind === 'clientLeaf').length,
      minRemainingValidity: cluster.checker.minRemaining,
      violations: cluster.violations,
      leafKeys: pool?.report() ?? { pooled: false, poolSize: 0, generated: leaves, handedOut: leaves },
    },
  };
}
