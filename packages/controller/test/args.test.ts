import { describe, expect, it } from '@jest/globals';
import { type ConfigResult, parseControllerConfig } from '../src/index.js';
import { type CommandLine, readArgv } from '../src/command-line/args.js';
import { parseSimulateArgs, runSimulateCommand } from '../src/cli/simulate.js';

// How each command reads its command line, edge case by edge case: values, help, and the exact
// wording of every argv error. Both commands read flags one way (the controller's, as Go's flag
// package does) and word argv errors alike, naming the flag in plain words (simulate's used to be
// node:util parseArgs's raw "Unknown option '--x'" and "argument missing").

const SEE_CONTROLLER = '; see eso-mtls controller --help';

function controller(argv: string[]): ConfigResult {
  return parseControllerConfig(argv, {});
}
function controllerError(argv: string[]): string {
  const result = controller(argv);
  if (result.kind !== 'error') throw new Error(`expected an error for ${JSON.stringify(argv)}, got ${result.kind}`);
  return result.error.message;
}
function controllerConfig(argv: string[]) {
  const result = controller(argv);
  if (result.kind !== 'config') {
    throw new Error(`expected a config for ${JSON.stringify(argv)}, got ${result.kind}: ${result.kind === 'error' ? result.error.message : ''}`);
  }
  return result.config;
}

