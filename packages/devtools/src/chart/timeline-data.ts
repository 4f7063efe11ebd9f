import type { CaPhase, Duration, Instant, Policy, RotationReason, TimelineEntry, Violation } from '@eso-mtls/core';

/** One write the chart draws: a simulate timeline entry, or a demo write stamped with its instant. */
export type ChartRecord = Pick<TimelineEntry, 'at' | 'kind' | 'target' | 'reason' | 'phases'>;

/** What a chart is drawn from: the records of a run, its policy and, for simulate, its summary. */
export interface ChartInput {
  /** The chart's title, e.g. the command that made the run. */
  readonly title: string;
  /** The run's first and last instants: the time axis. */
  readonly start: Instant;
  readonly end: Instant;
  /** Lifetimes that place each certificate's notBefore, notAfter and lookahead window. */
  readonly policy: Pick<Policy, 'caValidity' | 'caLookahead' | 'leafValidity' | 'leafLookahead' | 'notBeforeBackdate' | 'propagationDelay'>;
  /** Every write, in order; events are ignored. */
  readonly records: readonly ChartRecord[];
  /** simulate's minimum remaining validity of a certificate in use; drawn where it happened. */
  readonly minRemainingValidity?: Duration;
  /** What the invariant checker found; each is drawn in red at its instant. */
  readonly violations?: readonly Violation[];
  /** Leaf rows drawn one by one (client first); the rest share one aggregated row. Default {@link MAX_LEAF_ROWS}. */
  readonly maxLeafRows?: number;
}

/** A CA's phase: published but not signing, signing, or trusted only for the leaves it signed. */
export type CaPhaseName = 'prepare' | 'active' | 'retired';

/** One bar of a CA row. */
export interface CaPhaseBar {
  readonly row: string;
  readonly phase: CaPhaseName;
  readonly from: Instant;
  readonly to: Instant;
}

/** A certificate's validity (leaf bars) or lookahead window, on one of two lanes so successive ones do not hide each other. */
export interface ValidityBar {
  readonly row: string;
  readonly lane: number;
  readonly from: Instant;
  readonly to: Instant;
}

/** A label at the start of a CA phase too short to see at the chart's scale (prepare and retired usually last minutes). */
export interface CaPhaseLabel {
  readonly row: string;
  readonly phase: CaPhaseName;
  readonly at: Instant;
  readonly label: string;
}

/** A leaf issued, coloured by the rule that fired. */
export interface RotationMark {
  readonly row: string;
  readonly lane: number;
  readonly at: Instant;
  readonly reason: RotationReason;
}

/** Rotations of the aggregated rows, counted per time bucket and reason. */
export interface AggregatedRotations {
  readonly row: string;
  readonly at: Instant;
  readonly reason: RotationReason;
  readonly count: number;
}

/** The smallest remaining validity: from the instant the certificate may last be served to its notAfter. */
export interface MinRemainingMark {
  readonly row: string;
  readonly from: Instant;
  readonly to: Instant;
  readonly label: string;
}

/** A broken invariant; `row` is undefined when it concerns no one row (idempotence). */
export interface ViolationMark {
  readonly at: Instant;
  readonly row?: string;
  readonly kind: Violation['kind'];
  readonly label: string;
}

/** Everything the chart draws, as plain rows of data. */
export interface TimelineModel {
  readonly title: string;
  /** Lines under the title: the legend of the outlines, and what was aggregated or left out. */
  readonly subtitle: readonly string[];
  readonly start: Instant;
  readonly end: Instant;
  /** Every row, top to bottom: CAs, the client, namespaces, then the aggregated row if any. */
  readonly rows: readonly string[];
  readonly caRows: readonly string[];
  readonly caPhases: readonly CaPhaseBar[];
  /** Where each prepare and retired phase starts, with how long it lasted. */
  readonly caPhaseLabels: readonly CaPhaseLabel[];
  /** Leaf validity bars of the rows drawn one by one. */
  readonly certificates: readonly ValidityBar[];
  /** The lookahead window before each notAfter (CA rows and leaf rows). */
  readonly lookahead: readonly ValidityBar[];
  readonly rotations: readonly RotationMark[];
  readonly aggregated: readonly AggregatedRotations[];
  /** Namespaces folded into the aggregated row. */
  readonly aggregatedRows: number;
  readonly minRemaining?: MinRemainingMark;
  readonly violations: readonly ViolationMark[];
  /** Violations found; more than {@link MAX_VIOLATION_MARKS} are counted in the subtitle, not drawn. */
  readonly violationCount: number;
}

