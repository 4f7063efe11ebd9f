// `npm run soak [-- SEED [DAYS]]`: the long soak, two simulated years and more with random faults,
// then its figures into docs/benchmarks.md (between the soak markers). Exits 1 on any problem.
import { cpus } from 'node:os';
import { readFileSync, writeFileSync } from 'node:fs';
import { runSoak, type SoakReport } from './soak.js';

const seed = Number(process.argv[2] ?? process.env['SOAK_SEED'] ?? Math.floor(Math.random() * 1_000_000));
const days = Number(process.argv[3] ?? 760);
const report = await runSoak({
  seed,
  days,
  stepDays: { min: 1, max: 5 },
  extraFaultProbability: 0.2,
  forcedCaRotation: false,
  log: (line) => process.stderr.write(`${line}\n`),
});
// Two simulated years must take the CA through its own overlap rotations, not only forced ones.
const problems = [
  ...report.problems,
  ...(report.ageDrivenCaRotations < 2 && days >= 730 ? [`only ${report.ageDrivenCaRotations} overlap CA rotations because the CA aged; two years need 2`] : []),
];
const table = renderReport({ ...report, problems });
process.stdout.write(`${table}\n`);
if (problems.length === 0) {
  const path = new URL('../../docs/benchmarks.md', import.meta.url);
  const doc = readFileSync(path, 'utf8');
  const begin = '<!-- soak:begin -->';
  const end = '<!-- soak:end -->';
  if (doc.includes(begin)) writeFileSync(path, `${doc.slice(0, doc.indexOf(begin) + begin.length)}\n${table}\n${doc.slice(doc.indexOf(end))}`);
}
process.exit(problems.length === 0 ? 0 : 1);

function renderReport(r: SoakReport): string {
  const byKind = new Map<string, { count: number; longest: number }>();
  for (const f of r.faults) {
    const k = byKind.get(f.kind) ?? { count: 0, longest: 0 };
    byKind.set(f.kind, { count: k.count + 1, longest: Math.max(k.longest, f.convergedMs) });
  }
  const windows = new Map<string, { count: number; failures: number; longest: number }>();
  for (const w of r.windows) {
    const k = windows.get(w.cause) ?? { count: 0, failures: 0, longest: 0 };
    windows.set(w.cause, { count: k.count + 1, failures: k.failures + w.failures, longest: Math.max(k.longest, w.durationMs) });
  }
  const cpu = cpus();
  return [
    `Run of ${new Date().toISOString().slice(0, 10)}, seed ${r.seed}: ${cpu.length} x ${cpu[0]?.model ?? 'unknown CPU'}, Node ${process.version}, the machine shared with other work.`,
    '',
    '| | |',
    '|---|---:|',
    `| simulated time | ${r.simulatedDays} days in ${r.steps} steps |`,
    `| wall time | ${(r.wallSeconds / 60).toFixed(1)} min |`,
    `| calls made / failed | ${r.calls.made.toLocaleString('en')} / ${r.calls.failed} |`,
    `| leaf issuances (audit log) | ${r.issuances} |`,
    `| CA overlap rotations because the CA aged | ${r.ageDrivenCaRotations} |`,
    `| CA changes (new active or next) | ${r.caEvents.length} |`,
    `| provider hot reloads / refused | ${r.hotReloads} / ${r.refusedReloads} |`,
    `| longest time to valid, delivered and reloaded | ${(r.longestConvergeMs / 1000).toFixed(1)} s |`,
    '',
    '| fault | injected | longest until valid again |',
    '|---|---:|---:|',
    ...[...byKind].sort().map(([k, v]) => `| ${k} | ${v.count} | ${(v.longest / 1000).toFixed(1)} s |`),
    '',
    '| window of allowed failures | windows | failed calls | longest |',
    '|---|---:|---:|---:|',
    ...[...windows].sort().map(([k, v]) => `| ${k} | ${v.count} | ${v.failures} | ${(v.longest / 1000).toFixed(1)} s |`),
    ...(r.problems.length ? ['', 'Problems:', ...r.problems.map((p) => `- ${p}`)] : []),
  ].join('\n');
}
