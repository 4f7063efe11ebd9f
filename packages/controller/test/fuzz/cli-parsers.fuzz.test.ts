// Fuzzes the CLI's parsers of what a user types: durations, the controller's flags and environment
// (parseControllerConfig, which resolves the certificate policy), status's and renew's options
// (readCliOptions, which reads the policy through the controller's reader) and simulate's flags.
//
// Properties: parseDuration returns undefined or a whole, safe, non-negative number of
// milliseconds and reads back what formatFlagDuration writes; every reader returns one of its
// result kinds (an error result carries a ConfigError, or a message), and parseSimulateArgs
// throws only its FlagError; no other error escapes; a config that is returned holds values
// its own reader accepts again. They are pure and linear in their input, so no hang is possible
// short of a bug, and the memory they use is bounded by their input's size.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { ConfigError, formatFlagDuration, parseControllerConfig, parseDuration } from '../../src/index.js';
import { parseSimulateArgs } from '../../src/cli/simulate.js';
import { RENEW_FLAGS, STATUS_FLAGS, readCliOptions } from '../../src/status/options.js';
import { CONTROLLER_FLAGS, envVarOf } from '../../src/flags.js';
import { fuzzParameters } from '../../../../testing/fuzz/runs.js';

const SIMULATE_FLAG_NAMES = [
  'years',
  'services',
  'namespaces',
  'seed',
  'delete-ca-at',
  'emergency-at',
  'ca-validity',
  'ca-lookahead',
  'leaf-validity',
  'leaf-lookahead',
  'leaf-jitter',
  'not-before-backdate',
  'reconcile-interval',
  'propagation-delay',
  'key-algorithm',
  'cluster-domain',
  'chart',
  'timeline',
  'json',
];

/** Text shaped like a duration: terms of digits (maybe a fraction) and a unit, or not quite. */
const durationLike = fc
  .array(
    fc.tuple(
      fc.oneof(fc.nat().map(String), fc.stringMatching(/^\d{1,25}(\.\d{0,20})?$/), fc.constantFrom('', '.', '0', '-1', '1e3', '00')),
      fc.constantFrom('ms', 's', 'm', 'h', 'd', '', 'us', 'µs', 'ns', 'y', 'M', ' '),
    ),
    { maxLength: 5 },
  )
  .map((terms) => terms.map(([n, u]) => n + u).join(''));

/** A value any flag or variable may be given: durations, numbers, names, addresses or anything. */
const flagValue = fc.oneof(
  durationLike,
  fc.string({ maxLength: 30 }),
  fc.string({ maxLength: 6, unit: 'grapheme' }),
  fc.constantFrom(
    '0',
    'true',
    'false',
    ':8080',
    '[::1]:0',
    '127.0.0.1:65536',
    'cluster.local',
    'a.b',
    'external-secrets',
    'eso-mtls-ca',
    'external-secrets-provider-tls',
    'ECDSA-P256',
    'RSA-2048',
    'RSA-3072',
    'debug',
    '90d',
    '1h',
    '1s',
    '10m',
    '100',
    '3.5',
    'x.svg',
    'x.html',
    '',
  ),
);

/** A flag a command knows, with a value it accepts when there is one (its default). */
type KnownFlag = { readonly name: string; readonly default?: string };

/**
 * A command line of `flags`: known flags in every spelling, with their default or any value, and
 * now and then an unknown flag or a stray argument.
 */
const argvFor = (flags: readonly KnownFlag[]) => {
  const known = fc.constantFrom(...flags);
  const valueOf = (f: KnownFlag) =>
    f.default === undefined ? flagValue : fc.oneof({ arbitrary: fc.constant(f.default), weight: 3 }, { arbitrary: flagValue, weight: 1 });
  return fc
    .array(
      fc.oneof(
        { arbitrary: known.chain((f) => valueOf(f).map((v) => [`--${f.name}=${v}`])), weight: 8 },
        { arbitrary: known.chain((f) => valueOf(f).map((v) => [`-${f.name}`, v])), weight: 4 },
        { arbitrary: known.map((f) => [`--${f.name}`]), weight: 1 },
        {
          arbitrary: fc
            .oneof(
              flagValue,
              fc.string({ maxLength: 10 }).map((n) => `--${n}`),
              fc.constantFrom('-h', '--help', '-n', '-o'),
            )
            .map((v) => [v]),
          weight: 1,
        },
      ),
      { maxLength: 8 },
    )
    .map((parts) => parts.flat());
};
const controllerArgv = argvFor(CONTROLLER_FLAGS);
const statusArgv = argvFor([...STATUS_FLAGS, ...RENEW_FLAGS]);
const simulateArgv = argvFor(SIMULATE_FLAG_NAMES.map((name) => ({ name })));

