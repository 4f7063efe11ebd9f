import {
  type CertificateCache, type Conflict, type CryptoBackend, type Instant, type MaterializedCa, type Plan, type Policy,
  type RotationReason, type SecretTarget, type SecretWrite, describeTarget, isPlanEmpty, materializeBundle,
  materializeCaChange, materializeLeaf, planRotation,
} from '@eso-mtls/core';
import type { V1Secret, V1Service } from '@kubernetes/client-node';
import type { CertificateStatusView } from './certificate-status.js';
import type { ClusterInformers } from './cluster-informers.js';
import type { EventRecorder, ServiceReference } from './event-recorder.js';
import type { IssuanceLedger } from './ledger.js';
import { Limiter } from './limiter.js';
import type { Logger } from './logger.js';
import type { SecretWriter, WriteOutcome } from './secret-writer.js';
import type { SnapshotBuilder } from './snapshot-builder.js';

/** Callbacks for metrics and tests; each must be cheap and must not throw. */
export interface AdapterHooks {
  /** A namespace's server certificate was issued and written (one call per issuance). */
  onRotation?(namespace: string, services: readonly string[], reason: RotationReason): void;
  /** A namespace's server certificate could not be issued or written, or its Secret is in conflict. */
  onRotationFailure?(namespace: string, services: readonly string[]): void;
  /** Every Secret write that succeeded: CA, client, server leaves and bundle updates. */
  onWrite?(write: SecretWrite): void;
}

/** What one reconcile did. */
export interface RoundResult {
  readonly plan: Plan;
  /** Secrets written. */
  readonly written: number;
  /** Writes refused because the Secret moved on (409, or 404 on update); a re-plan follows. */
  readonly stale: number;
  /** Writes that failed otherwise (403, 422, 5xx, network); retried with backoff. */
  readonly failed: number;
  /** Writes not sent because writesAllowed() turned false. */
  readonly fenced: number;
}

/** Everything a round needs. */
export interface RoundDependencies {
  readonly informers: ClusterInformers;
  readonly builder: SnapshotBuilder;
  readonly writer: SecretWriter;
  readonly events: EventRecorder;
  readonly ledger: IssuanceLedger;
  readonly policy: Policy;
  readonly cache: CertificateCache;
  readonly crypto: CryptoBackend;
  readonly logger: Logger;
  readonly hooks: AdapterHooks;
  readonly writeLimiter: Limiter;
  /** The Secret fence: checked again before each key is generated, so a closing fence wastes no keygen. */
  readonly writesAllowed: () => boolean;
  /** The metrics view: given each plan as it is made, then the CA and each leaf as its write lands. */
  readonly status?: CertificateStatusView;
}

/**
 * One reconcile: snapshot the caches, plan, then write the CA first, then leaves and bundles with
 * bounded concurrency. A write whose Secret moved on re-reads that Secret into the cache and
 * counts as stale, so the caller plans again; nothing signed by an unwritten CA is ever written.
 */
export class ReconcileRound {
  private readonly reported = new Map<string, { message: string; at: Instant }>();

  constructor(private readonly deps: RoundDependencies) {}

  /** Plans at `clock()` and writes; each write is issued and stamped at the clock's time of writing. */
  async run(clock: () => Instant): Promise<RoundResult> {
    const { builder, policy, cache, logger } = this.deps;
    const built = builder.build();
    const now = clock();
    const plan = planRotation(built.snapshot, { now, policy, cache });
    this.deps.status?.update(plan.status);
    const counts = { written: 0, stale: 0, failed: 0, fenced: 0 };
    const serviceRefs = (namespace: string, names: readonly string[]): ServiceReference[] => {
      const byName = new Map((built.services.get(namespace) ?? []).map((s: V1Service) => [s.metadata?.name, s]));
      return names.map((name) => ({ namespace, name, uid: byName.get(name)?.metadata?.uid }));
    };
    this.reportConflicts(plan.conflicts, now, serviceRefs);
    for (const w of plan.waiting) logger.info({ target: describeTarget(w.target), reason: w.reason }, w.message);
    if (isPlanEmpty(plan)) return { plan, ...counts };

    const existing = (target: SecretTarget): V1Secret | undefined => built.secrets.get(describeTarget(target));
    const ctx = () => ({ crypto: this.deps.crypto, now: clock() });
    const ca: MaterializedCa = await materializeCaChange(plan, ctx());
    if (ca.write) {
      const outcome = await this.send(ca.write, existing('ca'), counts, serviceRefs);
      if (outcome.kind !== 'written') {
        // Leaves signed by a CA that is not stored would be trusted by nobody: stop here.
        return { plan, ...counts };
      }
      logger.info({ phases: ca.write.phases, reason: ca.write.reason, notAfter: iso(ca.write.notAfter) }, `CA Secret written: ${ca.write.message ?? ''}`);
      this.deps.status?.recordCa(ca);
    }

    const limiter = this.deps.writeLimiter;
    let halted = false;
    const tasks: Promise<void>[] = [];
    for (const issuance of plan.leaves) {
      tasks.push(limiter.run(async () => {
        if (halted || !this.deps.writesAllowed()) {
          halted = true;
          counts.fenced++;
          return;
        }
        const write = await materializeLeaf(plan, issuance, ca, ctx());
        const outcome = await this.send(write, existing(issuance.target), counts, serviceRefs);
        if (outcome.kind === 'fenced') halted = true;
      }));
    }
    for (const update of plan.bundles) {
      tasks.push(limiter.run(async () => {
        if (halted) {
          counts.fenced++;
          return;
        }
        const outcome = await this.send(materializeBundle(update, ca, clock()), existing(update.target), counts, serviceRefs);
        if (outcome.kind === 'fenced') halted = true;
      }));
    }
    const results = await Promise.allSettled(tasks);
    for (const r of results) {
      if (r.status === 'rejected') {
        counts.failed++;
        logger.error({ error: (r.reason as Error)?.message ?? String(r.reason) }, 'issuing a certificate failed');
      }
    }
    return { plan, ...counts };
  }

