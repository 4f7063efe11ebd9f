// The test sequencer jest.config.ts names: running order from the record of earlier runs, the
// record merged from a run's results, and a bad record read as empty (an order, never a selection).
import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import DurationSequencer, { type SequencedTest, mergedRecord, readRecord, recordFile, runningOrder } from './duration-sequencer.mjs';

const ROOT = '/repo';
const sizes: Record<string, number> = {};
/** A suite at `path` in the repository whose file has `size` bytes. */
const suite = (path: string, size = 100): SequencedTest => {
  sizes[`${ROOT}/${path}`] = size;
  return { path: `${ROOT}/${path}`, context: { config: { rootDir: ROOT }, hasteFS: { getSize: (p) => sizes[p] ?? null } } };
};
const paths = (tests: readonly SequencedTest[]) => tests.map((t) => t.path.slice(ROOT.length + 1));

describe('the duration sequencer', () => {
  it('runs what failed last first, then the longest recorded, then the unrecorded by file size', () => {
    const tests = [suite('a.test.ts', 900), suite('soak.test.ts', 10), suite('b.test.ts', 50), suite('c.test.ts', 5000), suite('d.test.ts', 20)];
    const record = {
      'soak.test.ts': { seconds: 230, failed: false },
      'b.test.ts': { seconds: 12, failed: false },
      'd.test.ts': { seconds: 1, failed: true },
    };
    expect(paths(runningOrder(tests, record))).toEqual(['d.test.ts', 'soak.test.ts', 'b.test.ts', 'c.test.ts', 'a.test.ts']);
    // Without a record: jest's own guess, the largest file first.
    expect(paths(runningOrder(tests, {}))).toEqual(['c.test.ts', 'a.test.ts', 'b.test.ts', 'd.test.ts', 'soak.test.ts']);
  });

  it('merges a run into the record by path in the repository: durations in seconds, failures, skipped suites left as they were', () => {
    const result = (path: string, runtime: number, extra: object = {}) => ({
      testFilePath: `${ROOT}/${path}`,
      skipped: false,
      numFailingTests: 0,
      perfStats: { runtime, start: 0, end: runtime },
      ...extra,
    });
    const merged = mergedRecord(
      { 'old.test.ts': { seconds: 3, failed: false }, 'skipped.test.ts': { seconds: 7, failed: false } },
      {
        testResults: [
          result('a.test.ts', 1500),
          result('b.test.ts', 200, { numFailingTests: 1 }),
          result('c.test.ts', 0, { testExecError: { message: 'could not load' } }),
          result('skipped.test.ts', 0, { skipped: true }),
        ],
      },
      ROOT,
    );
    expect(merged).toEqual({
      'old.test.ts': { seconds: 3, failed: false },
      'skipped.test.ts': { seconds: 7, failed: false },
      'a.test.ts': { seconds: 1.5, failed: false },
      'b.test.ts': { seconds: 0.2, failed: true },
      'c.test.ts': { seconds: 0, failed: true },
    });
  });

  it('reads a missing, unparsable, oversized or odd record as empty or without its odd entries, and writes a whole new one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'duration-sequencer-'));
    try {
      const file = join(dir, 'durations.json');
      expect(readRecord(file)).toEqual({});
      writeFileSync(file, '{"a.test.ts": {"seconds": 1');
      expect(readRecord(file)).toEqual({});
      writeFileSync(file, JSON.stringify({ pad: 'x'.repeat(1 << 20) }));
      expect(readRecord(file)).toEqual({});
      writeFileSync(file, JSON.stringify({ 'a.test.ts': { seconds: 2, failed: false }, 'b.test.ts': { seconds: -1, failed: false }, 'c.test.ts': 'slow' }));
      expect(readRecord(file)).toEqual({ 'a.test.ts': { seconds: 2, failed: false } });

      const sequencer = new DurationSequencer();
      Object.assign(sequencer, { file: join(dir, 'sub', 'durations.json') });
      const tests = [suite('x.test.ts'), suite('y.test.ts')];
      sequencer.cacheResults(tests, {
        testResults: [{ testFilePath: `${ROOT}/y.test.ts`, skipped: false, numFailingTests: 0, perfStats: { runtime: 4000, start: 0, end: 4000 } }],
      });
      expect(readRecord(sequencer.file)).toEqual({ 'y.test.ts': { seconds: 4, failed: false } });
      expect(paths(sequencer.sort(tests))).toEqual(['y.test.ts', 'x.test.ts']);
      expect(paths(sequencer.allFailedTests(tests))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps the record outside the clone unless told where', () => {
    expect(recordFile({})).toBe(join(homedir(), '.cache', 'eso-mtls', 'jest', 'durations.json'));
    expect(recordFile({ ESO_MTLS_TEST_DURATIONS: '/tmp/d.json' })).toBe('/tmp/d.json');
  });

  it('shards into contiguous slices of the path order that cover every suite once', () => {
    const tests = ['e', 'a', 'd', 'b', 'c'].map((p) => suite(`${p}.test.ts`));
    const sequencer = new DurationSequencer();
    const shards = [1, 2].map((shardIndex) => paths(sequencer.shard(tests, { shardIndex, shardCount: 2 })));
    expect(shards).toEqual([
      ['a.test.ts', 'b.test.ts', 'c.test.ts'],
      ['d.test.ts', 'e.test.ts'],
    ]);
  });
});
