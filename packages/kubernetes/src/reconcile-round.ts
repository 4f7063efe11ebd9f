import {
  type CertificateCache, type CryptoBackend, type Instant, type MaterializedCa, type Plan, type Policy,
  type RotationReason, type SecretTarget, type SecretWrite, describeTarget, isPlanEmpty, materializeBundle,
  materializeCaChange, materializeLeaf, planRotation,
} from '@eso-mtls/core';
import type { V1Secret, V1Service } from '@kubernetes/client-node';
import type { CertificateStatusView } from './certificate-status.js';
import type { ClusterInformers } from './cluster-informers.js';
import type { EventRecorder } from './event-recorder.js';
import type { IssuanceLedger } from './ledger.js';
import { Limiter } from './limiter.js';
import type { Logger } from './logger.js';
import type { SecretWriter, WriteOutcome } from './secret-writer.js';
import type { SnapshotBuilder } from './snapshot-builder.js';
import { type ServiceRefs, StandingReports } from './standing-reports.js';

/** Callbacks for metrics and tests; each must be cheap and must not throw. */
export interface AdapterHooks {
  /** A namespace's server certificate was issued and written (one call per issuance). */
  onRotation?(namespace: string, services: readonly string[], reason: RotationReason): void;
  /**
   * A namespace's server certificate could not be issued (key generation, signing) or written, its
   * trust bundle could not be written, or its Secret is in conflict.
   */
  onRotationFailure?(namespace: string, services: readonly string[]): void;
  /** A CA could not be generated or signed, or the CA Secret could not be written. */
  onCaRotationFailure?(): void;
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
  private readonly reports: StandingReports;

  constructor(private readonly deps: RoundDependencies) {
    this.reports = new StandingReports(deps.logger, deps.events, deps.hooks, deps.policy.reconcileInterval);
  }