/** Leaf rows drawn one by one by default: about what fits a screen's height. */
export const MAX_LEAF_ROWS = 30;
/** Violations drawn; a broken policy may break thousands of times and one mark per row says enough. */
export const MAX_VIOLATION_MARKS = 200;
const AGGREGATE_BUCKETS = 150;
const DAY = 86_400_000;

interface CaState {
  readonly row: string;
  readonly notAfter: Instant;
  phase: CaPhaseName;
  since: Instant;
}

interface Leaf {
  readonly row: string;
  readonly lane: number;
  readonly issued: Instant;
  readonly notBefore: Instant;
  readonly notAfter: Instant;
  replaced?: Instant;
}

/** Turns a run's records into the rows of data the chart draws. */
export function buildTimelineModel(input: ChartInput): TimelineModel {
  const { policy } = input;
  const cas = new CaHistory(policy.caValidity);
  const leaves: Leaf[] = [];
  const current = new Map<string, Leaf>();
  const rotations: RotationMark[] = [];
  for (const r of input.records) {
    if (r.kind === 'ca') cas.apply(r.at, r.phases ?? []);
    if ((r.kind !== 'serverLeaf' && r.kind !== 'clientLeaf') || r.reason === undefined) continue;
    const previous = current.get(r.target);
    if (previous) previous.replaced = r.at;
    // issueServerLeaf clamps a leaf's notAfter to its CA's.
    const notAfter = Math.min(r.at + policy.leafValidity, cas.activeNotAfter() ?? Infinity);
    const leaf: Leaf = { row: r.target, lane: previous ? 1 - previous.lane : 0, issued: r.at, notBefore: r.at - policy.notBeforeBackdate, notAfter };
    leaves.push(leaf);
    current.set(r.target, leaf);
    rotations.push({ row: r.target, lane: leaf.lane, at: r.at, reason: r.reason });
  }
  const caPhases = cas.bars(input.end);
  const { shown, folded, aggregateRow } = chooseRows([...current.keys()], input.maxLeafRows ?? MAX_LEAF_ROWS);
  const rowOf = (target: string): string => (folded.has(target) ? aggregateRow! : target);
  const drawn = leaves.filter((l) => !folded.has(l.row));
  const minRemaining = locateMinRemaining(input, leaves, caPhases, cas.all(), rowOf);
  const violations = (input.violations ?? []).slice(0, MAX_VIOLATION_MARKS).map((v) => violationMark(v, cas.rowAt(v.at), rowOf));
  const aggregated = aggregate(
    rotations.filter((m) => folded.has(m.row)),
    aggregateRow ?? '',
    input,
  );
  const subtitle = [
    `Bars: CA phases (ticks mark the short prepare and retired phases), and each leaf's validity from notBefore to notAfter, successive leaves on alternate lanes.`,
    `Dark blue: the policy's lookahead before notAfter (CA ${formatDays(policy.caLookahead)}, leaf ${formatDays(policy.leafLookahead)}), the window in which the next rotation is due.`,
    ...(minRemaining ? [`Black: where a certificate in use had the least validity left (${minRemaining.label}), as simulate reports it.`] : []),
    ...(folded.size > 0
      ? [
          `Aggregated: ${leaves.length - drawn.length} certificates of ${folded.size} namespaces beyond the first ${shown.length} leaf rows, as rotations per ${formatDays(bucketOf(input))} (circle size).`,
        ]
      : []),
    ...violationLines(input.violations ?? []),
  ];
  return {
    title: input.title,
    subtitle,
    start: input.start,
    end: input.end,
    rows: [...cas.all().map((c) => c.row), ...shown, ...(aggregateRow ? [aggregateRow] : [])],
    caRows: cas.all().map((c) => c.row),
    caPhases,
    caPhaseLabels: caPhases
      .filter((b) => b.phase !== 'active')
      .map((b) => ({ row: b.row, phase: b.phase, at: b.from, label: `${b.phase} ${formatDays(b.to - b.from)}` })),
    certificates: drawn.map((l) => ({ row: l.row, lane: l.lane, from: l.notBefore, to: l.notAfter })),
    lookahead: [
      ...cas.all().map((c) => ({ row: c.row, lane: 0, from: c.notAfter - policy.caLookahead, to: c.notAfter })),
      ...drawn.map((l) => ({ row: l.row, lane: l.lane, from: l.notAfter - policy.leafLookahead, to: l.notAfter })),
    ],
    rotations: rotations.filter((m) => !folded.has(m.row)),
    aggregated,
    aggregatedRows: folded.size,
    ...(minRemaining ? { minRemaining } : {}),
    violations,
    violationCount: input.violations?.length ?? 0,
  };
}