describe('eso-mtls controller command line', () => {
  it.each([[['--kubeconfig', '/kc']], [['--kubeconfig=/kc']], [['-kubeconfig', '/kc']], [['-kubeconfig=/kc']]])(
    'reads %j, long or Go-style single-dash, value joined or separate',
    (argv) => {
      expect(controllerConfig(argv).kubeconfig).toBe('/kc');
    },
  );

  it('takes the next argument as the value whatever it looks like, and everything after the first =', () => {
    expect(controllerConfig(['--kubeconfig', '-weird']).kubeconfig).toBe('-weird');
    expect(controllerConfig(['--kubeconfig', '--help']).kubeconfig).toBe('--help');
    expect(controllerConfig(['--kubeconfig', '--']).kubeconfig).toBe('--');
    expect(controllerConfig(['-kubeconfig', '-']).kubeconfig).toBe('-');
    expect(controllerConfig(['--kubeconfig=a=b']).kubeconfig).toBe('a=b');
    expect(controllerConfig(['--kubeconfig=line\nbreak']).kubeconfig).toBe('line\nbreak');
    expect(controllerError(['--namespace', '--help'])).toBe('invalid value "--help" for --namespace (env ESO_MTLS_NAMESPACE): accepts a DNS-1123 label');
  });

  it('gives an empty value after = to the flag, which judges it', () => {
    expect(controllerError(['--namespace='])).toBe('invalid value "" for --namespace (env ESO_MTLS_NAMESPACE): accepts a DNS-1123 label');
  });

  it('lets the last of a repeated flag win', () => {
    expect(controllerConfig(['--namespace', 'first', '--namespace=second']).policy.esoNamespace).toBe('second');
    expect(controllerConfig(['--leader-elect', '--leader-elect=false']).leaderElection.enabled).toBe(false);
    expect(controllerConfig(['--leader-elect=false', '-leader-elect']).leaderElection.enabled).toBe(true);
  });

  it.each([
    [['--leader-elect'], true],
    [['-leader-elect'], true],
    [['--leader-elect=true'], true],
    [['--leader-elect=1'], true],
    [['--leader-elect=false'], false],
    [['--leader-elect=0'], false],
    [['-leader-elect=false'], false],
  ])('reads the boolean %j as %j', (argv, enabled) => {
    expect(controllerConfig(argv).leaderElection.enabled).toBe(enabled);
  });

  it("never takes a boolean flag's value from the next argument", () => {
    expect(controllerError(['--leader-elect', 'false'])).toBe(`unexpected argument "false": eso-mtls controller takes only flags${SEE_CONTROLLER}`);
    expect(controllerError(['--leader-elect='])).toBe('invalid value "" for --leader-elect (env ESO_MTLS_LEADER_ELECT): accepts true or false');
  });

  it.each([
    [['--bogus'], 'bogus'],
    [['--bogus=1'], 'bogus'],
    [['-bogus'], 'bogus'],
    [['-x'], 'x'],
    [['-x=1'], 'x'],
    [['--help=true'], 'help'],
    [['-help'], 'help'],
  ])('refuses the unknown flag in %j', (argv, name) => {
    expect(controllerError(argv)).toBe(`unknown flag --${name}${SEE_CONTROLLER}`);
  });

  it('refuses --no-<flag>, which Go flags do not have, pointing at the flag itself', () => {
    expect(controllerError(['--no-leader-elect'])).toBe(`unknown flag --no-leader-elect (did you mean --leader-elect?)${SEE_CONTROLLER}`);
  });

  it.each([
    [['controller'], 'controller'],
    [['--'], '--'],
    [['-'], '-'],
    [['--Namespace=x'], '--Namespace=x'],
    [['---namespace'], '---namespace'],
    [['--1x'], '--1x'],
    [['--a_b'], '--a_b'],
    [['--=x'], '--=x'],
    [['-=x'], '-=x'],
    [['--namespace', 'a', 'b'], 'b'],
    [['--', '--namespace', 'a'], '--'],
  ])('refuses the argument that is no flag in %j', (argv, arg) => {
    expect(controllerError(argv)).toBe(`unexpected argument ${JSON.stringify(arg)}: eso-mtls controller takes only flags${SEE_CONTROLLER}`);
  });

  it.each([
    [['--namespace'], 'namespace', 'a DNS-1123 label'],
    [['-namespace'], 'namespace', 'a DNS-1123 label'],
    [['--leader-elect', '--log-level'], 'log-level', 'trace, debug, info, warn, error, fatal or silent'],
  ])('refuses %j, a last flag without its value, saying what it accepts', (argv, name, accepts) => {
    expect(controllerError(argv)).toBe(`flag --${name} needs a value: ${accepts}`);
  });

  it('answers --help and -h wherever they stand, unless an argv error comes first', () => {
    expect(controller(['--help']).kind).toBe('help');
    expect(controller(['-h']).kind).toBe('help');
    expect(controller(['--namespace=Not_Valid', '--help']).kind).toBe('help');
    expect(controller(['--help', '--bogus', 'positional']).kind).toBe('help');
    expect(controller(['--leader-elect', '-h', '--namespace']).kind).toBe('help');
    expect(controllerError(['--bogus', '--help'])).toBe(`unknown flag --bogus${SEE_CONTROLLER}`);
    expect(controllerError(['positional', '-h'])).toBe(`unexpected argument "positional": eso-mtls controller takes only flags${SEE_CONTROLLER}`);
  });

  it('reports the first argv problem in order', () => {
    expect(controllerError(['--bogus', 'positional'])).toBe(`unknown flag --bogus${SEE_CONTROLLER}`);
    expect(controllerError(['positional', '--bogus'])).toBe(`unexpected argument "positional": eso-mtls controller takes only flags${SEE_CONTROLLER}`);
    expect(controllerError(['--other', '--namespace'])).toBe(`unknown flag --other${SEE_CONTROLLER}`);
  });
});

async function simulate(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runSimulateCommand(argv, { stdout: { write: (t: string) => (out += t) }, stderr: { write: (t: string) => (err += t) } });
  return { code, out, err };
}
function simulateArgs(argv: string[]) {
  const args = parseSimulateArgs(argv);
  if (args === 'help') throw new Error(`expected arguments for ${JSON.stringify(argv)}, got help`);
  return args;
}
const SEE_SIMULATE = '; see eso-mtls simulate --help\n';

