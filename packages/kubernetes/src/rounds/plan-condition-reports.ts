import {
  type Conflict,
  type DeferredLeaf,
  type ExcludedNamespace,
  type ExclusionReason,
  type Instant,
  type LeftBehindNamespace,
  type Plan,
  type RefusalReason,
  type RefusedService,
  type UpstreamPlan,
  type UpstreamProblem,
  type WaitingLeaf,
  describeTarget,
} from '@eso-mtls/core';
import type { EventReason, EventRecorder } from '../events/event-recorder.js';
import type { InvolvedObject } from '../events/involved-object.js';
import type { Logger } from '../runtime/logger.js';
import type { RoundHooks } from './round.js';
import { type ServiceDirectory, servicesFields } from '../events/service-directory.js';
import { StandingStates } from './standing-states.js';

/** One waiting leaf as seen by one of its Services (the client's leaf has none). */
interface WaitingState {
  readonly leaf: WaitingLeaf;
  readonly namespace?: string;
  readonly service?: string;
}

const EXCLUSION_EVENT: Readonly<Record<ExclusionReason, EventReason>> = {
  cap: 'NamespaceNotServed',
  not_allowed: 'NamespaceNotAllowed',
};

const REFUSAL_EVENT: Readonly<Record<RefusalReason, EventReason>> = {
  rotate_request_too_large: 'RotateRequestRefused',
  certificate_too_large: 'NamesRefused',
};

/** Where an operator reads what to do about an upstream CA problem. */
const UPSTREAM_RUNBOOK = 'docs/operations.md#esocaupstreamproblem';

/**
 * What a plan reports that stands until something changes: conflicts, leaves waiting for a CA,
 * refused Services, namespaces left out by the cap, leaves deferred by the bound on issuances, and
 * the upstream CA source's problems. Each is logged (and given an Event on each of its Services) when it starts or
 * changes, with one summary line per reconcile interval while any stands; never once per round. A
 * conflict over a namespace's shared Secret is one fact: one line, and Events on the Services
 * reportedServices picks (at most MAX_SERVICES_REPORTED).
 */
export class PlanConditionReports {
  // A conflict counts as a failure: it is reported again each reconcile interval, so its alert holds.
  private readonly conflicts: StandingStates;
  private readonly waiting: StandingStates;
  private readonly refused: StandingStates;
  private readonly excluded: StandingStates;
  private readonly deferred: StandingStates;
  private readonly leftBehind: StandingStates;
  private readonly upstream: StandingStates;

  constructor(
    private readonly logger: Logger,
    private readonly events: Pick<EventRecorder, 'record' | 'reportFailure'>,
    private readonly hooks: RoundHooks,
    intervalMs: number,
    /** The CA Secret, where the upstream CA source's problems are recorded as Events; without it they are logged only. */
    private readonly caSecret?: InvolvedObject,
  ) {
    this.conflicts = new StandingStates({ repeatMs: intervalMs });
    this.waiting = new StandingStates({ summaryMs: intervalMs });
    this.refused = new StandingStates({ summaryMs: intervalMs });
    this.excluded = new StandingStates({ summaryMs: intervalMs });
    this.deferred = new StandingStates({ summaryMs: intervalMs });
    this.leftBehind = new StandingStates({ summaryMs: intervalMs });
    this.upstream = new StandingStates({ summaryMs: intervalMs });
  }

  /** Reports what changed in `plan` since the last call. */
  report(
    plan: Pick<Plan, 'conflicts' | 'waiting' | 'refused'> & Partial<Pick<Plan, 'excluded' | 'deferred' | 'leftBehind' | 'upstream'>>,
    now: Instant,
    services: ServiceDirectory,
  ): void {
    this.reportConflicts(plan.conflicts, now, services);
    this.reportWaiting(plan.waiting, now, services);
    this.reportRefused(plan.refused, now, services);
    this.reportExcluded(plan.excluded ?? [], now, services);
    this.reportDeferred(plan.deferred ?? [], now);
    this.reportLeftBehind(plan.leftBehind ?? [], now, services);
    // A plan without its upstream part judged none (the CA Secret is not ours): nothing started or ended.
    if (plan.upstream) this.reportUpstream(plan.upstream, now);
  }