  /** Sends one write and accounts for it: cache, ledger, Events, hooks, logs. */
  private async send(write: SecretWrite, current: V1Secret | undefined, counts: { written: number; stale: number; failed: number; fenced: number },
    serviceRefs: (namespace: string, names: readonly string[]) => ServiceReference[]): Promise<WriteOutcome> {
    const { writer, informers, ledger, events, hooks, logger } = this.deps;
    const target = describeTarget(write.target);
    const namespace = typeof write.target === 'object' ? write.target.namespace : undefined;
    const outcome = await writer.write(write, current);
    const informer = write.target === 'ca' ? informers.caSecret : write.target === 'client' ? informers.clientSecret : informers.providerSecrets;
    switch (outcome.kind) {
      case 'written': {
        counts.written++;
        informer.observe(outcome.secret);
        if (write.kind !== 'ca') ledger.record(write.target);
        this.deps.status?.recordWrite(write);
        hooks.onWrite?.(write);
        if (write.kind === 'bundle') {
          logger.info({ target }, 'trust bundle (ca.crt) rewritten');
        } else if (write.kind !== 'ca') {
          // One line per labelled Service, as the rotation counter counts, so logs and metrics agree.
          for (const fields of perService(namespace, write)) {
            logger.info({ target, ...fields, reason: write.reason, notAfter: iso(write.notAfter) }, `certificate issued: ${write.message ?? ''}`);
          }
        }
        if (namespace && write.kind === 'serverLeaf' && write.reason) {
          hooks.onRotation?.(namespace, write.services, write.reason);
          const eventReason = write.reason === 'initial' ? 'Issued' : 'Rotated';
          const text = `${eventReason === 'Issued' ? 'Issued' : 'Re-issued'} certificate in Secret ${writer.locate(write.target).name} (reason: ${write.reason}), valid until ${iso(write.notAfter)}: ${write.message ?? ''}`;
          for (const ref of serviceRefs(namespace, write.services)) events.record(ref, 'Normal', eventReason, text);
        }
        break;
      }
      case 'stale': {
        counts.stale++;
        logger.info({ target, status: outcome.status }, 'Secret changed since it was planned; re-reading it and planning again');
        try {
          const fresh = await writer.read(write.target);
          if (fresh) informer.observe(fresh);
        } catch (e) {
          logger.warn({ target, error: (e as Error).message }, 'could not re-read Secret after a conflict');
        }
        break;
      }
      case 'fenced':
        counts.fenced++;
        break;
      case 'failed': {
        counts.failed++;
        for (const fields of perService(namespace, write)) {
          logger.error({ target, ...fields, reason: write.reason, code: outcome.code, error: outcome.message }, 'writing Secret failed');
        }
        if (namespace && write.kind === 'serverLeaf') {
          hooks.onRotationFailure?.(namespace, write.services);
          const text = `Could not write Secret ${writer.locate(write.target).name} (reason: ${write.reason ?? 'bundle'}): ${outcome.message}`;
          for (const ref of serviceRefs(namespace, write.services)) events.record(ref, 'Warning', 'Failed', text);
        }
        break;
      }
    }
    return outcome;
  }

  // A conflict persists until a human acts: report it when it first appears or changes, and again
  // once per reconcile interval, not on every event-driven reconcile.
  private reportConflicts(conflicts: readonly Conflict[], now: Instant,
    serviceRefs: (namespace: string, names: readonly string[]) => ServiceReference[]): void {
    const { logger, hooks, events, policy } = this.deps;
    const current = new Set<string>();
    for (const c of conflicts) {
      const key = `${describeTarget(c.target)}|${c.services.join(',')}`;
      current.add(key);
      const last = this.reported.get(key);
      if (last && last.message === c.message && now - last.at < policy.reconcileInterval) continue;
      this.reported.set(key, { message: c.message, at: now });
      logger.warn({ target: describeTarget(c.target), services: c.services }, `conflict: ${c.message}`);
      if (typeof c.target === 'object' && c.services.length > 0) {
        hooks.onRotationFailure?.(c.target.namespace, c.services);
        for (const ref of serviceRefs(c.target.namespace, c.services)) events.record(ref, 'Warning', 'Conflict', c.message);
      }
    }
    for (const key of this.reported.keys()) if (!current.has(key)) this.reported.delete(key);
  }
}

/** The namespace/service fields of a write's log lines: one set per labelled Service of a server leaf. */
function perService(namespace: string | undefined, write: SecretWrite): { namespace?: string; service?: string }[] {
  if (namespace && write.kind === 'serverLeaf' && write.services.length > 0) return write.services.map((service) => ({ namespace, service }));
  return [namespace ? { namespace } : {}];
}

const iso = (t: Instant | undefined): string | undefined => (t === undefined ? undefined : new Date(t).toISOString());
