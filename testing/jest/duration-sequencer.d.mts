// Types of duration-sequencer.mjs, for its test (jest loads the module itself as plain ESM).

/** A suite's last recorded run. */
export interface RecordEntry {
  readonly seconds: number;
  readonly failed: boolean;
}

/** Suite path in the repository to its last recorded run. */
export type DurationRecord = Record<string, RecordEntry>;

/** The fields of jest's Test the sequencer reads. */
export interface SequencedTest {
  readonly path: string;
  readonly context: { readonly config: { readonly rootDir: string }; readonly hasteFS: { getSize(path: string): number | null } };
}

/** The fields of jest's AggregatedResult the sequencer reads. */
export interface RunResults {
  readonly testResults: readonly {
    readonly testFilePath: string;
    readonly skipped: boolean;
    readonly numFailingTests: number;
    readonly testExecError?: unknown;
    readonly perfStats: { readonly runtime?: number; readonly start: number; readonly end: number };
  }[];
}

export function recordFile(env?: Record<string, string | undefined>): string;
export function readRecord(file: string): DurationRecord;
export function runningOrder<T extends SequencedTest>(tests: readonly T[], record: DurationRecord): T[];
export function mergedRecord(record: DurationRecord, results: RunResults, rootDir: string): DurationRecord;

export default class DurationSequencer {
  constructor();
  readonly file: string;
  shard<T extends SequencedTest>(tests: readonly T[], options: { shardIndex: number; shardCount: number }): T[];
  sort<T extends SequencedTest>(tests: readonly T[]): T[];
  allFailedTests<T extends SequencedTest>(tests: readonly T[]): T[];
  cacheResults(tests: readonly SequencedTest[], results: RunResults): void;
}
