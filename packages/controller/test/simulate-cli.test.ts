import { describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { days } from '@eso-mtls/core';
import { repoRoot } from '@eso-mtls/test-kit/repo';
import { parseSimulateArgs, runSimulateCommand } from '../src/cli/simulate.js';

async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runSimulateCommand(argv, { stdout: { write: (t: string) => (out += t) }, stderr: { write: (t: string) => (err += t) } });
  return { code, out, err };
}

describe('eso-mtls simulate', () => {
  it('prints the timeline summary of a run: first issuances, CA phases, counts by reason, no violations', async () => {
    const { code, out, err } = await run(['--years', '1', '--services', '6', '--namespaces', '3', '--delete-ca-at', '100d']);
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(out).toContain('6 Services in 3 namespaces');
    expect(out).toMatch(/2026-01-01T00:00:00Z {2}3 server certificate\(s\) issued \(initial\)/);
    expect(out).toMatch(/2026-04-11T00:00:00Z {2}CA key lost.*\[secret_missing\]/);
    expect(out).toMatch(/next CA activated.*4 leaves issued \(ca_rotated\)/);
    expect(out).toMatch(/ {2}expiring +\d+/);
    expect(out).toContain('Violations: 0');
  });

  it('--json gives the summary and the timeline', async () => {
    const { out } = await run(['--years', '0.5', '--services', '2', '--json']);
    const result = JSON.parse(out) as { summary: { byReason: Record<string, number>; violations: unknown[] }; timeline: unknown[] };
    expect(result.summary.byReason.initial).toBe(2); // one namespace (2 Services) and the client
    expect(result.summary.violations).toEqual([]);
    expect(result.timeline.length).toBeGreaterThan(3);
  });

  it('the report says the leaves shared a pool of real keys; --fresh-keys makes one per leaf; a signal stops the run', async () => {
    const pooled = await run(['--years', '0.5', '--services', '2', '--key-algorithm', 'RSA-2048']);
    expect(pooled.code).toBe(0);
    expect(pooled.out).toMatch(/Leaf keys: pooled, \d real key\(s\) reused for \d+ leaves/);
    const fresh = await run(['--years', '0.5', '--services', '2', '--fresh-keys']);
    expect(fresh.out).toMatch(/Leaf keys: a fresh key for each of \d+ leaves/);
    let out = '';
    const sink = { write: (t: string) => (out += t) };
    expect(await runSimulateCommand(['--years', '1'], { stdout: sink, stderr: sink }, AbortSignal.abort(new Error('stopped')))).toBe(130);
    expect(out).toMatch(/^eso-mtls simulate: INTERRUPTED: 0\.00 of 1 year\(s\) simulated/);
  });

  it('policy overrides take days and name the flag when the policy is rejected', () => {
    const args = parseSimulateArgs(['--leaf-validity', '30d', '--leaf-lookahead', '10d', '--leaf-jitter', '1d12h', '--key-algorithm', 'RSA-2048']);
    expect(args).not.toBe('help');
    expect(args !== 'help' && args.policy).toMatchObject({ leafValidity: days(30), leafLookahead: days(10), leafJitter: days(1.5), keyAlgorithm: 'RSA-2048' });
  });

  it.each([
    [['--years', 'many'], /--years: "many" is not a number of years/],
    [['--services=-3'], /--services: "-3" is not a whole number from 1 to 100000/],
    [['--namespaces', '9', '--services', '4'], /--namespaces: "9" is not a whole number from 1 to 4/],
    [['--leaf-validity', '3 months'], /--leaf-validity: "3 months" is not a duration such as 90d/],
    [['--ca-lookahead', '10d'], /--ca-lookahead: invalid policy: caLookahead=10d: must be at least/],
    [['--key-algorithm', 'ed25519'], /--key-algorithm: "ed25519" is not one of ECDSA-P256, RSA-2048, RSA-3072/],
    [['--cluster-domain', 'Bad_Domain'], /--cluster-domain: invalid policy: clusterDomain="Bad_Domain"/],
    [['--frobnicate'], /unknown flag --frobnicate; see eso-mtls simulate --help/],
  ])('rejects %j with exit code 2 and a message naming the flag', async (argv, message) => {
    const { code, err, out } = await run(argv);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(message);
  });

  it('--help describes every flag', async () => {
    const { code, out } = await run(['--help']);
    expect(code).toBe(0);
    for (const flag of ['--years', '--services', '--namespaces', '--seed', '--leaf-validity', '--key-algorithm', '--fresh-keys', '--delete-ca-at'])
      expect(out).toContain(flag);
  });
});

// The built command under a real Ctrl-C. Node catches SIGINT from its start, so the signal waits
// until the process has done 2 s of CPU work: past loading, well into the simulation.
describe('eso-mtls simulate, built, under Ctrl-C', () => {
  const CLI = resolve(repoRoot, 'packages/controller/dist/bin/eso-mtls.js');
  // utime + stime of /proc/<pid>/stat, in clock ticks (100 a second on Linux).
  const cpuTicks = (pid: number): number => {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return Number(fields[11]) + Number(fields[12]);
  };

  it('prints the summary of what it simulated so far, says it was interrupted and exits 130', async () => {
    if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build -w packages/controller\` first`);
    const child = spawn(process.execPath, [CLI, 'simulate', '--years', '50', '--services', '500'], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((r) => child.once('close', (code, signal) => r([code, signal])));
    while (child.exitCode === null && cpuTicks(child.pid!) < 200) await new Promise((r) => setTimeout(r, 50));
    child.kill('SIGINT');
    expect(await exited).toEqual([130, null]);
    expect(out).toMatch(/^eso-mtls simulate: INTERRUPTED: \d+\.\d\d of 50 year\(s\) simulated, from 2026-01-01T00:00:00Z to 20\d\d-/);
    expect(Number(/^Reconciles: (\d+)$/m.exec(out)?.[1])).toBeGreaterThan(0);
    expect(out).toMatch(/^ {2}initial +126$/m); // 125 namespaces and the client, issued at the first reconcile
    expect(out).toContain('Violations: 0');
    expect(err).toMatch(/^eso-mtls simulate: interrupted; the summary covers 2026-01-01T00:00:00Z to 20\d\d-.* only, not the 50 year\(s\) asked\n$/);
  }, 300_000);
});
