import {
  type BundleUpdate,
  type Instant,
  type LeafIssuance,
  type MaterializedCa,
  type Plan,
  type RotationReason,
  type SecretTarget,
  type SecretWrite,
  describeTarget,
  materializeBundle,
  materializeCaChange,
  materializeLeaf,
  truncate,
} from '@eso-mtls/core';
import type { V1Secret } from '@kubernetes/client-node';
import type { RoundDependencies, RoundResult } from './round.js';
import type { WriteOutcome } from './secret-writer.js';
import { type ServiceDirectory, servicesFields } from '../events/service-directory.js';
import type { BuiltSnapshot } from './snapshot-builder.js';

type Counts = { -readonly [K in keyof Omit<RoundResult, 'plan'>]: number };

/**
 * The writes of one reconcile: the CA first, then leaves and bundles with bounded concurrency.
 * Each outcome of a write has its own small method, and every failure (key generation, signing,
 * writing) goes through one accounting path per kind: {@link leafFailed} and {@link caFailed}.
 */
export class RoundWrites {
  private readonly counts: Counts = { written: 0, stale: 0, failed: 0, fenced: 0 };
  // Set by the first fenced write or closed fence: nothing more is generated or sent this round.
  private halted = false;
  /** The CAs after the plan, once the CA write (if any) has landed: what signs pod certificates. */
  signing: MaterializedCa | undefined;
  /** Namespaces that refused a write because they are being deleted, with the apiserver's message. */
  readonly terminating = new Map<string, string>();

  constructor(
    private readonly deps: RoundDependencies,
    private readonly built: BuiltSnapshot,
    private readonly plan: Plan,
    private readonly services: ServiceDirectory,
    private readonly clock: () => Instant,
  ) {}

  /** Writes the plan; rejects only when the CA cannot be generated or signed (the reconciler retries). */
  async run(): Promise<RoundResult> {
    // A CA we leave alone after a conflict is not generated; nothing it would sign is written.
    if (this.plan.ca && this.deps.conflicts?.holds('ca', this.clock())) return this.result();
    const ca = await this.materializeCa();
    if (ca.write && (await this.send(ca.write)).kind !== 'written') {
      // Leaves signed by a CA that is not stored would be trusted by nobody: stop here.
      return this.result();
    }
    if (ca.write) this.deps.status?.recordCa(ca);
    this.signing = ca;
    const limiter = this.deps.writeLimiter;
    const tasks = [
      ...this.plan.leaves.map((issuance) => limiter.run(() => this.issue(issuance, ca))),
      ...this.plan.bundles.map((update) => limiter.run(() => this.rewriteBundle(update, ca))),
    ];
    for (const r of await Promise.allSettled(tasks)) {
      if (r.status === 'fulfilled') continue;
      // Every expected failure is accounted for in its task; this is a bug, still retried.
      this.counts.failed++;
      this.deps.logger.error({ error: errorText(r.reason) }, 'unexpected failure in a reconcile; retrying');
    }
    return this.result();
  }

  private result(): RoundResult {
    return { plan: this.plan, ...this.counts };
  }

  private ctx() {
    return { crypto: this.deps.crypto, now: this.clock() };
  }

  private async materializeCa(): Promise<MaterializedCa> {
    try {
      return await materializeCaChange(this.plan, this.ctx());
    } catch (e) {
      // The reconciler retries with backoff; operators see the counter, the Event and the log line.
      this.caFailed('generating or signing', this.plan.ca?.reason, errorText(e), undefined);
      throw e;
    }
  }

  private async issue(issuance: LeafIssuance, ca: MaterializedCa): Promise<void> {
    if (this.halted || !this.deps.writesAllowed()) {
      this.halted = true;
      this.counts.fenced++;
      return;
    }
    if (this.deps.conflicts?.holds(issuance.target, this.clock())) return;
    let write: SecretWrite;
    try {
      write = await materializeLeaf(this.plan, issuance, ca, this.ctx());
    } catch (e) {
      this.counts.failed++;
      this.leafFailed(issuance, 'issuing', errorText(e), undefined);
      return;
    }
    await this.send(write);
  }

  private async rewriteBundle(update: BundleUpdate, ca: MaterializedCa): Promise<void> {
    if (this.halted) {
      this.counts.fenced++;
      return;
    }
    await this.send(materializeBundle(update, ca, this.clock()));
  }