describe('eso-mtls simulate command line', () => {
  it('reads a value joined or separate, takes everything after the first =, and lets the last repeat win', () => {
    expect(simulateArgs(['--seed', '7']).seed).toBe(7);
    expect(simulateArgs(['--seed=7']).seed).toBe(7);
    expect(simulateArgs(['--seed', '1', '--seed=9', '--seed', '7']).seed).toBe(7);
    expect(simulateArgs(['--years=2', '--cluster-domain', 'example.internal']).policy.clusterDomain).toBe('example.internal');
  });

  it('takes everything after the first = as the value', async () => {
    expect((await simulate(['--cluster-domain=a=b'])).err).toMatch(/^eso-mtls simulate: --cluster-domain: invalid policy: clusterDomain="a=b"/);
  });

  it('takes the next argument as the value whatever it looks like, as the controller does', async () => {
    expect(await simulate(['--years=-3'])).toEqual({
      code: 2,
      out: '',
      err: 'eso-mtls simulate: --years: "-3" is not a number of years above 0 and at most 100\n',
    });
    expect(await simulate(['--years', '-3'])).toEqual({
      code: 2,
      out: '',
      err: 'eso-mtls simulate: --years: "-3" is not a number of years above 0 and at most 100\n',
    });
    expect(await simulate(['--delete-ca-at', '-'])).toEqual({
      code: 2,
      out: '',
      err: 'eso-mtls simulate: --delete-ca-at: "-" is not a duration such as 90d, 36h, 10m or 1d12h\n',
    });
  });

  it('gives an empty value after = to the flag, which judges it', async () => {
    expect((await simulate(['--years='])).err).toBe('eso-mtls simulate: --years: "" is not a number of years above 0 and at most 100\n');
  });

  it('reads bare booleans, =true and =false, and refuses other values for them', async () => {
    expect(simulateArgs(['--json', '--timeline'])).toMatchObject({ json: true, timeline: true });
    expect(simulateArgs([])).toMatchObject({ json: false, timeline: false, years: 3, seed: 1 });
    expect(simulateArgs(['--json', '--json']).json).toBe(true);
    expect(simulateArgs(['--json=true', '--timeline=false'])).toMatchObject({ json: true, timeline: false });
    expect(await simulate(['--json=1'])).toEqual({ code: 2, out: '', err: 'eso-mtls simulate: --json: "1" is not true or false\n' });
    expect((await simulate(['--timeline', 'false'])).err).toBe(
      `eso-mtls simulate: unexpected argument "false": eso-mtls simulate takes only flags${SEE_SIMULATE}`,
    );
  });

  it.each([
    [['--frobnicate'], '--frobnicate'],
    [['--frobnicate=1'], '--frobnicate'],
    [['-x'], '--x'],
    [['--frob', '--help'], '--frob'],
    [['--frob', 'positional'], '--frob'],
  ])('refuses the unknown flag in %j', async (argv, flag) => {
    expect(await simulate(argv)).toEqual({ code: 2, out: '', err: `eso-mtls simulate: unknown flag ${flag}${SEE_SIMULATE}` });
  });

  it('suggests the flag a typo most likely meant, and nothing for a name that is far from every flag', async () => {
    expect((await simulate(['--jsn'])).err).toBe(`eso-mtls simulate: unknown flag --jsn (did you mean --json?)${SEE_SIMULATE}`);
    expect((await simulate(['--servces=3'])).err).toBe(`eso-mtls simulate: unknown flag --servces (did you mean --services?)${SEE_SIMULATE}`);
    expect(controllerError(['--namspace', 'x'])).toBe(`unknown flag --namspace (did you mean --namespace?)${SEE_CONTROLLER}`);
    expect(controllerError(['--leader-elction-id=x'])).toBe(`unknown flag --leader-elction-id (did you mean --leader-election-id?)${SEE_CONTROLLER}`);
    expect((await simulate(['--frobnicate'])).err).toBe(`eso-mtls simulate: unknown flag --frobnicate${SEE_SIMULATE}`);
  });

  it.each([
    [['positional'], 'positional'],
    [['-'], '-'],
    [['--'], '--'],
    [['--Years', '3'], '--Years'],
    [['positional', '--frob'], 'positional'],
  ])('refuses the argument that is not a flag in %j', async (argv, arg) => {
    expect(await simulate(argv)).toEqual({
      code: 2,
      out: '',
      err: `eso-mtls simulate: unexpected argument ${JSON.stringify(arg)}: eso-mtls simulate takes only flags${SEE_SIMULATE}`,
    });
  });

  it('reads -name as --name, as the controller does', () => {
    expect(simulateArgs(['-years', '2', '-seed=4'])).toMatchObject({ years: 2, seed: 4 });
  });

  it('refuses a last flag without its value', async () => {
    expect(await simulate(['--json', '--years'])).toEqual({ code: 2, out: '', err: 'eso-mtls simulate: flag --years needs a value: a number\n' });
    expect((await simulate(['--leaf-validity'])).err).toBe(
      'eso-mtls simulate: flag --leaf-validity needs a value: a duration such as 90d, 36h, 10m or 1d12h\n',
    );
  });

  it('answers --help and -h at once, before judging any value, unless an argv error comes first', async () => {
    const help = await simulate(['--years', 'many', '--help', '--seed=x']);
    expect(help.code).toBe(0);
    expect(help.err).toBe('');
    expect(help.out).toMatch(/^Usage: eso-mtls simulate \[flags\]\n/);
    expect(parseSimulateArgs(['--help', '--help'])).toBe('help');
    expect(parseSimulateArgs(['-h', '--frob'])).toBe('help');
    expect((await simulate(['--frob', '-h'])).code).toBe(2);
  });
});

