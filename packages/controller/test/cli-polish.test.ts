import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { SIMULATION_EPOCH, days, resolvePolicy, seededRandom, simulate } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { formatFlagDuration } from '../src/duration.js';
import { closestFlag, helpTable } from '../src/command-line/args.js';
import { oneSecretPerNamespace, progressLine, simulationJson } from '../src/cli/simulate.js';
import { isTerminal, plainFatalLine } from '../src/cli/terminal.js';
import { repoRoot } from '@eso-mtls/test-kit/repo';

// What a person sees of the `eso-mtls` command: the real bin as a child process (the TypeScript
// source under the repo's loader, as the controller process tests run it), and the small pure
// functions that decide what only a terminal gets (no pseudo-terminal needed to test those).

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function eso(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolveRun) => {
    execFile(
      process.execPath,
      ['--import', resolve(repoRoot, 'scripts/register-ts.mjs'), resolve(repoRoot, 'packages/controller/src/bin/eso-mtls.ts'), ...args],
      { cwd: repoRoot, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, timeout: 60_000, maxBuffer: 16 << 20 },
      (error, stdout, stderr) => resolveRun({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

const packageVersion = (JSON.parse(readFileSync(resolve(repoRoot, 'packages/controller/package.json'), 'utf8')) as { version: string }).version;

// Every description of a help table starts in one column: a row's description begins where the
// widest short usage ends plus two spaces, and continuation lines begin there too.
function descriptionColumns(help: string): Set<number> {
  const flagsPart = help.slice(help.indexOf('Flags:\n') + 'Flags:\n'.length).split('\n\n')[0]!;
  const columns = new Set<number>();
  for (const line of flagsPart.split('\n').filter((l) => l !== '')) {
    const m = /^( {2}--[a-z-]+(?: <[a-z]+>)? +|^ +)(\S.*)$/.exec(line);
    if (!m) throw new Error(`help line not in the table's shape: ${JSON.stringify(line)}`);
    if (/^ {2}--[a-z-]+(?: <[a-z]+>)?$/.test(line)) continue; // a long usage alone on its line
    columns.add(m[1]!.length);
  }
  return columns;
}

describe('eso-mtls, as a person meets it', () => {
  it('--version, -V and version print the version from the package.json, exit 0', async () => {
    for (const flag of ['--version', '-V', 'version']) {
      const run = await eso([flag]);
      expect(run).toEqual({ code: 0, stdout: `eso-mtls ${packageVersion}\n`, stderr: '' });
    }
    expect((await eso(['--help'])).stdout).toContain('eso-mtls --version prints the version');
  }, 120_000);

  it('names the flag in plain words for an unknown flag, a missing value and a bad value, with exit code 2', async () => {
    const unknown = await eso(['simulate', '--frobnicate']);
    expect(unknown).toEqual({ code: 2, stdout: '', stderr: 'eso-mtls simulate: unknown flag --frobnicate; see eso-mtls simulate --help\n' });
    const typo = await eso(['controller', '--kubconfig', '/kc']);
    expect(typo).toEqual({
      code: 2,
      stdout: '',
      stderr: 'eso-mtls controller: unknown flag --kubconfig (did you mean --kubeconfig?); see eso-mtls controller --help\n',
    });
    const missing = await eso(['simulate', '--delete-ca-at']);
    expect(missing.stderr).toBe('eso-mtls simulate: flag --delete-ca-at needs a value: a duration such as 90d, 36h, 10m or 1d12h\n');
    const bad = await eso(['controller', '--reconcile-interval', 'soon']);
    expect(bad.stderr).toBe(
      'eso-mtls controller: invalid value "soon" for --reconcile-interval (env ESO_MTLS_RECONCILE_INTERVAL): accepts a duration such as 500ms, 15s, 10m or 1h30m, at least 1s\n',
    );
    for (const run of [missing, bad]) expect(run.code).toBe(2);
    // Nothing of node:util parseArgs's raw wording is left.
    for (const run of [unknown, typo, missing, bad]) expect(run.stderr).not.toMatch(/Unknown option|argument missing|ERR_PARSE_ARGS/);
  }, 120_000);

  it('names the file when a kubeconfig cannot be used, on the JSON log and (at a terminal only) on stderr', async () => {
    const run = await eso(['controller', '--kubeconfig', '/nonexistent/kubeconfig', '--health-probe-bind-address=0', '--metrics-bind-address=0']);
    expect(run.code).toBe(1);
    const fatal = run.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: string; msg: string; error?: string })
      .find((l) => l.level === 'fatal');
    expect(fatal).toMatchObject({ msg: 'could not start', error: '--kubeconfig /nonexistent/kubeconfig: no such file' });
    expect(run.stderr).toBe(''); // stderr is a pipe here: the JSON line is said once
    expect(plainFatalLine('eso-mtls controller', fatal!.error!, { isTTY: true }, {})).toBe(
      'eso-mtls controller: could not start: --kubeconfig /nonexistent/kubeconfig: no such file\n',
    );
  }, 120_000);

  it.each([['simulate'], ['controller']])(
    '%s --help lays its flags out in aligned columns',
    async (command) => {
      const run = await eso([command, '--help']);
      expect(run.code).toBe(0);
      expect([...descriptionColumns(run.stdout)]).toHaveLength(1);
    },
    120_000,
  );

  it('simulate prints durations as typed (0s, not 0d; 1d12h, not 36h), explains one Secret per namespace, and its --json uses ISO instants', async () => {
    const text = await eso(['simulate', '--years', '0.3', '--services', '200', '--leaf-jitter', '0s', '--leaf-lookahead', '1d12h', '--seed', '3']);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('renewed 1d12h + up to 0s jitter before notAfter');
    expect(text.stdout).not.toMatch(/\b0d\b/);
    expect(text.stdout).toContain(
      '50 server certificate(s) for 200 Services: each namespace has one Secret (external-secrets-provider-tls) naming all its labelled Services',
    );
    expect(text.stderr).toBe(''); // no progress line when stderr is not a terminal

    const json = await eso(['simulate', '--years', '0.3', '--services', '4', '--json']);
    const result = JSON.parse(json.stdout) as { summary: { start: unknown; end: unknown }; timeline: { at: unknown }[] };
    expect(result.summary.start).toBe('2026-01-01T00:00:00.000Z');
    expect(typeof result.summary.end).toBe('string');
    for (const e of result.timeline) expect(e.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(json.stderr).toBe('');
  }, 120_000);
});

describe('the small decisions behind it', () => {
  it('a terminal is a TTY that is not TERM=dumb; a pipe or a file never is', () => {
    expect(isTerminal({ isTTY: true }, { TERM: 'xterm-256color' })).toBe(true);
    expect(isTerminal({ isTTY: true }, {})).toBe(true);
    expect(isTerminal({ isTTY: true }, { TERM: 'dumb' })).toBe(false);
    expect(isTerminal({ isTTY: false }, {})).toBe(false);
    expect(isTerminal({}, {})).toBe(false);
    expect(plainFatalLine('eso-mtls controller', 'boom\nstack', { isTTY: false }, {})).toBeUndefined();
    expect(plainFatalLine('eso-mtls controller', 'boom\nstack', { isTTY: true }, {})).toBe('eso-mtls controller: could not start: boom\n');
  });

  it('helpTable aligns descriptions and puts a too-long usage on a line of its own', () => {
    expect(
      helpTable(
        [
          ['--a <n>', 'first'],
          ['--longer-flag', ['two', 'lines']],
          ['--a-flag-far-too-long-for-the-column <value>', 'below'],
        ],
        { maxUsageWidth: 20 },
      ),
    ).toBe(
      [
        '  --a <n>        first',
        '  --longer-flag  two',
        '                 lines',
        '  --a-flag-far-too-long-for-the-column <value>',
        '                 below',
      ].join('\n'),
    );
  });

  it('closestFlag finds a near name only', () => {
    const flags = [
      { name: 'namespace', kind: 'string' as const },
      { name: 'json', kind: 'bool' as const },
    ];
    expect(closestFlag('namspace', flags)).toBe('namespace');
    expect(closestFlag('jsn', flags)).toBe('json');
    expect(closestFlag('x', flags)).toBeUndefined();
    expect(closestFlag('names', flags)).toBeUndefined();
  });

  it('formatFlagDuration echoes the typed text, else the shortest form with zero as 0s', () => {
    expect(formatFlagDuration(0)).toBe('0s');
    expect(formatFlagDuration(0, '0ms')).toBe('0ms');
    expect(formatFlagDuration(36 * 3_600_000, '1d12h')).toBe('1d12h');
    expect(formatFlagDuration(36 * 3_600_000)).toBe('36h');
    expect(formatFlagDuration(90 * 86_400_000)).toBe('90d');
  });

  it('the progress line redraws in place with the simulated date and share done', () => {
    const day = 86_400_000;
    expect(progressLine(0, 10 * day, 5 * day)).toBe('\r\x1b[Ksimulating 1970-01-06   50%');
    expect(progressLine(0, 10 * day, 20 * day)).toMatch(/100%$/);
  });

  it("the core's simulate reports each simulated instant it reached, rising from the start to at most the end", async () => {
    const seen: number[] = [];
    const duration = days(200);
    await simulate({
      policy: resolvePolicy(),
      crypto: { ...createNodeCryptoBackend(), random: seededRandom(1) },
      services: [{ namespace: 'a', name: 's' }],
      duration,
      onProgress: (at) => seen.push(at),
    });
    expect(seen[0]).toBe(SIMULATION_EPOCH);
    expect(seen.length).toBeGreaterThan(2);
    expect(seen.every((at, i) => i === 0 || at > seen[i - 1]!)).toBe(true);
    expect(seen.at(-1)!).toBeLessThanOrEqual(SIMULATION_EPOCH + duration);
  });

  it('the one-Secret-per-namespace line is one line', () => {
    expect(oneSecretPerNamespace(200, 50)).not.toContain('\n');
  });

  it('simulationJson turns instants, and only instants, into ISO strings', () => {
    const json = JSON.parse(
      simulationJson({
        timeline: [{ at: 0, kind: 'event', target: 'x', message: 'm' }],
        summary: {
          start: 0,
          end: 1000,
          interrupted: false,
          reconciles: 2,
          serverIssuances: 0,
          clientIssuances: 0,
          byReason: {},
          caPhases: {},
          bundleUpdates: 0,
          leafKeys: { pooled: true, poolSize: 4, generated: 0, handedOut: 0 },
          minRemainingValidity: 5000,
          violations: [],
        },
      }),
    ) as { timeline: { at: string }[]; summary: Record<string, unknown> };
    expect(json.timeline[0]!.at).toBe('1970-01-01T00:00:00.000Z');
    expect(json.summary).toMatchObject({ start: '1970-01-01T00:00:00.000Z', end: '1970-01-01T00:00:01.000Z', reconciles: 2, minRemainingValidity: 5000 });
  });
});
