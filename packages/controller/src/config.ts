import {
  type Duration,
  type KeyAlgorithm,
  type NamespaceRequirement,
  type Policy,
  KEY_ALGORITHMS,
  MAX_POD_LIFETIME,
  MIN_POD_LIFETIME,
  PROVIDER_SECRET_NAME,
  PolicyError,
  isDnsLabel,
  isDnsName,
  parseNamespaceRequirement,
  resolvePolicy,
} from '@eso-mtls/core';
import { type BindAddress, parseBindAddress } from './bind-address.js';
import { type CaSource, MIN_PRUNE_GRACE, type PodCertificateOptions, isSignerName } from '@eso-mtls/kubernetes';
import { CaSourceFlagError, parseCaSourceFlags } from './ca-source-flags.js';
import { readArgv } from './command-line/args.js';
import { parseDuration } from './duration.js';
import type { Flag } from './command-line/args.js';
import { CONTROLLER_FLAGS, MAX_PROPAGATION_DELAY, MIN_PROPAGATION_DELAY, PIN_ENV, controllerUsage, envVarOf } from './flags.js';

/** Minimum level of log lines, as pino names them. */
export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
const LOG_LEVELS: readonly LogLevel[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** Lease timings, as controller-runtime names them. */
export interface LeaderElectionTimings {
  /** How long a Lease holds without renewal before another candidate may take it. */
  readonly leaseDuration: Duration;
  /** The leader stops writing when it has not renewed the Lease within this long. */
  readonly renewDeadline: Duration;
  /** Time between attempts to acquire or renew. */
  readonly retryPeriod: Duration;
}

/** Everything `eso-mtls controller` was told, validated. */
export interface ControllerConfig {
  /** Path of a kubeconfig; undefined means in-cluster (service account token and CA). */
  readonly kubeconfig: string | undefined;
  /** The certificate policy: namespace, cluster domain, service account, interval and key algorithm applied. */
  readonly policy: Policy;
  /** Name of the CA Secret in the ESO namespace. */
  readonly caSecretName: string;
  /** Name of the ESO client Secret in the ESO namespace. */
  readonly clientSecretName: string;
  /** Whether and where to elect a leader, and its timings. */
  readonly leaderElection: {
    /** Off: this process acts alone (one replica). */
    readonly enabled: boolean;
    /** Namespace of the Lease. */
    readonly namespace: string;
    /** Name of the Lease. */
    readonly leaseName: string;
    /** Undefined: the CLI derives hostname_<random>, as client-go does. */
    readonly identity: string | undefined;
  } & LeaderElectionTimings;
  /** null when disabled with `0`. */
  readonly metricsBindAddress: BindAddress | null;
  /** Where /healthz and /readyz listen; null when disabled with `0`. */
  readonly healthProbeBindAddress: BindAddress | null;
  /** The least severe level logged. */
  readonly logLevel: LogLevel;
  /** The Secret mode: provider Secrets in provider namespaces. */
  readonly secretMode: boolean;
  /** The pod-certificate mode's signers and limit; undefined when the mode is off. */
  readonly podCertificates: PodCertificateOptions | undefined;
  /** The most certificates issued per reconcile; undefined: no bound (`0`). See docs/flood-control.md. */
  readonly maxIssuancesPerReconcile: number | undefined;
  /** The most provider namespaces served; undefined: no cap (`0`, the default). */
  readonly maxNamespaces: number | undefined;
  /** The label a namespace must carry before its labelled Services are served; undefined: none (the default). */
  readonly namespaceRequirement: NamespaceRequirement | undefined;
  /** Grace before an orphaned provider Secret is deleted; 0 when pruning is off (the default). */
  readonly pruneOrphanedSecretsAfter: Duration;
  /**
   * Where the CA that signs every leaf comes from: self-signed (the default), a cert-manager issuer
   * (`--ca-issuer`) or a Secret the user maintains (`--ca-from-secret`), with its trust anchors
   * (`--ca-trust-anchors`). See docs/chaining-to-your-pki.md.
   */
  readonly caSource: CaSource;
  /** The PKCS#11 token holding the CA keys (see docs/hsm.md); undefined: the CA key is in the CA Secret. */
  readonly pkcs11:
    | {
        /** Path of the PKCS#11 module. */
        readonly modulePath: string;
        /** Label of the token. */
        readonly tokenLabel: string;
        /** Label prefix of the CA keys, the only keys ever destroyed. */
        readonly keyLabelPrefix: string;
        /** Where the user PIN is read at each login: a file, or the environment variable ESO_MTLS_HSM_PIN. */
        readonly pin: { readonly file: string } | { readonly env: 'ESO_MTLS_HSM_PIN' };
        /** Keep retired CA keys in the token (default false: destroyed once their CA left every bundle). */
        readonly keepRetiredKeys: boolean;
      }
    | undefined;
}

/** A flag or environment variable with a value the controller cannot use. */
export class ConfigError extends Error {
  /** Always `ConfigError`. */
  override readonly name = 'ConfigError';
}

/** The outcome of reading the command line and environment. */
export type ConfigResult =
  | { readonly kind: 'config'; readonly config: ControllerConfig }
  | { readonly kind: 'help'; readonly text: string }
  | { readonly kind: 'error'; readonly error: ConfigError };

type Source = { readonly value: string; readonly from: 'flag' | 'env' | 'default' };

function describe(flag: Flag, source: Source): string {
  const where = source.from === 'env' ? `${envVarOf(flag.name)} (flag --${flag.name})` : `--${flag.name} (env ${envVarOf(flag.name)})`;
  return `invalid value ${JSON.stringify(source.value)} for ${where}: accepts ${flag.accepts}`;
}

/**
 * Reads the controller's configuration from `argv` (without the `controller` subcommand) and
 * `env`. A flag wins over its environment variable, which wins over the default. Pure: no I/O.
 */
export function parseControllerConfig(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): ConfigResult {
  const args = readArgv(argv, { command: 'eso-mtls controller', flags: CONTROLLER_FLAGS });
  if (args.kind === 'help') return { kind: 'help', text: controllerUsage() };
  if (args.kind === 'error') return { kind: 'error', error: new ConfigError(args.message) };
  try {
    return { kind: 'config', config: build(args.values, env) };
  } catch (e) {
    if (e instanceof ConfigError) return { kind: 'error', error: e };
    throw e;
  }
}

function build(args: ReadonlyMap<string, string>, env: Readonly<Record<string, string | undefined>>): ControllerConfig {
  const spec = (name: string): Flag => CONTROLLER_FLAGS.find((f) => f.name === name)!;
  const source = (name: string): Source | undefined => {
    const arg = args.get(name);
    if (arg !== undefined) return { value: arg, from: 'flag' };
    const e = env[envVarOf(name)];
    if (e !== undefined && e !== '') return { value: e, from: 'env' };
    const d = spec(name).default;
    return d === undefined ? undefined : { value: d, from: 'default' };
  };
  // Each reader converts one flag or throws a ConfigError naming it, its variable and what it accepts.
  const read = <T>(name: string, convert: (s: string) => T | undefined): T => {
    const s = source(name)!;
    const v = convert(s.value);
    if (v === undefined) throw new ConfigError(describe(spec(name), s));
    return v;
  };
  const optional = <T>(name: string, convert: (s: string) => T | undefined): T | undefined => (source(name) === undefined ? undefined : read(name, convert));
  const when = (ok: (s: string) => boolean) => (s: string) => (ok(s) ? s : undefined);

  const namespace = read('namespace', when(isDnsLabel));
  const leaseDuration = read('leader-election-lease-duration', positiveDuration);
  const renewDeadline = read('leader-election-renew-deadline', positiveDuration);
  const retryPeriod = read('leader-election-retry-period', positiveDuration);
  // client-go's own checks: a leader must give up before others may take over, with retries in between.
  if (leaseDuration <= renewDeadline) {
    throw new ConfigError(
      `--leader-election-lease-duration (${source('leader-election-lease-duration')!.value}) must be greater than --leader-election-renew-deadline (${source('leader-election-renew-deadline')!.value})`,
    );
  }
  if (renewDeadline <= retryPeriod * 1.2) {
    throw new ConfigError(
      `--leader-election-renew-deadline (${source('leader-election-renew-deadline')!.value}) must be greater than 1.2 x --leader-election-retry-period (${source('leader-election-retry-period')!.value})`,
    );
  }
  const caSecretName = read('ca-secret-name', when(isDnsName));
  const clientSecretName = read('client-secret-name', when(isDnsName));
  for (const [flag, name] of [
    ['ca-secret-name', caSecretName],
    ['client-secret-name', clientSecretName],
  ] as const) {
    if (name === PROVIDER_SECRET_NAME) {
      throw new ConfigError(`--${flag} (env ${envVarOf(flag)}) is ${JSON.stringify(name)}, the provider Secret name: choose another`);
    }
  }
  if (caSecretName === clientSecretName) {
    throw new ConfigError(`--ca-secret-name and --client-secret-name are both ${JSON.stringify(caSecretName)}: the CA and client Secrets need different names`);
  }
  const given = (name: string): boolean => source(name) !== undefined && source(name)!.from !== 'default';
  const pkcs11 = pkcs11From(read, given, env);
  const policy = policyFrom(read, namespace);
  return {
    kubeconfig: optional(
      'kubeconfig',
      when((s) => s.length > 0),
    ),
    policy,
    caSecretName,
    clientSecretName,
    leaderElection: {
      enabled: read('leader-elect', parseBool),
      namespace: optional('leader-election-namespace', when(isDnsLabel)) ?? namespace,
      leaseName: read('leader-election-id', when(isDnsName)),
      identity: optional(
        'leader-election-identity',
        when((s) => s.length > 0 && s.length <= 128),
      ),
      leaseDuration,
      renewDeadline,
      retryPeriod,
    },
    metricsBindAddress: read('metrics-bind-address', parseBindAddress),
    healthProbeBindAddress: read('health-probe-bind-address', parseBindAddress),
    logLevel: read('log-level', (s) => LOG_LEVELS.find((l) => l === s)),
    maxIssuancesPerReconcile: read('max-issuances-per-reconcile', parseLimit) || undefined,
    maxNamespaces: read('max-namespaces', parseLimit) || undefined,
    namespaceRequirement: read('require-namespace-label', (s) => (s === '' ? null : parseNamespaceRequirement(s))) ?? undefined,
    ...modesAndPruning(read),
    caSource: caSourceFrom((name) => (given(name) ? source(name)!.value : undefined), {
      policy,
      hsm: pkcs11 !== undefined,
      writtenSecrets: [
        ['--ca-secret-name', caSecretName],
        ['--client-secret-name', clientSecretName],
        ['the provider Secret name', PROVIDER_SECRET_NAME],
      ],
    }),
    pkcs11,
  };
}

/** The CA source, from the `--ca-*` flags given (a default is not given: it cannot be stray). */
function caSourceFrom(given: (name: string) => string | undefined, context: Parameters<typeof parseCaSourceFlags>[1]): CaSource {
  try {
    return parseCaSourceFlags(
      {
        issuer: given('ca-issuer'),
        issuerGroup: given('ca-issuer-group'),
        intermediateDuration: given('ca-intermediate-duration'),
        requestDeadline: given('ca-request-deadline'),
        fromSecret: given('ca-from-secret'),
        trustAnchors: given('ca-trust-anchors'),
      },
      context,
    );
  } catch (e) {
    if (e instanceof CaSourceFlagError) throw new ConfigError(e.message);
    throw e;
  }
}

/** The modes, and pruning, which deletes provider Secrets and so needs the Secret mode. */
function modesAndPruning(
  read: <T>(name: string, convert: (s: string) => T | undefined) => T,
): Pick<ControllerConfig, 'secretMode' | 'podCertificates' | 'pruneOrphanedSecretsAfter'> {
  const modes = modesFrom(read);
  const pruneOrphanedSecretsAfter = read('prune-orphaned-secrets-after', (s) => {
    const d = parseDuration(s);
    return d === 0 || (d !== undefined && d >= MIN_PRUNE_GRACE) ? d : undefined;
  });
  if (pruneOrphanedSecretsAfter > 0 && !modes.secretMode) {
    throw new ConfigError(
      '--prune-orphaned-secrets-after (env ESO_MTLS_PRUNE_ORPHANED_SECRETS_AFTER) needs --modes to include secret: pod-certificate-only mode never reads provider Secrets',
    );
  }
  return { ...modes, pruneOrphanedSecretsAfter };
}

/** The modes and, with pod certificates, their signer names and limit. */
function modesFrom(read: <T>(name: string, convert: (s: string) => T | undefined) => T): Pick<ControllerConfig, 'secretMode' | 'podCertificates'> {
  const modes = read('modes', parseModes);
  const serverSignerName = read('server-signer-name', (s) => (isSignerName(s) ? s : undefined));
  const clientSignerName = read('client-signer-name', (s) => (isSignerName(s) ? s : undefined));
  if (serverSignerName === clientSignerName) {
    throw new ConfigError(`--server-signer-name and --client-signer-name are both ${JSON.stringify(serverSignerName)}: the two signers need different names`);
  }
  const maxValidity = read('pod-certificate-max-validity', (s) => {
    const d = durationWithin(MIN_POD_LIFETIME, MAX_POD_LIFETIME)(s);
    return d !== undefined && d % 1000 === 0 ? d : undefined;
  });
  const pendingBound = {
    total: read('pod-certificate-max-pending', (s) => parseLimit(s) || undefined),
    perNamespace: read('pod-certificate-max-pending-per-namespace', (s) => parseLimit(s) || undefined),
  };
  return {
    secretMode: modes.has('secret'),
    podCertificates: modes.has('pod-certificate') ? { serverSignerName, clientSignerName, maxValidity, pendingBound } : undefined,
  };
}

/** `secret`, `pod-certificate` or both, comma-separated, each once. */
function parseModes(s: string): Set<string> | undefined {
  const modes = s.split(',').map((m) => m.trim());
  const set = new Set(modes);
  return modes.length > 0 && set.size === modes.length && modes.every((m) => m === 'secret' || m === 'pod-certificate') ? set : undefined;
}

const POLICY_FLAGS: Partial<Record<keyof Policy, string>> = {
  esoNamespace: 'namespace',
  clusterDomain: 'cluster-domain',
  serviceAccount: 'service-account',
  reconcileInterval: 'reconcile-interval',
  propagationDelay: 'propagation-delay',
  keyAlgorithm: 'key-algorithm',
};

function policyFrom(read: <T>(name: string, convert: (s: string) => T | undefined) => T, esoNamespace: string): Policy {
  const overrides: Partial<Policy> = {
    esoNamespace,
    clusterDomain: read('cluster-domain', (s) => s),
    serviceAccount: read('service-account', (s) => s),
    reconcileInterval: read('reconcile-interval', parseDuration),
    // The bounds are the flag's, not the core's: a simulation or a test may model any delivery time.
    propagationDelay: read('propagation-delay', durationWithin(MIN_PROPAGATION_DELAY, MAX_PROPAGATION_DELAY)),
    keyAlgorithm: read('key-algorithm', (s) => KEY_ALGORITHMS.find((k) => k === s) as KeyAlgorithm | undefined),
  };
  try {
    return resolvePolicy(overrides);
  } catch (e) {
    if (!(e instanceof PolicyError)) throw e;
    // The core words the rule; we add which flag (and variable) set the value. A rule about a field
    // with no flag (leafLookahead) was broken by some flag's value: the one whose default fixes it.
    const flag = POLICY_FLAGS[e.field] ?? culprit(overrides);
    throw new ConfigError(flag === undefined ? e.message : `--${flag} (env ${envVarOf(flag)}): ${e.message}`);
  }
}

function culprit(overrides: Partial<Policy>): string | undefined {
  for (const field of Object.keys(overrides) as (keyof Policy)[]) {
    try {
      resolvePolicy({ ...overrides, [field]: undefined });
      return POLICY_FLAGS[field];
    } catch {
      // not this one
    }
  }
  return undefined;
}

/** A reader of durations from `min` to `max`, both included. */
function durationWithin(min: Duration, max: Duration): (s: string) => Duration | undefined {
  return (s) => {
    const d = parseDuration(s);
    return d !== undefined && d >= min && d <= max ? d : undefined;
  };
}

function positiveDuration(s: string): Duration | undefined {
  const d = parseDuration(s);
  return d === undefined || d <= 0 ? undefined : d;
}

/** A whole number from 0 (no limit) to 1,000,000, in decimal digits only. */
function parseLimit(s: string): number | undefined {
  if (!/^[0-9]{1,7}$/.test(s)) return undefined;
  const n = Number(s);
  return n <= 1_000_000 ? n : undefined;
}

function parseBool(s: string): boolean | undefined {
  if (s === 'true' || s === '1') return true;
  if (s === 'false' || s === '0') return false;
  return undefined;
}

/** Where the CA keys live when a PKCS#11 module is configured. */
export type Pkcs11Config = NonNullable<ControllerConfig['pkcs11']>;

/** The PKCS#11 settings: all or nothing, with exactly one source of the PIN. */
function pkcs11From(
  read: <T>(name: string, convert: (s: string) => T | undefined) => T,
  given: (name: string) => boolean,
  env: Readonly<Record<string, string | undefined>>,
): Pkcs11Config | undefined {
  const others = ['hsm-token-label', 'hsm-key-label-prefix', 'hsm-pin-file', 'hsm-keep-retired-keys'];
  const pinInEnv = env[PIN_ENV] !== undefined && env[PIN_ENV] !== '';
  if (!given('hsm-module')) {
    const stray = others.find(given);
    if (stray !== undefined) throw new ConfigError(`--${stray} (env ${envVarOf(stray)}) is set but --hsm-module is not: set both, or neither`);
    if (pinInEnv) throw new ConfigError(`${PIN_ENV} is set but --hsm-module is not: set both, or neither`);
    return undefined;
  }
  if (!given('hsm-token-label')) throw new ConfigError(`--hsm-module needs --hsm-token-label (env ${envVarOf('hsm-token-label')})`);
  if (given('hsm-pin-file') === pinInEnv) {
    throw new ConfigError(`--hsm-module needs the token's PIN from exactly one of --hsm-pin-file (env ${envVarOf('hsm-pin-file')}) and ${PIN_ENV}`);
  }
  const nonEmpty = (s: string): string | undefined => (s.length > 0 ? s : undefined);
  return {
    modulePath: read('hsm-module', nonEmpty),
    tokenLabel: read('hsm-token-label', (s) => (s.length > 0 && s.length <= 32 ? s : undefined)),
    keyLabelPrefix: read('hsm-key-label-prefix', (s) => (/^[\x21-\x7e]{0,64}$/.test(s) ? s : undefined)),
    pin: given('hsm-pin-file') ? { file: read('hsm-pin-file', nonEmpty) } : { env: PIN_ENV },
    keepRetiredKeys: read('hsm-keep-retired-keys', parseBool),
  };
}
