import { CHAIN_REFUSAL_REASONS, type ChainRefusalReason, type UpstreamProblemReason, isDnsName } from '@eso-mtls/core';
import { Gauge, type Registry } from 'prom-client';
import { MetricLabelError } from './labels.js';
import { METRIC_NAMES } from './metric-names.js';

/*
 * The upstream CA source's gauges (docs/chaining-to-your-pki.md): which source is configured, and
 * each problem that stands, by the core's reason. Computed at scrape time from the controller's
 * view, like the other gauges, so a problem that ended has no series at the next scrape.
 */

/** The kind of an upstream CA source: a cert-manager issuer, or a Secret the user maintains. */
export type UpstreamKind = 'issuer' | 'secret';

/** The upstream CA source configured (the `source` and `kind` labels of `eso_ca_upstream_info`). */
export interface UpstreamSourceEntry {
  /** As the CA Secret records it (annotation `eso-mtls.io/ca-source`): `issuer/<Kind>/<name>` (the Kind with `.<group>` when not cert-manager's) or `secret/<name>`. */
  readonly source: string;
  /** Which kind of source it is (the `kind` label). */
  readonly kind: UpstreamKind;
}

/** One upstream problem that stands (the labels of `eso_ca_upstream_problem`). */
export interface UpstreamProblemEntry {
  /** The source it concerns, as in {@link UpstreamSourceEntry.source}. */
  readonly source: string;
  /** Why it gives no usable intermediate, or warns (the `reason` label): one of {@link UPSTREAM_PROBLEM_REASONS}. */
  readonly reason: UpstreamProblemReason;
}

// A Record, so the compiler refuses a list that misses a reason the core adds.
const NOT_CHAIN_REASONS: Readonly<Record<Exclude<UpstreamProblemReason, ChainRefusalReason>, true>> = {
  anchors_unreadable: true,
  source_unreadable: true,
  issuer_missing: true,
  issuer_not_ready: true,
  request_denied: true,
  request_failed: true,
  request_overdue: true,
  renewal_overdue: true,
  status_ca_mismatch: true,
};

/** Every reason the core names an upstream problem by: the only values of the problem gauge's `reason` label. */
export const UPSTREAM_PROBLEM_REASONS: readonly UpstreamProblemReason[] = Object.freeze([
  ...CHAIN_REFUSAL_REASONS,
  ...(Object.keys(NOT_CHAIN_REASONS) as (keyof typeof NOT_CHAIN_REASONS)[]),
]);

// Kubernetes spells a Kind in letters and digits, starting with a capital (at most 63 here).
const KIND = /^[A-Z][A-Za-z0-9]{0,62}$/;

/** True when `kind/name` part of an issuer source is a Kind (optionally `.group`) and an object name. */
function isIssuerPath(rest: string): boolean {
  const [kindAndGroup, name, ...extra] = rest.split('/');
  if (extra.length > 0 || name === undefined || !isDnsName(name)) return false;
  const dot = kindAndGroup!.indexOf('.');
  return dot < 0 ? KIND.test(kindAndGroup!) : KIND.test(kindAndGroup!.slice(0, dot)) && isDnsName(kindAndGroup!.slice(dot + 1));
}

/**
 * True when `source` is a source name of `kind` as the controller writes it. Each part is a
 * Kubernetes name, so the label is bounded (under 600 characters) and carries no free text.
 */
export function isUpstreamSource(source: unknown, kind: UpstreamKind): boolean {
  if (typeof source !== 'string') return false;
  if (kind === 'secret') return source.startsWith('secret/') && isDnsName(source.slice('secret/'.length));
  return source.startsWith('issuer/') && isIssuerPath(source.slice('issuer/'.length));
}

/** Why `source` cannot be a label, or undefined when it can: of either kind when `kind` is not given. */
function sourceFault(source: unknown, kind?: UpstreamKind): string | undefined {
  if (kind !== undefined && kind !== 'issuer' && kind !== 'secret') return `upstream kind ${JSON.stringify(kind)} is not issuer or secret`;
  const ok = kind === undefined ? isUpstreamSource(source, 'issuer') || isUpstreamSource(source, 'secret') : isUpstreamSource(source, kind);
  if (ok) return undefined;
  const shape = kind === 'secret' ? 'secret/<name>' : kind === 'issuer' ? 'issuer/<Kind>/<name>' : 'issuer/<Kind>/<name> or secret/<name>';
  return `upstream source ${JSON.stringify(typeof source === 'string' ? source.slice(0, 80) : source)} is not ${shape}`;
}

/** Registers the upstream gauges, read from `source` at each scrape, exported by the leader only. */
export function registerUpstreamGauges(o: {
  readonly registers: Registry[];
  readonly isLeader: () => boolean;
  readonly upstreamSource: () => UpstreamSourceEntry | undefined;
  readonly upstreamProblems: () => Iterable<UpstreamProblemEntry>;
  readonly report: (error: MetricLabelError) => void;
}): void {
  const skip = (why: string): void => o.report(new MetricLabelError(`${why}; entry skipped`));
  new Gauge({
    name: METRIC_NAMES.caUpstreamInfo,
    help: 'With an upstream CA source (--ca-issuer, --ca-from-secret): 1, labelled with the source (issuer/<Kind>/<name> or secret/<name>) and its kind (issuer, secret); absent with the self-signed CA. Exported by the leading controller only.',
    labelNames: ['source', 'kind'] as const,
    registers: o.registers,
    collect() {
      this.reset();
      if (!o.isLeader()) return;
      const entry = o.upstreamSource();
      if (entry === undefined) return;
      const fault = sourceFault(entry.source, entry.kind);
      if (fault === undefined) this.set({ source: entry.source, kind: entry.kind }, 1);
      else skip(fault);
    },
  });
  new Gauge({
    name: METRIC_NAMES.caUpstreamProblem,
    help: '1 for each problem of the upstream CA source that stands, by source and reason (a chain refusal such as no_anchor, too_short or key_mismatch; anchors_unreadable, source_unreadable, issuer_missing, issuer_not_ready, request_denied, request_failed, request_overdue, renewal_overdue; status_ca_mismatch, a warning only). The last good intermediate keeps signing; nothing falls back to a self-made root. Warning Event CaUpstreamProblem on the CA Secret. Absent once the problem ends. Exported by the leading controller only.',
    labelNames: ['source', 'reason'] as const,
    registers: o.registers,
    collect() {
      this.reset();
      if (!o.isLeader()) return;
      for (const { source, reason } of o.upstreamProblems()) {
        const fault =
          sourceFault(source) ??
          (UPSTREAM_PROBLEM_REASONS.includes(reason)
            ? undefined
            : `upstream problem reason ${JSON.stringify(String(reason).slice(0, 80))} is not one of ${UPSTREAM_PROBLEM_REASONS.join(', ')}`);
        if (fault === undefined) this.set({ source, reason }, 1);
        else skip(fault);
      }
    },
  });
}