  // An upstream problem stands until the issuer, the approver or the user's Secret changes: one line
  // and a Warning Event on the CA Secret when it starts (or its message changes), one line when it
  // ends; while any stands, one summary line per interval and each one's Event again, which the
  // recorder folds into its count (an Event expires after an hour; the problem may stand for days).
  private reportUpstream(upstream: UpstreamPlan, now: Instant): void {
    const { source, kind } = upstream;
    const problems = upstream.problems;
    const { report, ended, summarize } = this.upstream.track(
      problems,
      (p) => p.reason,
      (p) => p.message,
      now,
    );
    for (const p of report) {
      this.logger.warn({ source, kind, reason: p.reason }, `upstream CA problem: ${p.message}`);
      this.recordUpstream(source, p);
    }
    for (const reason of ended) this.logger.info({ source, kind, reason }, 'upstream CA problem resolved');
    // The round that reported every one of them has said it all: the first summary is an interval on.
    if (!summarize || report.length === problems.length) return;
    const reasons = [...new Set(problems.map((p) => p.reason))];
    const stand = reasons.length === 1 ? 'upstream CA problem stands' : 'upstream CA problems stand';
    this.logger.warn(
      { source, kind, problems: reasons.length, reasons, ...(upstream.wants ? { wants: upstream.wants } : {}) },
      `${reasons.length} ${stand} with ${source}: ${reasons.join(', ')} (${UPSTREAM_RUNBOOK})`,
    );
    for (const p of problems) if (!report.includes(p)) this.recordUpstream(source, p);
  }

  private recordUpstream(source: string, p: UpstreamProblem): void {
    if (!this.caSecret) return;
    this.events.record(this.caSecret, 'Warning', 'CaUpstreamProblem', `${source} (${p.reason}): ${p.message} (${UPSTREAM_RUNBOOK})`);
  }

  // A namespace the CA rotation went on without stays so until its Secret can be written: a Warning
  // Event on its Services and one line when it starts (or its reason changes), a line when it has
  // caught up, and one summary per interval. Each failed write is counted and recorded apart (Failed).
  private reportLeftBehind(leftBehind: readonly LeftBehindNamespace[], now: Instant, services: ServiceDirectory): void {
    const { report, ended, summarize } = this.leftBehind.track(
      leftBehind,
      (l) => l.namespace,
      (l) => `${l.reason}|${l.since}`,
      now,
    );
    for (const l of report) {
      const fields = servicesFields(l.services);
      this.logger.warn({ namespace: l.namespace, ...fields, reason: l.reason, since: iso(l.since) }, l.message);
      for (const ref of services.refs(l.namespace, fields.sample)) this.events.record(ref, 'Warning', 'LeftBehindByCaRotation', l.message);
    }
    for (const namespace of ended)
      this.logger.info({ namespace }, 'namespace no longer left behind by the CA rotation (its Secret was written, or it has no labelled Service)');
    if (summarize) {
      this.logger.warn(
        { namespaces: leftBehind.length, sample: leftBehind.slice(0, 10).map((l) => l.namespace) },
        `${leftBehind.length} provider namespaces left behind by the CA rotation: their Secret refuses our writes`,
      );
    }
  }

  // A namespace left out stays so until the cap, its label or the namespaces change: a Warning Event
  // on each of its Services when it starts (or its reason changes), a line when it ends, and one
  // summary per interval.
  private reportExcluded(excluded: readonly ExcludedNamespace[], now: Instant, services: ServiceDirectory): void {
    const { report, ended, summarize } = this.excluded.track(
      excluded,
      (e) => e.namespace,
      (e) => e.message,
      now,
    );
    for (const e of report) {
      this.logger.warn({ namespace: e.namespace, services: e.services.length, reason: e.reason }, `namespace not served: ${e.message}`);
      for (const ref of services.refs(e.namespace, e.services)) this.events.record(ref, 'Warning', EXCLUSION_EVENT[e.reason], e.message);
    }
    for (const namespace of ended) this.logger.info({ namespace }, 'namespace served again (or no longer labelled)');
    if (summarize) {
      const capped = excluded.filter((e) => e.reason === 'cap').length;
      this.logger.warn(
        { namespaces: excluded.length, cap: capped, notAllowed: excluded.length - capped },
        `${excluded.length} provider namespaces not served (${capped} by the cap on namespaces, ${excluded.length - capped} lacking the required namespace label)`,
      );
    }
  }