  /** Sends one write; each outcome is accounted for by its own method. */
  private async send(write: SecretWrite): Promise<WriteOutcome> {
    // Held after a conflict: not written, not a failure; the hold ends within one reconcile interval.
    if (this.deps.conflicts?.holds(write.target, this.clock())) return { kind: 'fenced' };
    const outcome = await this.deps.writer.write(write, this.existing(write.target));
    const namespace = typeof write.target === 'object' ? write.target.namespace : undefined;
    switch (outcome.kind) {
      case 'written':
        if (namespace !== undefined) this.deps.refusals?.written(namespace);
        this.written(write, outcome.secret);
        break;
      case 'stale':
        await this.stale(write, outcome.status);
        break;
      case 'fenced':
        this.counts.fenced++;
        this.halted = true;
        break;
      case 'terminating':
        // Expected while a namespace goes away: no failure counted, no Event, no retry; the round logs it once.
        this.terminating.set(outcome.namespace, outcome.message);
        break;
      case 'failed':
        this.counts.failed++;
        // A refusal retrying cannot change: the CA rotation stops waiting for this namespace after a grace.
        if (namespace !== undefined) this.deps.refusals?.failed(namespace, outcome.code, outcome.message, this.existing(write.target), this.clock());
        if (write.kind === 'ca') this.caFailed('writing', write.reason, errorText(outcome.message), outcome.code);
        else this.leafFailed(write, 'writing', errorText(outcome.message), outcome.code);
        break;
    }
    return outcome;
  }

  /** A write that landed: the cache, the ledger, the metrics view and hooks, then what it tells people. */
  private written(write: SecretWrite, secret: V1Secret): void {
    const { ledger, hooks, logger } = this.deps;
    this.counts.written++;
    this.informerOf(write.target).cacheAhead(secret);
    this.deps.conflicts?.wrote(write.target, secret, this.clock());
    if (write.kind !== 'ca') ledger.record(write.target);
    this.deps.status?.recordWrite(write);
    hooks.onWrite?.(write);
    const target = describeTarget(write.target);
    switch (write.kind) {
      case 'ca':
        logger.info({ phases: write.phases, reason: write.reason, notAfter: iso(write.notAfter) }, `CA Secret written: ${write.message ?? ''}`);
        return;
      case 'bundle':
        logger.info({ target }, 'trust bundle (ca.crt) rewritten');
        return;
      case 'clientLeaf':
        logger.info({ target, reason: write.reason, notAfter: iso(write.notAfter) }, `certificate issued: ${write.message ?? ''}`);
        return;
      case 'serverLeaf':
        this.serverLeafWritten(write);
    }
  }

  // A rotation count per labelled Service (the metric is per Service), but one log line and at most
  // MAX_SERVICES_REPORTED Events per write: the Services share the Secret, so it is one change.
  private serverLeafWritten(write: SecretWrite): void {
    const { writer, hooks, events, logger } = this.deps;
    const namespace = (write.target as { namespace: string }).namespace;
    const target = describeTarget(write.target);
    const fields = servicesFields(write.services, write.promptedBy);
    logger.info({ target, namespace, ...fields, reason: write.reason, notAfter: iso(write.notAfter) }, `certificate issued: ${write.message ?? ''}`);
    if (!write.reason) return;
    hooks.onRotation?.(namespace, write.services, write.reason);
    const issued = write.reason === 'initial';
    const text = `${issued ? 'Issued' : 'Re-issued'} certificate in Secret ${writer.locate(write.target).name} (reason: ${write.reason}), valid until ${iso(write.notAfter)}${sharedBy(fields)}: ${write.message ?? ''}`;
    for (const ref of this.services.refs(namespace, fields.sample)) events.record(ref, 'Normal', issued ? 'Issued' : 'Rotated', text);
  }

  /** A write whose Secret moved on since it was planned: re-read it into the cache, so the next plan sees it. */
  private async stale(write: SecretWrite, status: Extract<WriteOutcome, { kind: 'stale' }>['status']): Promise<void> {
    const { writer, logger } = this.deps;
    const target = describeTarget(write.target);
    this.counts.stale++;
    logger.info({ target, status }, 'Secret changed since it was planned; re-reading it and planning again');
    try {
      const fresh = await writer.read(write.target);
      if (fresh) this.informerOf(write.target).cacheAhead(fresh);
    } catch (e) {
      logger.warn({ target, error: (e as Error).message }, 'could not re-read Secret after a conflict');
    }
  }