/** The controller's environment variables with any values, plus a few unrelated ones. */
const env = fc.dictionary(fc.constantFrom(...CONTROLLER_FLAGS.map((f) => envVarOf(f.name)), 'KUBECONFIG', 'HOME', 'ESO_MTLS_UNKNOWN'), flagValue, {
  maxKeys: 6,
});

const isConfigError = (e: unknown): boolean => e instanceof ConfigError && Object.getPrototypeOf(e) === ConfigError.prototype && e.message !== '';

describe('parseDuration', () => {
  it('returns undefined or a whole, safe, non-negative number of milliseconds', () => {
    fc.assert(
      fc.property(fc.oneof(durationLike, fc.string({ maxLength: 40 }), fc.string({ maxLength: 4000 })), (text) => {
        const d = parseDuration(text);
        if (d !== undefined) expect(Number.isSafeInteger(d) && d >= 0).toBe(true);
      }),
      fuzzParameters(1000),
    );
  });

  it('reads back what formatFlagDuration writes', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.nat(),
          fc.maxSafeNat(),
          fc.nat(100_000).map((n) => n * 86_400_000),
        ),
        (d) => {
          expect(parseDuration(formatFlagDuration(d))).toBe(d);
        },
      ),
      fuzzParameters(1000),
    );
  });
});

describe('parseControllerConfig', () => {
  it('returns a config, help, or a ConfigError for any argv and environment, and never throws', () => {
    fc.assert(
      fc.property(controllerArgv, env, (args, environment) => {
        const result = parseControllerConfig(args, environment);
        if (result.kind === 'error') expect(isConfigError(result.error)).toBe(true);
        else if (result.kind === 'help') expect(result.text).toContain('--namespace');
        else {
          // What it accepted, written back as flags, is accepted again as the same config.
          const c = result.config;
          const again = parseControllerConfig(
            [
              `--namespace=${c.policy.esoNamespace}`,
              `--cluster-domain=${c.policy.clusterDomain}`,
              `--service-account=${c.policy.serviceAccount}`,
              `--reconcile-interval=${formatFlagDuration(c.policy.reconcileInterval)}`,
              `--propagation-delay=${formatFlagDuration(c.policy.propagationDelay)}`,
              `--key-algorithm=${c.policy.keyAlgorithm}`,
              `--ca-secret-name=${c.caSecretName}`,
              `--client-secret-name=${c.clientSecretName}`,
            ],
            {},
          );
          if (again.kind !== 'config') throw new Error(`accepted ${JSON.stringify(args)} but not its own values: ${JSON.stringify(again)}`);
          expect(again.config.policy).toEqual(c.policy);
        }
      }),
      fuzzParameters(400),
    );
  });
});

describe('status and renew options', () => {
  it('return options, help, or an error message for any argv and environment, and never throw', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(['eso-mtls status', STATUS_FLAGS] as const, ['eso-mtls renew', RENEW_FLAGS] as const),
        statusArgv,
        env,
        ([command, flags], args, environment) => {
          const result = readCliOptions(command, flags, args, environment);
          expect(['options', 'help', 'error']).toContain(result.kind);
          if (result.kind === 'error') expect(result.message).not.toBe('');
        },
      ),
      fuzzParameters(300),
    );
  });
});

describe('parseSimulateArgs', () => {
  it('returns the simulation asked for, or help, or throws its FlagError naming what is wrong', () => {
    fc.assert(
      fc.property(simulateArgv, (args) => {
        let parsed: ReturnType<typeof parseSimulateArgs>;
        try {
          parsed = parseSimulateArgs(args);
        } catch (e) {
          if (!(e instanceof Error && e.constructor.name === 'FlagError' && e.message !== '')) throw new Error(`unclassified: ${String(e)}`, { cause: e });
          return;
        }
        if (parsed === 'help') return;
        expect(parsed.years > 0 && parsed.years <= 100).toBe(true);
        expect(Number.isSafeInteger(parsed.services) && parsed.namespaces >= 1 && parsed.namespaces <= parsed.services).toBe(true);
        for (const event of parsed.events) expect(Number.isSafeInteger(event.at)).toBe(true);
      }),
      fuzzParameters(300),
    );
  });
});
