// Jest's test sequencer for this repository: the suites run longest first, by their durations in
// earlier runs on this machine, so that the two workers finish together. Jest's own record is
// keyed by absolute path in a cache folder named after the clone's path, so every fresh clone (as
// CI makes) ran in file-size order instead: the soak, a short file that runs about 4 minutes, came
// last and ran alone. This record lives outside the clone, keyed by the path in the repository.
//
//   ESO_MTLS_TEST_DURATIONS   the record (default: $HOME/.cache/eso-mtls/jest/durations.json)
//
// A record that is missing, unreadable or over 1 MiB counts as empty: the order is then jest's own
// guess (the largest file first), and the run writes a new record. It only orders; it never
// selects, so a bad record can slow a run, never change what it tests.
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';

const MAX_RECORD_BYTES = 1 << 20;

/** Where the record is: ESO_MTLS_TEST_DURATIONS, or under the user's cache folder. */
export function recordFile(env = process.env) {
  return env['ESO_MTLS_TEST_DURATIONS'] || join(homedir(), '.cache', 'eso-mtls', 'jest', 'durations.json');
}

/**
 * The record at `file`: suite path in the repository to `{ seconds, failed }`. Entries of another
 * shape are dropped, and a file that cannot be read or parsed, or is over 1 MiB, is an empty record.
 */
export function readRecord(file) {
  try {
    if (statSync(file).size > MAX_RECORD_BYTES) return {};
    const value = JSON.parse(readFileSync(file, 'utf8'));
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return {};
    return Object.fromEntries(
      Object.entries(value).filter(
        ([, e]) => e !== null && typeof e === 'object' && Number.isFinite(e.seconds) && e.seconds >= 0 && typeof e.failed === 'boolean',
      ),
    );
  } catch {
    return {};
  }
}

/** `path` in the repository at `rootDir`, with `/` whatever the platform. */
const inRepo = (rootDir, path) => relative(rootDir, path).split(sep).join('/');
/** A suite's path in the repository. */
const repoPath = (test) => inRepo(test.context.config.rootDir, test.path);

/**
 * `tests` in running order: those that failed last time first (the quickest news), then those with
 * a duration, longest first, then those without one, largest file first. Ties keep the path order.
 */
export function runningOrder(tests, record) {
  const size = (test) => test.context.hasteFS.getSize(test.path) ?? 0;
  const key = (test) => {
    const entry = record[repoPath(test)];
    return { failed: entry?.failed === true, known: entry !== undefined, weight: entry ? entry.seconds : size(test) };
  };
  const keyed = tests.map((test) => ({ test, path: repoPath(test), ...key(test) }));
  keyed.sort(
    (a, b) =>
      Number(b.failed) - Number(a.failed) || Number(b.known) - Number(a.known) || b.weight - a.weight || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0),
  );
  return keyed.map((k) => k.test);
}

/** `record` with the results of a run merged in: each suite that ran, its duration and whether it failed. */
export function mergedRecord(record, results, rootDir) {
  const merged = { ...record };
  for (const r of results.testResults) {
    if (r.skipped) continue;
    const path = inRepo(rootDir, r.testFilePath);
    const ms = r.perfStats.runtime ?? r.perfStats.end - r.perfStats.start;
    merged[path] = { seconds: Math.max(0, ms / 1000), failed: r.numFailingTests > 0 || r.testExecError != null };
  }
  return merged;
}

export default class DurationSequencer {
  constructor() {
    this.file = recordFile();
  }

  /** Jest's --shard: a contiguous slice of the suites in path order. */
  shard(tests, { shardIndex, shardCount }) {
    const sorted = [...tests].sort((a, b) => (repoPath(a) < repoPath(b) ? -1 : 1));
    const size = Math.ceil(sorted.length / shardCount);
    return sorted.slice(size * (shardIndex - 1), size * shardIndex);
  }

  sort(tests) {
    return runningOrder(tests, readRecord(this.file));
  }

  /** Jest's --onlyFailures: the suites that failed in their last recorded run. */
  allFailedTests(tests) {
    const record = readRecord(this.file);
    return runningOrder(
      tests.filter((t) => record[repoPath(t)]?.failed === true),
      record,
    );
  }

  /** Merges this run into the record, written whole (a rename), so a run beside it never reads half of it. */
  cacheResults(tests, results) {
    if (tests.length === 0) return;
    try {
      const merged = mergedRecord(readRecord(this.file), results, tests[0].context.config.rootDir);
      mkdirSync(dirname(this.file), { recursive: true });
      const partial = `${this.file}.${process.pid}.tmp`;
      writeFileSync(partial, `${JSON.stringify(merged, null, 1)}\n`);
      renameSync(partial, this.file);
    } catch (e) {
      process.stderr.write(`duration-sequencer: could not write ${this.file} (${e.message}); the next run orders by file size\n`);
    }
  }
}