/** Follows the CA phases the writes carried out, one row per CA certificate. */
class CaHistory {
  private readonly cas: CaState[] = [];
  private readonly done: CaPhaseBar[] = [];
  private readonly rows: { row: string; notAfter: Instant }[] = [];
  constructor(private readonly validity: Duration) {}

  apply(at: Instant, phases: readonly CaPhase[]): void {
    for (const phase of phases) {
      if (phase === 'prepare') this.add(at, 'prepare');
      else if (phase === 'activate') {
        this.move(at, 'active', 'retired');
        this.move(at, 'prepare', 'active');
      } else if (phase === 'retire') this.move(at, 'retired', undefined);
      else if (phase === 'recover') {
        // The lost key's CA stays trusted as retired; the new one signs at once.
        this.move(at, 'active', 'retired');
        this.add(at, 'active');
      } else if (phase === 'create' || phase === 'emergency') {
        // Made from nothing, or a hard cut-over: every older CA is dropped.
        for (const p of ['prepare', 'active', 'retired'] as const) this.move(at, p, undefined);
        this.add(at, 'active');
      }
      // restore puts a certificate back for its key: no CA starts or ends.
    }
  }

  activeNotAfter(): Instant | undefined {
    return this.cas.find((c) => c.phase === 'active')?.notAfter;
  }

  /** The row of the CA active at `at`. */
  rowAt(at: Instant): string | undefined {
    return this.done.find((b) => b.phase === 'active' && b.from <= at && at < b.to)?.row ?? this.cas.find((c) => c.phase === 'active')?.row;
  }

  all(): readonly { readonly row: string; readonly notAfter: Instant }[] {
    return this.rows;
  }

  bars(end: Instant): CaPhaseBar[] {
    return [...this.done, ...this.cas.map((c) => ({ row: c.row, phase: c.phase, from: c.since, to: Math.max(c.since, end) }))];
  }

  private add(at: Instant, phase: CaPhaseName): void {
    const row = `CA ${this.rows.length + 1}`;
    this.rows.push({ row, notAfter: at + this.validity });
    this.cas.push({ row, notAfter: at + this.validity, phase, since: at });
  }

  private move(at: Instant, from: CaPhaseName, to: CaPhaseName | undefined): void {
    for (const c of this.cas.filter((x) => x.phase === from)) {
      this.done.push({ row: c.row, phase: c.phase, from: c.since, to: at });
      if (to === undefined) this.cas.splice(this.cas.indexOf(c), 1);
      else Object.assign(c, { phase: to, since: at });
    }
  }
}

/** The client first, then namespaces in natural order (team-2 before team-10); beyond `max`, one aggregated row. */
function chooseRows(targets: readonly string[], max: number): { shown: string[]; folded: Set<string>; aggregateRow?: string } {
  const sorted = [...targets].sort((a, b) => (a === 'client' ? -1 : b === 'client' ? 1 : a.localeCompare(b, 'en', { numeric: true })));
  if (sorted.length <= max) return { shown: sorted, folded: new Set() };
  const folded = sorted.slice(Math.max(1, max - 1));
  return { shown: sorted.slice(0, Math.max(1, max - 1)), folded: new Set(folded), aggregateRow: `${folded.length} more namespaces (aggregated)` };
}