describe('readArgv, the one reader of both commands', () => {
  const line: CommandLine = {
    command: 'tool',
    flags: [
      { name: 'path', kind: 'string', accepts: 'a path' },
      { name: 'count', kind: 'string' },
      { name: 'force', kind: 'bool' },
    ],
  };
  const values = (argv: string[], words?: CommandLine['words']) => {
    const result = readArgv(argv, { ...line, words });
    return result.kind === 'flags' ? Object.fromEntries(result.values) : result;
  };

  it('reads the common forms', () => {
    expect(values(['--path', '/a', '--count=2', '--force'])).toEqual({ path: '/a', count: '2', force: 'true' });
    expect(values(['--path=/a', '--path', '/b', '--path=x=y'])).toEqual({ path: 'x=y' });
    expect(values(['--force=false'])).toEqual({ force: 'false' });
    expect(values([])).toEqual({});
    expect(values(['--help'])).toEqual({ kind: 'help' });
    expect(values(['-h'])).toEqual({ kind: 'help' });
  });

  it('reads -name as --name, never touching a value that starts with a dash', () => {
    expect(values(['-path', '-count', '-count=3', '-force'])).toEqual({ path: '-count', count: '3', force: 'true' });
    expect(values(['--path', '-force', '-count', '-path'])).toEqual({ path: '-force', count: '-path' });
  });

  it("names what the flag accepts when its value is missing, if the flag says, in the command's words", () => {
    expect(values(['--path'])).toEqual({ kind: 'error', message: 'flag --path needs a value: a path' });
    expect(values(['--count'])).toEqual({ kind: 'error', message: 'flag --count needs a value' });
    const words = { unknown: () => 'u', unexpected: () => 'x', missingValue: (f: { name: string }) => `missing ${f.name}` };
    expect(values(['--count'], words)).toEqual({ kind: 'error', message: 'missing count' });
    expect(values(['--', 'x'])).toEqual({ kind: 'error', message: 'unexpected argument "--": tool takes only flags; see tool --help' });
  });
});