  // Deferral lasts a round or a few: no Event (a flood of Events is a flood too), one summary line
  // per interval with how many wait and why, so an operator sees a flood being worked through.
  private reportDeferred(deferred: readonly DeferredLeaf[], now: Instant): void {
    const { summarize } = this.deferred.track(
      deferred,
      (d) => describeTarget(d.target),
      (d) => d.reason,
      now,
    );
    if (!summarize) return;
    const byReason: Record<string, number> = {};
    for (const d of deferred) byReason[d.reason] = (byReason[d.reason] ?? 0) + 1;
    this.logger.info({ leaves: deferred.length, byReason }, `${deferred.length} certificates deferred to the next reconciles by the bound on issuances`);
  }

  private reportConflicts(conflicts: readonly Conflict[], now: Instant, services: ServiceDirectory): void {
    const { report } = this.conflicts.track(
      conflicts,
      (c) => `${describeTarget(c.target)}|${c.services.join(',')}`,
      (c) => c.message,
      now,
    );
    for (const c of report) {
      const fields = servicesFields(c.services);
      this.logger.warn({ target: describeTarget(c.target), ...fields }, `conflict: ${c.message}`);
      if (typeof c.target === 'object' && c.services.length > 0) {
        const namespace = c.target.namespace;
        this.events.reportFailure(() => this.hooks.onRotationFailure?.(namespace, c.services), services.refs(namespace, fields.sample), 'Conflict', c.message);
      }
    }
  }

  // During a recovery's wait nothing can be issued for up to the propagation delay: say so once per
  // Service, with the reason and until when, and then once per interval how many wait.
  private reportWaiting(waiting: readonly WaitingLeaf[], now: Instant, services: ServiceDirectory): void {
    const states: WaitingState[] = waiting.flatMap((leaf) =>
      typeof leaf.target === 'object' && leaf.services.length > 0
        ? leaf.services.map((service) => ({ leaf, namespace: (leaf.target as { namespace: string }).namespace, service }))
        : [{ leaf }],
    );
    const key = (s: WaitingState): string => `${describeTarget(s.leaf.target)}|${s.service ?? ''}`;
    const { report, summarize } = this.waiting.track(states, key, (s) => `${s.leaf.reason}|${iso(s.leaf.until) ?? ''}`, now);
    for (const { leaf, namespace, service } of report) {
      const until = iso(leaf.until);
      const text = `${leaf.message}; no CA signs until ${until ?? 'the new CA is activated'}, and the certificate is issued then`;
      this.logger.info({ target: describeTarget(leaf.target), namespace, service, reason: leaf.reason, until }, `waiting for the new CA: ${text}`);
      if (namespace && service) for (const ref of services.refs(namespace, [service])) this.events.record(ref, 'Warning', 'WaitingForCA', text);
    }
    if (summarize) {
      const until = waiting.map((w) => w.until).find((t) => t !== undefined);
      this.logger.info(
        { leaves: waiting.length, services: states.filter((s) => s.service).length, until: iso(until) },
        `${waiting.length} leaves waiting for the new CA`,
      );
    }
  }

  // The core's messages are bounded; the tenant's annotation value never reaches a log line or Event.
  private reportRefused(refused: readonly RefusedService[], now: Instant, services: ServiceDirectory): void {
    const key = (r: RefusedService): string => `${r.namespace}/${r.service}|${r.reason}`;
    const { report, ended, summarize } = this.refused.track(refused, key, (r) => r.message, now);
    for (const r of report) {
      this.logger.warn({ namespace: r.namespace, service: r.service, reason: r.reason }, `refused: ${r.message}`);
      for (const ref of services.refs(r.namespace, [r.service])) this.events.record(ref, 'Warning', REFUSAL_EVENT[r.reason], r.message);
    }
    for (const k of ended) {
      const [name, reason] = k.split('|');
      const [namespace, service] = name!.split('/');
      this.logger.info({ namespace, service, reason }, 'no longer refused');
    }
    if (summarize) this.logger.warn({ services: refused.length }, `${refused.length} Services refused`);
  }
}

// In whole seconds, as the bundle-written-at stamps it derives from: a sub-second shift is no change.
const iso = (t: Instant | undefined): string | undefined =>
  t === undefined ? undefined : new Date(Math.floor(t / 1000) * 1000).toISOString().replace('.000Z', 'Z');
