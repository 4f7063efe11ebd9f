import { type Instant, type MaterializedCa, describeTarget, isPlanEmpty, planRotation } from '@eso-mtls/core';
import { planContext } from '../installation/installation.js';
import type { RoundDependencies, RoundResult } from './round.js';
import { RoundWrites } from './round-writes.js';
import { ServiceDirectory } from '../events/service-directory.js';
import type { BuiltSnapshot } from './snapshot-builder.js';
import { PlanConditionReports } from './plan-condition-reports.js';
import { StandingStates } from './standing-states.js';
import type { WriteConflict } from './write-conflicts.js';

/**
 * A round that wrote nothing and failed does not plan its deferred leaves again a second later
 * (the plan's nextDueAt): it retries with the reconciler's backoff, like any failed round, so a
 * failing apiserver or signer is not asked for up to a bound's worth of keys every second.
 */
function withoutEagerRetry(result: RoundResult): RoundResult {
  const failedOnly = result.written === 0 && result.failed + result.stale + result.fenced > 0;
  return failedOnly && result.plan.deferred.length > 0 ? { ...result, plan: { ...result.plan, nextDueAt: undefined } } : result;
}
/**
 * One reconcile: snapshot the caches, plan, report what stands (conflicts, waiting leaves,
 * refusals), then write (see {@link RoundWrites}: the CA first, then leaves and bundles). A write
 * whose Secret moved on re-reads that Secret into the cache and counts as stale, so the caller
 * plans again; nothing signed by an unwritten CA is ever written.
 */
export class ReconcileRound {
  private readonly reports: PlanConditionReports;
  // When each trust bundle's problem was last reported (a CA follower's).
  private readonly bundleReports = new Map<string, Instant>();
  // Namespaces being deleted refuse every write of every round: logged once, when first seen.
  private readonly terminating = new StandingStates();

  constructor(private readonly deps: RoundDependencies) {
    const { esoNamespace, caSecretName, policy } = deps.installation;
    this.reports = new PlanConditionReports(deps.logger, deps.events, deps.hooks, policy.reconcileInterval, {
      kind: 'Secret',
      namespace: esoNamespace,
      name: caSecretName,
    });
  }

  /** Plans at `clock()` and writes; each write is issued and stamped at the clock's time of writing. */
  async run(clock: () => Instant): Promise<RoundResult> {
    const built = this.deps.builder.build();
    for (const conflict of this.deps.conflicts?.observe(built.secrets, clock()) ?? []) this.reportConflict(conflict);
    const result = await this.withUpstream(await this.planAndWrite(built, clock), built, clock);
    // The namespaces the plan leaves alone (no labelled Service) are the pruner's, from the same snapshot.
    await this.deps.pruner?.prune(built, clock(), this.deps.writesAllowed);
    return result;
  }

  private async planAndWrite(built: BuiltSnapshot, clock: () => Instant): Promise<RoundResult> {
    const { cache, caFollower } = this.deps;
    const now = clock();
    const observed = this.deps.refusals?.apply(built.snapshot) ?? built.snapshot;
    const upstream = this.deps.upstream?.observe(observed.caSecret);
    const snapshot = {
      ...observed,
      ...(caFollower ? { trustBundles: caFollower.observedBundles() } : {}),
      ...(upstream ? { upstream } : {}),
    };
    const plan = planRotation(snapshot, planContext(this.deps.installation, now, cache));
    this.deps.status?.update(plan);
    const services = new ServiceDirectory(built.services);
    this.reports.report(plan, now, services);
    // With pod certificates, or a CA key held by a caSigner (an HSM), an empty plan still reads the
    // CA it signs with, through the same accounting as a CA write: a token that stopped answering,
    // a wrong PIN or a deleted key is seen at the next reconcile (every reconcile interval at the
    // latest), not weeks later when a leaf next falls due.
    if (isPlanEmpty(plan) && !caFollower && !this.deps.crypto.caSigner) {
      this.reportTerminating(new Map(), now);
      return { plan, written: 0, stale: 0, failed: 0, fenced: 0 };
    }
    // Nothing is signed by a CA a write replaces: the follower gives the CA back first, and its
    // signatures in flight (at most its concurrency) are written before the CA write is sent.
    if (caFollower && plan.ca) await caFollower.withdraw();
    const writes = new RoundWrites(this.deps, built, plan, services, clock);
    const result = withoutEagerRetry(await writes.run());
    this.reportTerminating(writes.terminating, now);
    // The follower signs only with a CA that is stored: after the CA write landed, or when there was none.
    return caFollower && writes.signing ? this.handOver(result, writes.signing, clock) : result;
  }

