// Finds promtool through scripts/ensure-promtool.sh (which installs it when it can) and runs it.
// A missing promtool is an error, never a skip: the alert rules are only tested by it.
import { execFileSync, spawnSync } from 'node:child_process';
import { repoRoot } from './repo.js';

let cached: string | undefined;

export function promtoolPath(): string {
  if (cached !== undefined) return cached;
  let out: string;
  try {
    out = execFileSync('bash', ['scripts/ensure-promtool.sh'], { cwd: repoRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`promtool is required for the alert rule tests and scripts/ensure-promtool.sh could not provide it: ${err.stderr || err.message}`, {
      cause: e,
    });
  }
  cached = out.trim().split('\n').pop()!;
  return cached;
}

export interface PromtoolResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export function promtool(args: readonly string[], input?: string): PromtoolResult {
  const r = spawnSync(promtoolPath(), args, { cwd: repoRoot, encoding: 'utf8', input, timeout: 120_000 });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The promtool version line, e.g. `promtool, version 2.42.0+ds (...)`. */
export function promtoolVersion(): string {
  return promtool(['--version']).stdout.split('\n')[0] ?? '';
}
