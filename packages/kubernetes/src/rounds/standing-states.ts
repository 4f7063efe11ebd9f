import type { Instant } from '@eso-mtls/core';

/** Options of {@link StandingStates}. */
export interface StandingStatesOptions {
  /** Report a standing state again after this long (default never: once per start or change). */
  readonly repeatMs?: number;
  /** How often {@link StateReport.summarize} is true while any state stands (default never). */
  readonly summaryMs?: number;
}

/** What to report after one round's observation. */
export interface StateReport<T> {
  /** States that started, changed, or are due again under `repeatMs`. */
  readonly report: readonly T[];
  /** Keys of states that stood last round and are gone now. */
  readonly ended: readonly string[];
  /** True once per `summaryMs` while at least one state stands: time for one summary line. */
  readonly summarize: boolean;
}

/**
 * Reports standing states (conflicts, leaves waiting for a CA, refused Services) when they start and
 * when they change, not on every round: a round runs on every event, so per-round lines multiply
 * by the number of Services (2,000 Services gave 3.6 MB of logs in 11 s). Each state has a key (what
 * it is about) and a signature (what it says); a new signature under an old key is a change.
 * Memory is bounded by the states standing now: ended ones are forgotten.
 */
export class StandingStates {
  private readonly standing = new Map<string, { signature: string; at: Instant }>();
  private lastSummary: Instant | undefined;

  constructor(private readonly options: StandingStatesOptions = {}) {}

  /** Observes every state standing at `now` (call once per round, with all of them). */
  track<T>(states: readonly T[], key: (state: T) => string, signature: (state: T) => string, now: Instant): StateReport<T> {
    const repeatMs = this.options.repeatMs ?? Infinity;
    const current = new Set<string>();
    const report: T[] = [];
    for (const state of states) {
      const k = key(state);
      if (current.has(k)) continue;
      current.add(k);
      const sig = signature(state);
      const last = this.standing.get(k);
      if (last && last.signature === sig && now - last.at < repeatMs) continue;
      this.standing.set(k, { signature: sig, at: now });
      report.push(state);
    }
    const ended: string[] = [];
    for (const k of this.standing.keys()) {
      if (current.has(k)) continue;
      this.standing.delete(k);
      ended.push(k);
    }
    return { report, ended, summarize: this.summaryDue(current.size > 0, now) };
  }

  private summaryDue(anyStanding: boolean, now: Instant): boolean {
    const summaryMs = this.options.summaryMs;
    if (!anyStanding || summaryMs === undefined) {
      if (!anyStanding) this.lastSummary = undefined;
      return false;
    }
    if (this.lastSummary !== undefined && now - this.lastSummary < summaryMs) return false;
    this.lastSummary = now;
    return true;
  }
}