  /**
   * The one accounting path of a leaf or bundle that failed (key generation, signing, writing): the
   * failure counter of each labelled Service of the namespace, one log line naming how many and
   * which, and a Warning Event on the Services it names (at most MAX_SERVICES_REPORTED). The
   * client's leaf has no Service: one log line.
   */
  private leafFailed(
    what: { target: SecretTarget; reason?: RotationReason; services?: readonly string[]; promptedBy?: readonly string[] },
    stage: 'issuing' | 'writing',
    error: string,
    code: number | undefined,
  ): void {
    const { writer, hooks, events, logger } = this.deps;
    const target = describeTarget(what.target);
    const reason = what.reason ?? 'bundle';
    const message = stage === 'issuing' ? 'issuing a certificate failed' : 'writing Secret failed';
    if (typeof what.target === 'string') {
      logger.error({ target, reason, code, error }, message);
      return;
    }
    const namespace = what.target.namespace;
    // A bundle write names no Services; its namespace's are the ones whose provider is affected.
    const services = what.services?.length ? what.services : this.servicesOf(namespace);
    if (services.length === 0) {
      logger.error({ target, namespace, reason, code, error }, message);
      return;
    }
    const fields = servicesFields(services, what.promptedBy);
    logger.error({ target, namespace, ...fields, reason, code, error }, message);
    const secret = writer.locate(what.target).name;
    const text =
      stage === 'issuing'
        ? `Could not issue the certificate for Secret ${secret} (reason: ${reason})${sharedBy(fields)}: ${error}`
        : `Could not write Secret ${secret} (reason: ${reason})${sharedBy(fields)}: ${error}`;
    // Counter and Events together or not at all (a replica that lost its Lease leaves both to the new leader).
    events.reportFailure(() => hooks.onRotationFailure?.(namespace, services), this.services.refs(namespace, fields.sample), 'Failed', text);
  }

  /** The accounting path of a CA that could not be generated, signed or written: counter, Event on the CA Secret, log line. */
  private caFailed(stage: 'generating or signing' | 'writing', reason: string | undefined, error: string, code: number | undefined): void {
    const { writer, hooks, events, logger } = this.deps;
    const where = writer.locate('ca');
    logger.error({ target: 'ca', secret: `${where.namespace}/${where.name}`, reason, code, error }, `${stage} the CA failed`);
    const text =
      stage === 'writing'
        ? `Could not write the CA Secret (reason: ${reason ?? 'unknown'}): ${error}`
        : `Could not generate or sign a CA (reason: ${reason ?? 'unknown'}): ${error}; nothing is issued until this succeeds`;
    const uid = this.existing('ca')?.metadata?.uid;
    events.reportFailure(() => hooks.onCaRotationFailure?.(), [{ kind: 'Secret', namespace: where.namespace, name: where.name, uid }], 'Failed', text);
  }

  private existing(target: SecretTarget): V1Secret | undefined {
    return this.built.secrets.get(describeTarget(target));
  }

  private servicesOf(namespace: string): readonly string[] {
    return this.plan.status.namespaces.find((n) => n.namespace === namespace)?.services ?? [];
  }

  private informerOf(target: SecretTarget) {
    const { informers } = this.deps;
    return target === 'ca' ? informers.caSecret : target === 'client' ? informers.clientSecret : informers.providerSecrets;
  }
}

/** ` (shared by all 600 labelled Services of the namespace; this Event is on 10 of them)`, when the Events leave some out. */
function sharedBy({ services, sample }: { services: number; sample: readonly string[] }): string {
  return services > sample.length ? ` (shared by all ${services} labelled Services of the namespace; this Event is on ${sample.length} of them)` : '';
}

const MAX_ERROR = 1024;

/** An error's message for logs and Events, bounded: an apiserver's message may quote what it refused. */
function errorText(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  return truncate(text, MAX_ERROR);
}

const iso = (t: Instant | undefined): string | undefined => (t === undefined ? undefined : new Date(t).toISOString());
