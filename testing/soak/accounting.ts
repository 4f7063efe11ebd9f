// What the soak's counters should read, computed from what happened: failed calls against the
// fault windows that allow them, and a folder's deliveries against its reader's reload counters.
import type { FailureWindow } from './faults.js';
import type { FailedCall } from './world.js';
import { certificates, pairProblem } from './checks.js';

/** One exception to "no call fails": a fault window and the calls that failed in it. */
export interface WindowReport {
  readonly cause: string;
  readonly address: string;
  readonly failures: number;
  /** From the window's start to its last failed call (0 when none failed). */
  readonly durationMs: number;
}

/** Sorts failed calls into the windows that allow them; the rest are unexplained. */
export function attributeFailures(failures: readonly FailedCall[], windows: readonly FailureWindow[]): { windows: WindowReport[]; unexplained: FailedCall[] } {
  const reports = windows.map((w) => ({ window: w, failures: 0, last: w.start }));
  const unexplained: FailedCall[] = [];
  for (const f of failures) {
    const r = reports.find(({ window: w }) => (w.address === '*' || w.address === f.address) && f.at >= w.start && f.at <= w.end);
    if (r === undefined) {
      unexplained.push(f);
      continue;
    }
    r.failures++;
    r.last = Math.max(r.last, f.at);
  }
  return {
    windows: reports.map((r) => ({ cause: r.window.cause, address: r.window.address, failures: r.failures, durationMs: r.last - r.window.start })),
    unexplained,
  };
}

/** A folder's content at one moment, and the simulated time it was read at. */
export interface FolderEvent {
  readonly kind: 'start' | 'delivery';
  readonly payload: Readonly<Record<string, string>>;
  readonly at: number;
  /** For a delivery: whether the folder's reader was running. */
  readonly readerRunning: boolean;
}

/**
 * The hot reloads and refused reloads a folder's reader must count: each delivery while it runs
 * is refused when its files are not a usable pair, and swapped in when usable and different from
 * what it serves; the same refused files again count once. A start loads what the folder holds,
 * and counts nothing.
 */
export function expectedReloads(events: readonly FolderEvent[]): { reloads: number; refused: number } {
  let serving: string | undefined;
  let lastRefused: string | undefined;
  let reloads = 0;
  let refused = 0;
  for (const e of events) {
    const key = `${e.payload['tls.crt']}\n${e.payload['tls.key']}\n${e.payload['ca.crt']}`;
    if (e.kind === 'start') {
      serving = key;
      lastRefused = undefined;
      continue;
    }
    if (!e.readerRunning) continue;
    if (key === serving) {
      lastRefused = undefined;
      continue;
    }
    if (pairProblem({ ...e.payload }, e.at, certificates(e.payload['ca.crt']), []) !== undefined) {
      // The same files refused again are one refusal (the reader re-reads on every event).
      if (key !== lastRefused) refused++;
      lastRefused = key;
      continue;
    }
    reloads++;
    serving = key;
    lastRefused = undefined;
  }
  return { reloads, refused };
}