  /**
   * With an upstream CA, after the writes: the request the plan asks for is sent (its key stored
   * in the CA Secret first), and requests no longer named are deleted. A CA Secret that moved on
   * counts as stale, so the reconciler plans again.
   */
  private async withUpstream(result: RoundResult, built: BuiltSnapshot, clock: () => Instant): Promise<RoundResult> {
    const { upstream, writesAllowed } = this.deps;
    if (!upstream || !writesAllowed()) return result;
    const caSecret = { state: built.snapshot.caSecret, object: built.secrets.get(describeTarget('ca')) };
    const acted = await upstream.act(result.plan, caSecret, clock());
    return { ...result, written: result.written + acted.written, stale: result.stale + acted.stale, failed: result.failed + acted.failed };
  }

  /**
   * One info line when a namespace first refuses a write because it is being deleted. Its writes
   * are tried again in later rounds without a word, and succeed if it comes back (created anew).
   */
  private reportTerminating(namespaces: ReadonlyMap<string, string>, now: Instant): void {
    const { report } = this.terminating.track(
      [...namespaces],
      ([namespace]) => namespace,
      () => '',
      now,
    );
    for (const [namespace, error] of report) {
      this.deps.logger.info({ namespace, error }, 'namespace is being deleted: nothing new is written in it (not a failure)');
    }
  }

  /** One log line, one count and one Warning Event on the Secret, per replaced write (so at most one per Secret and interval). */
  private reportConflict(c: WriteConflict): void {
    const { writer, logger, events, hooks, conflicts } = this.deps;
    const where = writer.locate(c.target);
    const ours = conflicts!.stamp;
    const secret = `${where.namespace}/${where.name}`;
    const afterSeconds = Math.max(0, Math.round((c.holdUntil - this.deps.installation.policy.reconcileInterval - c.ourWriteAt) / 1000));
    const samePolicy = c.writer.policy === ours.policy;
    hooks.onWriteConflict?.(where.component, where.namespace);
    logger.warn(
      {
        secret,
        namespace: where.namespace,
        writer: c.writer.identity,
        writerPolicy: c.writer.policy ?? null,
        identity: ours.identity,
        policy: ours.policy,
        holdUntil: new Date(c.holdUntil).toISOString(),
      },
      'another controller replaced a Secret this controller wrote: two controllers write this installation; this one leaves the Secret alone for one reconcile interval',
    );
    const text =
      `Secret ${secret}, written by ${ours.identity} (policy ${ours.policy}), was replaced within ${afterSeconds}s by ${c.writer.identity} ` +
      `(policy ${c.writer.policy ?? 'unknown'}${samePolicy ? ', the same' : ', a different one'}): two controllers write this installation's Secrets. ` +
      `${ours.identity} leaves it alone until ${new Date(c.holdUntil).toISOString()}. Stop one of them (docs/operations.md#esosecretwriteconflict).`;
    events.record({ kind: 'Secret', namespace: where.namespace, name: where.name, uid: c.secret.metadata?.uid }, 'Warning', 'WriteConflict', text);
  }

  /**
   * After the Secret writes, the CA follower's trust bundles follow the CA, then the CA is handed
   * over to it, to sign with beside the rounds (the round does not wait).
   */
  private async handOver(result: RoundResult, ca: MaterializedCa, clock: () => Instant): Promise<RoundResult> {
    const { caFollower, installation, logger, hooks, events, writesAllowed } = this.deps;
    if (!caFollower || !writesAllowed()) return result;
    const now = clock();
    const published = await caFollower.publish(ca, now);
    // Every failed write counts; a standing conflict once per reconcile interval, like the Secrets'.
    // Either is logged and recorded at most once per interval and bundle, so nothing floods. The
    // counter and the Event are decided together (reportFailure), as for the Secrets.
    const caSecret = { kind: 'Secret' as const, namespace: installation.esoNamespace, name: installation.caSecretName };
    for (const f of [...published.failed, ...published.conflicts]) {
      const conflict = published.conflicts.includes(f);
      const last = this.bundleReports.get(f.name);
      const due = last === undefined || now - last >= installation.policy.reconcileInterval;
      if (!due && conflict) continue;
      events.reportFailure(() => hooks.onCaRotationFailure?.(), due ? [caSecret] : [], conflict ? 'Conflict' : 'Failed', f.message);
      if (!due) continue;
      this.bundleReports.set(f.name, now);
      logger.warn({ trustBundle: f.name, error: f.message }, conflict ? `trust bundle conflict: ${f.message}` : 'publishing a trust bundle failed; retrying');
    }
    caFollower.use(ca);
    return { ...result, written: result.written + published.written, failed: result.failed + published.failed.length };
  }
}