  /** Plans at `clock()` and writes; each write is issued and stamped at the clock's time of writing. */
  async run(clock: () => Instant): Promise<RoundResult> {
    const { builder, policy, cache, logger } = this.deps;
    const built = builder.build();
    const now = clock();
    const plan = planRotation(built.snapshot, { now, policy, cache });
    this.deps.status?.update(plan);
    const counts = { written: 0, stale: 0, failed: 0, fenced: 0 };
    const serviceRefs: ServiceRefs = (namespace, names) => {
      const byName = new Map((built.services.get(namespace) ?? []).map((s: V1Service) => [s.metadata?.name, s]));
      return names.map((name) => ({ namespace, name, uid: byName.get(name)?.metadata?.uid }));
    };
    this.reports.report(plan, now, serviceRefs);
    if (isPlanEmpty(plan)) return { plan, ...counts };

    const existing = (target: SecretTarget): V1Secret | undefined => built.secrets.get(describeTarget(target));
    const failures: FailureAccounting = {
      serviceRefs,
      // A bundle write names no Services; its namespace's are the ones whose provider is affected.
      servicesOf: (namespace) => plan.status.namespaces.find((n) => n.namespace === namespace)?.services ?? [],
      caSecretUid: existing('ca')?.metadata?.uid,
    };
    const ctx = () => ({ crypto: this.deps.crypto, now: clock() });
    let ca: MaterializedCa;
    try {
      ca = await materializeCaChange(plan, ctx());
    } catch (e) {
      // The reconciler retries with backoff; operators see the counter, the Event and this line.
      this.caFailed('generating or signing', plan.ca?.reason, errorText(e), undefined, failures);
      throw e;
    }
    if (ca.write) {
      const outcome = await this.send(ca.write, existing('ca'), counts, failures);
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
        let write: SecretWrite;
        try {
          write = await materializeLeaf(plan, issuance, ca, ctx());
        } catch (e) {
          counts.failed++;
          this.leafFailed({ target: issuance.target, reason: issuance.reason, services: issuance.services }, 'issuing', errorText(e), undefined, failures);
          return;
        }
        const outcome = await this.send(write, existing(issuance.target), counts, failures);
        if (outcome.kind === 'fenced') halted = true;
      }));
    }
    for (const update of plan.bundles) {
      tasks.push(limiter.run(async () => {
        if (halted) {
          counts.fenced++;
          return;
        }
        const outcome = await this.send(materializeBundle(update, ca, clock()), existing(update.target), counts, failures);
        if (outcome.kind === 'fenced') halted = true;
      }));
    }
    const results = await Promise.allSettled(tasks);
    for (const r of results) {
      if (r.status === 'rejected') {
        // Every expected failure is accounted for in its task; this is a bug, still retried.
        counts.failed++;
        logger.error({ error: errorText(r.reason) }, 'unexpected failure in a reconcile; retrying');
      }
    }
    return { plan, ...counts };
  }

  /** Sends one write and accounts for it: cache, ledger, Events, hooks, logs. */
  private async send(write: SecretWrite, current: V1Secret | undefined, counts: { written: number; stale: number; failed: number; fenced: number },
    failures: FailureAccounting): Promise<WriteOutcome> {
    const { serviceRefs } = failures;
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
        if (write.kind === 'ca') this.caFailed('writing', write.reason, errorText(outcome.message), outcome.code, failures);
        else this.leafFailed(write, 'writing', errorText(outcome.message), outcome.code, failures);
        break;
      }
    }
    return outcome;
  }

  /**
   * The one accounting path of a leaf or bundle that failed (key generation, signing, writing): the
   * failure counter of each labelled Service of the namespace, a Warning Event on each, and one log
   * line per Service. The client's leaf has no Service: one log line.
   */
  private leafFailed(what: { target: SecretTarget; reason?: RotationReason; services?: readonly string[] },
    stage: 'issuing' | 'writing', error: string, code: number | undefined, failures: FailureAccounting): void {
    const { writer, hooks, events, logger } = this.deps;
    const target = describeTarget(what.target);
    const secret = writer.locate(what.target).name;
    const reason = what.reason ?? 'bundle';
    const message = stage === 'issuing' ? 'issuing a certificate failed' : 'writing Secret failed';
    if (typeof what.target === 'string') {
      logger.error({ target, reason, code, error }, message);
      return;
    }
    const namespace = what.target.namespace;
    const services = what.services?.length ? what.services : failures.servicesOf(namespace);
    for (const service of services) logger.error({ target, namespace, service, reason, code, error }, message);
    if (services.length === 0) {
      logger.error({ target, namespace, reason, code, error }, message);
      return;
    }
    hooks.onRotationFailure?.(namespace, services);
    const text = stage === 'issuing'
      ? `Could not issue the certificate for Secret ${secret} (reason: ${reason}): ${error}`
      : `Could not write Secret ${secret} (reason: ${reason}): ${error}`;
    for (const ref of failures.serviceRefs(namespace, services)) events.record(ref, 'Warning', 'Failed', text);
  }

  /** The accounting path of a CA that could not be generated, signed or written: counter, Event on the CA Secret, log line. */
  private caFailed(stage: 'generating or signing' | 'writing', reason: string | undefined, error: string, code: number | undefined, failures: FailureAccounting): void {
    const { writer, hooks, events, logger } = this.deps;
    const where = writer.locate('ca');
    hooks.onCaRotationFailure?.();
    logger.error({ target: 'ca', secret: `${where.namespace}/${where.name}`, reason, code, error }, `${stage} the CA failed`);
    const text = stage === 'writing'
      ? `Could not write the CA Secret (reason: ${reason ?? 'unknown'}): ${error}`
      : `Could not generate or sign a CA (reason: ${reason ?? 'unknown'}): ${error}; nothing is issued until this succeeds`;
    events.record({ kind: 'Secret', namespace: where.namespace, name: where.name, uid: failures.caSecretUid }, 'Warning', 'Failed', text);
  }
}

/** The namespace/service fields of a write's log lines: one set per labelled Service of a server leaf. */
function perService(namespace: string | undefined, write: SecretWrite): { namespace?: string; service?: string }[] {
  if (namespace && write.kind === 'serverLeaf' && write.services.length > 0) return write.services.map((service) => ({ namespace, service }));
  return [namespace ? { namespace } : {}];
}

/** What the failure accounting needs from the round. */
interface FailureAccounting {
  readonly serviceRefs: ServiceRefs;
  /** The labelled Services of a namespace in this round's plan. */
  readonly servicesOf: (namespace: string) => readonly string[];
  readonly caSecretUid?: string;
}

const MAX_ERROR = 1024;

/** An error's message for logs and Events, bounded: an apiserver's message may quote what it refused. */
function errorText(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  return text.length > MAX_ERROR ? `${text.slice(0, MAX_ERROR - 3)}...` : text;
}

const iso = (t: Instant | undefined): string | undefined => (t === undefined ? undefined : new Date(t).toISOString());
