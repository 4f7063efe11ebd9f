import { homedir } from 'node:os';
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { isDnsLabel } from '@eso-mtls/core';
import { type Installation, installationOf } from '@eso-mtls/kubernetes';
import { type Flag, readArgv } from '../command-line/args.js';
import { type Pkcs11Config, parseControllerConfig } from '../config.js';
import { CONTROLLER_FLAGS, PIN_ENV, envVarOf } from '../flags.js';

/**
 * The controller's flags that decide what status expects, read from the same environment
 * variables: status and the controller cannot disagree silently. The controller's `--namespace`
 * (ESO's namespace) is `--eso-namespace` here, because `--namespace` names a provider namespace
 * as in kubectl; its variable is still ESO_MTLS_NAMESPACE.
 */
const POLICY_FLAG_NAMES = [
  'cluster-domain',
  'ca-secret-name',
  'client-secret-name',
  'service-account',
  'reconcile-interval',
  'propagation-delay',
  'key-algorithm',
  'modes',
  'server-signer-name',
  'client-signer-name',
  'pod-certificate-max-validity',
  'require-namespace-label',
  'max-namespaces',
  'leader-election-namespace',
  'leader-election-id',
  'leader-election-lease-duration',
  'leader-election-renew-deadline',
  'leader-election-retry-period',
] as const;
/**
 * The controller's flags naming the PKCS#11 token of the CA keys: with them, status asks the token
 * whether it holds each CA's key; without them, a CA key kept there is shown as not checked.
 */
const HSM_FLAG_NAMES = ['hsm-module', 'hsm-token-label', 'hsm-pin-file'] as const;
const ESO_NAMESPACE: Flag = { ...CONTROLLER_FLAGS.find((f) => f.name === 'namespace')!, name: 'eso-namespace' };
const POLICY_FLAGS: readonly Flag[] = [ESO_NAMESPACE, ...POLICY_FLAG_NAMES.map((n) => CONTROLLER_FLAGS.find((f) => f.name === n)!)];
const CONNECTION_FLAGS: readonly Flag[] = [
  ESO_NAMESPACE,
  ...(['ca-secret-name', 'client-secret-name'] as const).map((n) => CONTROLLER_FLAGS.find((f) => f.name === n)!),
];

const KUBECONFIG: Flag = {
  name: 'kubeconfig',
  kind: 'string',
  accepts: 'a path to a kubeconfig file',
  help: 'kubeconfig with your own credentials (default $KUBECONFIG when set, else ~/.kube/config, else in-cluster)',
};
const shared = (f: Flag): Flag => ({
  name: f.name,
  kind: f.kind,
  accepts: f.accepts,
  help: `${(f.help ?? '').replace(/--namespace\b/g, '--eso-namespace')}${f.default === undefined || f.default === '' ? '' : ` (default ${f.default})`}`,
  env: f.name === 'eso-namespace' ? envVarOf('namespace') : envVarOf(f.name),
});

/** The flags of `eso-mtls status`. */
export const STATUS_FLAGS: readonly Flag[] = [
  KUBECONFIG,
  { name: 'namespace', short: 'n', kind: 'string', accepts: 'a namespace name', help: 'show this provider namespace only (default: every one)' },
  { name: 'output', short: 'o', kind: 'string', accepts: 'text, json or yaml', help: 'output format (default text)' },
  ...POLICY_FLAGS.map(shared),
  ...HSM_FLAG_NAMES.map((n) => shared(CONTROLLER_FLAGS.find((f) => f.name === n)!)).map((f) =>
    f.name === 'hsm-module'
      ? { ...f, help: "the controller's PKCS#11 module: check the CA keys it keeps in the token (needs @eso-mtls/pkcs11); unset: not checked" }
      : f,
  ),
];

/** The flags of `eso-mtls renew`. */
export const RENEW_FLAGS: readonly Flag[] = [
  KUBECONFIG,
  { name: 'namespace', short: 'n', kind: 'string', accepts: 'a namespace name', help: "renew this provider namespace's server certificate" },
  { name: 'client', kind: 'bool', accepts: 'true or false', help: "renew ESO's client certificate" },
  { name: 'ca', kind: 'bool', accepts: 'true or false', help: 'start an overlap CA rotation (no call fails)' },
  {
    name: 'emergency',
    kind: 'bool',
    accepts: 'true or false',
    help: 'with --ca: a hard cut-over, for a suspected key compromise (calls fail until peers reload)',
  },
  ...CONNECTION_FLAGS.map(shared),
];

/** Help text of a command: usage line, description, and aligned flag columns. */
export function commandUsage(usage: string, description: string, flags: readonly Flag[]): string {
  const names = flags.map((f) => `${f.short ? `-${f.short}, ` : '    '}--${f.name}${f.kind === 'bool' ? '' : ' <value>'}`);
  const width = Math.max(...names.map((n) => n.length));
  const lines = [`Usage: ${usage}`, '', description, '', 'Flags:'];
  flags.forEach((f, i) => {
    lines.push(`  ${names[i]!.padEnd(width)}  ${f.help ?? ''}`);
    if (f.env) lines.push(`  ${''.padEnd(width)}  env ${f.env}, as for the controller`);
  });
  lines.push(`  ${'    --help'.padEnd(width)}  print this text`);
  return `${lines.join('\n')}\n`;
}

/** Status and renew write no Secret: the writer of the installation they assume is never stamped anywhere. */
const STATUS_WRITER = 'eso-mtls-status';

/** Where each policy value came from, for the line that says which policy status assumed. */
export type ValueSource = 'flag' | 'env' | 'default';

