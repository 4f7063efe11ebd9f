import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// zlint, a linter we did not write, as the core's tests run it: every lint of every source except
// the web-PKI ones testing/zlint/exclusions.json lists with their reasons. zlint is found (and built
// once, cached by version) by scripts/ensure-zlint.sh; a missing zlint fails, never skips.

const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url));

/** What testing/zlint/exclusions.json says zlint must not run, each with its reason. */
interface Exclusions {
  readonly sources: readonly { readonly source: string; readonly reason: string }[];
  readonly lints: readonly { readonly name: string; readonly reason: string }[];
}

/** zlint's verdicts on one certificate: lint name → result. */
type Verdicts = Record<string, { readonly result: string; readonly details?: string }>;

/** The sources and lints left out, from testing/zlint/exclusions.json. */
export const exclusions = JSON.parse(readFileSync(`${repoRoot}testing/zlint/exclusions.json`, 'utf8')) as Exclusions;

/** Results zlint may report; anything from warn up fails. */
const FAILING = new Set(['warn', 'error', 'fatal']);

let zlintBinary: string | undefined;

/** The zlint binary from scripts/ensure-zlint.sh; throws what the script said if it could not provide one. */
export function zlintPath(): string {
  if (zlintBinary !== undefined) return zlintBinary;
  try {
    const out = execFileSync('bash', ['scripts/ensure-zlint.sh'], { cwd: repoRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    zlintBinary = out.trim().split('\n').pop()!;
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(
      `zlint is required for the X.509 lint tests and scripts/ensure-zlint.sh could not provide it (run it by hand, or set ZLINT to a zlint binary): ${err.stderr || err.message}`,
      { cause: e },
    );
  }
  return zlintBinary;
}

/** zlint's standard output for `args`; throws when it cannot run or exits non-zero. */
export function runZlint(args: readonly string[]): string {
  const r = spawnSync(zlintPath(), args, { encoding: 'utf8', maxBuffer: 16 << 20, timeout: 120_000 });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`zlint ${args.join(' ')} exited with ${r.status}: ${r.stderr}`);
  return r.stdout;
}

/** zlint's verdicts on the PEM certificate in `file`, all lints but the excluded ones. */
export function lintPem(file: string): Verdicts {
  const args = ['-excludeSources', exclusions.sources.map((s) => s.source).join(',')];
  if (exclusions.lints.length > 0) args.push('-excludeNames', exclusions.lints.map((l) => l.name).join(','));
  return JSON.parse(runZlint([...args, file])) as Verdicts;
}

/** The verdicts that fail: warnings, errors and fatals, with zlint's details. */
export const failures = (verdicts: Verdicts): Record<string, string> =>
  Object.fromEntries(
    Object.entries(verdicts)
      .filter(([, v]) => FAILING.has(v.result))
      .map(([name, v]) => [name, `${v.result}: ${v.details ?? ''}`]),
  );
