// `npm run test:node-matrix`: the suites that need no control plane (`npm run test:fast`, which
// includes the packed-tarball install test) on every Node.js line package.json "engines" claims,
// each fetched from the npm registry's `node` package (scripts/node-cache.mjs), then one table.
// Supported Node versions are tested, not assumed.
//
//   npm run test:node-matrix                 every claimed line
//   npm run test:node-matrix -- --lines 22   some of them
//   ... -- --skip-build                      reuse the packages' dist/ (the tarballs are packed from it)
//   ESO_MTLS_MATRIX_LINE_MINUTES=30          a line still running after this is killed and marked timed out
// Each line's jest output goes to a log file named in the table; the exit status is 1 if any line failed.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { claimedMajors, ensureNode, nodeReleases, repoRoot, rootEngines } from './node-cache.mjs';

// The packed-tarball install tests: whatever testing/packaging/ names install*/pack*.
const INSTALL_TEST = /^testing\/packaging\/(install|pack)[^/]*\.test\.ts$/;
// A synchronous loop in a suite escapes jest's per-test timeout; this bounds a whole line. A line
// takes 5 to 7 minutes on a loaded 2-core machine.
const LINE_TIMEOUT_MS = Number(process.env.ESO_MTLS_MATRIX_LINE_MINUTES || 30) * 60_000;

/** Which releases to run: every major "engines" claims, each of which node-releases.json must pin. */
function matrixReleases(engines, releases, only) {
  const majors = claimedMajors(engines);
  for (const m of only) {
    if (!majors.includes(m)) throw new Error(`--lines ${m}: package.json "engines" (${engines}) claims only ${majors.join(', ')}`);
  }
  return majors
    .filter((m) => only.length === 0 || only.includes(m))
    .map((major) => {
      const version = releases[String(major)];
      if (!version) throw new Error(`package.json "engines" claims Node ${major} but scripts/node-releases.json pins no ${major}.x release; add one`);
      return { major, version };
    });
}

/** Pass/fail counts from a jest --json report, the install tests apart from the rest. */
function summarize(report) {
  const rel = (p) => p.slice(repoRoot.length + 1);
  const tally = (suites) => {
    const tests = suites.flatMap((s) => s.assertionResults);
    return {
      suites: suites.length,
      passed: tests.filter((t) => t.status === 'passed').length,
      // A suite that fails to load has no assertions: count it as one failure, or it would vanish.
      failed: tests.filter((t) => t.status === 'failed').length + suites.filter((s) => s.status === 'failed' && s.assertionResults.length === 0).length,
    };
  };
  const install = report.testResults.filter((s) => INSTALL_TEST.test(rel(s.name)));
  const unit = report.testResults.filter((s) => !INSTALL_TEST.test(rel(s.name)));
  return { unit: tally(unit), install: tally(install) };
}

function runLine({ major, version }, jestArgs) {
  const binDir = ensureNode(version);
  const work = mkdtempSync(join(tmpdir(), `eso-mtls-matrix-${major}-`));
  const reportFile = join(work, 'report.json');
  const logFile = join(tmpdir(), `eso-mtls-node-matrix-${major}.log`);
  const log = openSync(logFile, 'w');
  const start = Date.now();
  // Node first on PATH: tests start `node` and `npm` by name (the tarball install test does).
  const env = { ...process.env, PATH: `${binDir}${delimiter}${process.env.PATH ?? ''}` };
  const run = spawnSync(join(binDir, 'node'), ['scripts/fast-tests.mjs', '--json', `--outputFile=${reportFile}`, ...jestArgs], {
    cwd: repoRoot,
    env,
    stdio: ['ignore', log, log],
    timeout: LINE_TIMEOUT_MS,
    killSignal: 'SIGKILL',
  });
  closeSync(log);
  const seconds = Math.round((Date.now() - start) / 1000);
  let counts;
  try {
    counts = summarize(JSON.parse(readFileSync(reportFile, 'utf8')));
  } catch {
    counts = undefined; // jest did not get as far as a report: the log says why
  }
  rmSync(work, { recursive: true, force: true });
  const timedOut = run.error?.code === 'ETIMEDOUT';
  return { major, version, status: run.status, timedOut, counts, seconds, logFile };
}

function cell(t) {
  return t ? `${t.passed} passed, ${t.failed} failed (${t.suites} suites)` : 'no report';
}

function table(rows) {
  const lines = [
    '| Node | unit suites | packed-tarball install | time | result |',
    '|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.version} | ${cell(r.counts?.unit)} | ${cell(r.counts?.install)} | ${r.seconds} s | ${r.status === 0 ? 'pass' : `${r.timedOut ? 'TIMED OUT' : 'FAIL'} (log: ${r.logFile})`} |`,
    ),
  ];
  return lines.join('\n');
}

function parseArgs(argv) {
  const only = [];
  const jestArgs = [];
  let build = true;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--lines') only.push(...(argv[++i] ?? '').split(',').filter(Boolean).map(Number));
    else if (a === '--skip-build') build = false;
    else jestArgs.push(a);
  }
  return { only, jestArgs, build };
}

function main() {
  const { only, jestArgs, build } = parseArgs(process.argv.slice(2));
  const lines = matrixReleases(rootEngines(), nodeReleases().releases, only);
  const cpu = cpus();
  console.error(
    `node-matrix: Node ${lines.map((l) => l.version).join(', ')} on ${cpu.length} x ${cpu[0]?.model ?? 'unknown cpu'}, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  if (build) {
    // tsc's output does not depend on the Node running it; the tarballs are packed from it.
    const b = spawnSync('npm', ['run', 'build', '--silent'], { cwd: repoRoot, stdio: 'inherit' });
    if (b.status !== 0) process.exit(b.status ?? 1);
  }
  const rows = [];
  for (const line of lines) {
    console.error(`node-matrix: Node ${line.version}: running the suites (log: ${join(tmpdir(), `eso-mtls-node-matrix-${line.major}.log`)})`);
    const row = runLine(line, jestArgs);
    console.error(`node-matrix: Node ${line.version}: ${row.status === 0 ? 'pass' : 'FAIL'} in ${row.seconds} s`);
    rows.push(row);
  }
  console.log(table(rows));
  process.exit(rows.every((r) => r.status === 0) ? 0 : 1);
}

main();