/**
 * The installation status and renew assume: the controller's own, built by the same function from
 * the same flags and variables; and what only status reads beside it.
 */
export interface AssumedInstallation extends Installation {
  /** Status only: the leader election Lease and the lease duration (milliseconds) its holder is judged by. */
  readonly lease?: { readonly namespace: string; readonly name: string; readonly leaseDuration: number };
  /** Flag name (as typed for this command) → where its value came from. */
  readonly sources: ReadonlyMap<string, ValueSource>;
}

/** What argv and the environment asked of status or renew. */
export interface CliOptions {
  readonly values: ReadonlyMap<string, string>;
  readonly assumed: AssumedInstallation;
  /** The kubeconfig file to use, or undefined for in-cluster credentials. */
  readonly kubeconfig: KubeconfigChoice | undefined;
  /** The PKCS#11 token of the CA keys, as the controller reads `--hsm-*`; undefined: not given. */
  readonly pkcs11?: Pkcs11Config;
}

/** The outcome of reading status's or renew's command line. */
export type CliOptionsResult =
  { readonly kind: 'options'; readonly options: CliOptions } | { readonly kind: 'help' } | { readonly kind: 'error'; readonly message: string };

/**
 * Reads `argv` with the one flag parser, then the policy through the controller's own
 * configuration reader (flags translated, environment limited to the shared variables), so every
 * value is validated exactly as the controller validates it.
 */
export function readCliOptions(
  command: string,
  flags: readonly Flag[],
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): CliOptionsResult {
  const args = readArgv(argv, { command, flags });
  if (args.kind !== 'flags') return args;
  const values = args.values;
  const namespace = values.get('namespace');
  if (namespace !== undefined && !isDnsLabel(namespace)) {
    return { kind: 'error', message: `--namespace ${JSON.stringify(namespace)} is not a namespace name (a DNS-1123 label such as team-a)` };
  }
  const policyFlags = flags.filter((f) => f.env !== undefined);
  const controllerArgv: string[] = [];
  const controllerEnv: Record<string, string | undefined> = {};
  const sources = new Map<string, ValueSource>();
  for (const f of policyFlags) {
    const controllerName = f.name === 'eso-namespace' ? 'namespace' : f.name;
    const value = values.get(f.name);
    if (value !== undefined) controllerArgv.push(`--${controllerName}=${value}`);
    controllerEnv[f.env!] = env[f.env!];
    sources.set(f.name, value !== undefined ? 'flag' : env[f.env!] ? 'env' : 'default');
  }
  // The PIN has a variable and no flag: read as the controller reads it, by the commands that name a token.
  if (flags.some((f) => f.name === 'hsm-module')) controllerEnv[PIN_ENV] = env[PIN_ENV];
  const parsed = parseControllerConfig(controllerArgv, controllerEnv);
  if (parsed.kind === 'error') return { kind: 'error', message: parsed.error.message.replace(/--namespace\b/g, '--eso-namespace') };
  if (parsed.kind === 'help') return { kind: 'help' };
  const { pkcs11, leaderElection } = parsed.config;
  // The Lease is read whether or not the controller elects a leader: without --leader-elect it yields to whoever holds it.
  const lease = flags.some((f) => f.name === 'leader-election-id')
    ? { namespace: leaderElection.namespace, name: leaderElection.leaseName, leaseDuration: leaderElection.leaseDuration }
    : undefined;
  const kubeconfig = chooseKubeconfig(values.get('kubeconfig'), env);
  if (kubeconfig !== undefined && 'error' in kubeconfig) return { kind: 'error', message: kubeconfig.error };
  return {
    kind: 'options',
    options: {
      values,
      assumed: { ...installationOf(parsed.config, STATUS_WRITER), ...(lease ? { lease } : {}), sources },
      kubeconfig,
      ...(pkcs11 ? { pkcs11 } : {}),
    },
  };
}

/** The kubeconfig file status or renew reads, and the setting that chose it (errors name that setting). */
export interface KubeconfigChoice {
  readonly path: string;
  readonly setting: '--kubeconfig' | '$KUBECONFIG' | '~/.kube/config';
}

/**
 * kubectl's choice of kubeconfig: the flag, else the first existing file of $KUBECONFIG, else
 * ~/.kube/config if it exists, else undefined (in-cluster). As in kubectl, a set $KUBECONFIG is
 * never followed by ~/.kube/config: when none of its files exists, that is an error naming it. The
 * controller's ESO_MTLS_KUBECONFIG is not read: status acts with the user's credentials, not the
 * controller's.
 */
export function chooseKubeconfig(
  flag: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): KubeconfigChoice | undefined | { readonly error: string } {
  if (flag !== undefined) return { path: flag, setting: '--kubeconfig' };
  const separator = process.platform === 'win32' ? ';' : ':';
  const listed = (env.KUBECONFIG ?? '').split(separator).filter((p) => p !== '');
  if (listed.length > 0) {
    const found = listed.find((p) => existsSync(p));
    if (found !== undefined) return { path: found, setting: '$KUBECONFIG' };
    const which = listed.length === 1 ? 'no such file' : 'none of the files it lists exists';
    return {
      error: `$KUBECONFIG ${env.KUBECONFIG}: ${which}; as with kubectl, ~/.kube/config is not read while KUBECONFIG is set: correct it, unset it, or pass --kubeconfig`,
    };
  }
  const fallback = join(env.HOME ?? homedir(), '.kube', 'config');
  return existsSync(fallback) ? { path: fallback, setting: '~/.kube/config' } : undefined;
}