function bucketOf(input: ChartInput): Duration {
  const raw = Math.max(1, input.end - input.start) / AGGREGATE_BUCKETS;
  return raw >= DAY ? Math.ceil(raw / DAY) * DAY : Math.max(1000, Math.ceil(raw / 1000) * 1000);
}

function aggregate(marks: readonly RotationMark[], row: string, input: ChartInput): AggregatedRotations[] {
  const bucket = bucketOf(input);
  const counts = new Map<string, AggregatedRotations>();
  for (const m of marks) {
    const at = input.start + Math.floor((m.at - input.start) / bucket) * bucket;
    const key = `${at}/${m.reason}`;
    const c = counts.get(key);
    counts.set(key, { row, at, reason: m.reason, count: (c?.count ?? 0) + 1 });
  }
  return [...counts.values()];
}

/**
 * Finds where the minimum remaining validity happened, as the invariant checker measures it: a
 * replaced leaf may be served for propagationDelay more; the active CA until the next one activates.
 */
function locateMinRemaining(
  input: ChartInput,
  leaves: readonly Leaf[],
  caPhases: readonly CaPhaseBar[],
  cas: readonly { readonly row: string; readonly notAfter: Instant }[],
  rowOf: (target: string) => string,
): MinRemainingMark | undefined {
  if (input.minRemainingValidity === undefined || !Number.isFinite(input.minRemainingValidity)) return undefined;
  const candidates = leaves
    .filter((l) => l.replaced !== undefined)
    .map((l) => ({ row: rowOf(l.row), from: l.replaced! + input.policy.propagationDelay, to: l.notAfter }));
  const notAfter = new Map(cas.map((c) => [c.row, c.notAfter]));
  for (const b of caPhases) if (b.phase === 'active') candidates.push({ row: b.row, from: b.to, to: notAfter.get(b.row)! });
  if (candidates.length === 0) return undefined;
  const target = input.minRemainingValidity;
  const best = candidates.reduce((a, b) => (Math.abs(b.to - b.from - target) < Math.abs(a.to - a.from - target) ? b : a));
  return { ...best, label: `${formatDays(target)} left` };
}

/** Which row a violation concerns, read from the checker's message. */
function violationMark(v: Violation, activeCaRow: string | undefined, rowOf: (target: string) => string): ViolationMark {
  const namespace = /namespace (\S+?)[ :(]/.exec(v.message)?.[1];
  const row = namespace ? rowOf(`namespace/${namespace}`) : v.message.includes('client') ? 'client' : v.message.includes('active CA') ? activeCaRow : undefined;
  const label = `${v.kind}: ${v.message}`;
  return { at: v.at, kind: v.kind, label: label.length > 90 ? `${label.slice(0, 89)}…` : label, ...(row === undefined ? {} : { row }) };
}

function violationLines(violations: readonly Violation[]): string[] {
  if (violations.length === 0) return [];
  const more = violations.length > MAX_VIOLATION_MARKS ? ` (the first ${MAX_VIOLATION_MARKS} drawn)` : '';
  const first = violations[0]!;
  // The first one's message says why the policy fails, naming the certificate and the instant.
  const why = `${first.kind}: ${first.message}`;
  return [
    `Red: ${violations.length} invariant violation(s)${more}; the first, at ${new Date(first.at).toISOString()}:`,
    why.length > 220 ? `${why.slice(0, 219)}…` : why,
  ];
}

/** `35d`, `29d 23h`, `5h`, `35m` or `4s`: the two largest units a reader needs at the chart's scale. */
function formatDays(ms: Duration): string {
  const d = Math.floor(ms / DAY);
  const h = Math.floor((ms % DAY) / 3_600_000);
  if (d > 0) return h > 0 ? `${d}d ${h}h` : `${d}d`;
  if (h > 0) return `${h}h`;
  if (ms >= 60_000) return `${Math.round(ms / 60_000)}m`;
  return `${Math.max(0, Math.round(ms / 1000))}s`;
}
