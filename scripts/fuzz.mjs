// `npm run fuzz`: every fuzz suite (*.fuzz.test.ts) with FUZZ_RUNS runs per property (default
// 20,000: roughly an hour on 2 cores, estimated from shorter runs; `npm run fuzz -- 200000` for
// more). `npm test` runs the same suites with their short counts. A failure prints fast-check's
// seed and path; FUZZ_SEED=<seed> replays it. See docs/fuzzing.md.
import { spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';

const root = resolve(dirname(new URL(import.meta.url).pathname), '..');
const runs = process.argv[2] ?? process.env.FUZZ_RUNS ?? '20000';
if (!/^\d+$/.test(runs) || Number(runs) < 1) {
  console.error(`npm run fuzz: the run count must be a positive integer, got ${JSON.stringify(runs)}`);
  process.exit(2);
}
console.error(`npm run fuzz: ${runs} runs per property`);
const jest = join(root, 'node_modules', 'jest', 'bin', 'jest.js');
const result = spawnSync(
  process.execPath,
  ['--experimental-vm-modules', jest, '--testPathPatterns', '\\.fuzz\\.test\\.ts$', '--testTimeout', String(6 * 3600 * 1000), '--runInBand'],
  { cwd: root, stdio: 'inherit', env: { ...process.env, FUZZ_RUNS: runs } },
);
process.exit(result.status ?? 1);
