import { isDnsLabel } from '@eso-mtls/core';
import { resolve } from 'node:path';
import { type CliStreams, type Flag, goFlagWords, helpTable, parseDuration, readArgv } from '@eso-mtls/controller';
import { DEFAULT_PROVIDER_NAMESPACE, type DevCertsLayout, type DevProvider } from '../dev-certs/layout.js';
import { RefusedFolderError } from '../dev-certs/folder-trust.js';
import { runDevCerts } from '../dev-certs/run-dev-certs.js';
import { LOCK_FILE } from '../dev-certs/run-lock.js';
import { LEAF_VALIDITIES, type LeafValidity } from '../dev-certs/validity.js';

const COMMAND = 'eso-mtls dev-certs';

/**
 * Floors of --rotate-every. A leaf rotation needs the schedule's propagation delay (3 s) to reach
 * the folders and be reloaded; an overlap CA rotation needs its whole quiet window (prepare,
 * activate 3 s later, retire once the newest leaf is 3 s + 8 s of connection age old, about 22 s).
 */
export const MIN_ROTATE_EVERY_MS = 5_000;
/** See {@link MIN_ROTATE_EVERY_MS}. */
export const MIN_CA_ROTATE_EVERY_MS = 30_000;
const MAX_ROTATE_EVERY_MS = 24 * 3_600_000;
/** Providers one run issues for: enough for a developer's machine, bounded like everything typed. */
export const MAX_DEV_PROVIDERS = 20;

const DEV_CERTS_FLAGS: readonly Flag[] = [
  { name: 'dir', kind: 'string', accepts: 'a path to a new, empty or earlier dev-certs folder' },
  { name: 'provider', kind: 'string', repeatable: true, accepts: 'NAME or NAME.NAMESPACE, each a DNS-1123 label' },
  {
    name: 'rotate-every',
    kind: 'string',
    accepts: `a duration such as 30s or 2m, from ${MIN_ROTATE_EVERY_MS / 1000}s (${MIN_CA_ROTATE_EVERY_MS / 1000}s with --ca-rotation) to 24h`,
  },
  { name: 'ca-rotation', kind: 'bool', accepts: 'true or false' },
  { name: 'once', kind: 'bool', accepts: 'true or false' },
  { name: 'validity', kind: 'string', accepts: 'current, expired or not-yet-valid' },
];

const USAGE = `Usage: ${COMMAND} --dir DIR [--provider NAME[.NAMESPACE]]... [--once | --rotate-every DURATION [--ca-rotation]] [--validity VALIDITY]

Writes certificate folders for developing a provider without a cluster, the way the kubelet lays
out a mounted Secret (files behind a ..data symlink swapped in one rename), issued by the
controller's own planner on the demo's short schedule:

  DIR/NAME.NAMESPACE/   a provider's tls.crt, tls.key and ca.crt (one folder per --provider)
  DIR/eso-client/       ESO core's client certificate, key and ca.crt
  DIR/ca/               ca.crt: the CA bundle alone

It writes the folders, prints where they are, then keeps running until Ctrl-C: rotating them
with --rotate-every, otherwise leaving them as written (a leaf lives 90 days). With --once it
exits 0 as soon as they are written. Either way the folders stay, each whole. The certificates are
for this machine only: the CA's key lives in this process and is gone when it stops, so a later
run issues a new CA.

DIR must be yours and writable by nobody else (not group or other writable), under folders
nobody else can swap it in; dev-certs follows no link it did not make. One dev-certs at a time
writes a DIR (it holds DIR/${LOCK_FILE} with its PID).

Flags:
${helpTable([
  ['--dir <path>', "where to write (required): a new path, an empty folder or an earlier run's; a folder holding anything else is refused"],
  [
    '--provider <NAME[.NAMESPACE]>',
    [
      `a provider Service to issue for; repeat for more (default my-provider.${DEFAULT_PROVIDER_NAMESPACE}).`,
      `Its server name is NAME.NAMESPACE.svc (NAMESPACE default ${DEFAULT_PROVIDER_NAMESPACE})`,
    ],
  ],
  ['--once', 'write the folders, print where, and exit 0 (not with --rotate-every)'],
  [
    '--rotate-every <duration>',
    `rotate every leaf this often (at least ${MIN_ROTATE_EVERY_MS / 1000}s); without it nothing rotates, and the run waits for Ctrl-C unless --once`,
  ],
  ['--ca-rotation', `make each rotation an overlap CA rotation, which re-issues every leaf (--rotate-every at least ${MIN_CA_ROTATE_EVERY_MS / 1000}s)`],
  [
    '--validity <validity>',
    [
      "current (default); expired: every leaf's notAfter a day ago (the CA stays valid);",
      "not-yet-valid: every leaf's (and the CA's) notBefore a day ahead; for trying a provider's refusals",
    ],
  ],
  ['--help', 'print this text'],
])}
`;

/** What the flags ask for. */
export interface DevCertsArgs {
  readonly dir: string;
  readonly providers: readonly DevProvider[];
  readonly rotateEveryMs?: number;
  readonly caRotation: boolean;
  /** Exit once the folders are written. */
  readonly once: boolean;
  /** The validity the leaves are issued with, relative to now. */
  readonly validity: LeafValidity;
}

/** A flag value dev-certs cannot use; the message names the flag, the value and what to do. */
class DevCertsFlagError extends Error {}

const flag = (name: string): Flag => DEV_CERTS_FLAGS.find((f) => f.name === name)!;
const invalid = (name: string, value: string): DevCertsFlagError => new DevCertsFlagError(`--${name}: ${JSON.stringify(value)} is not ${flag(name).accepts}`);

/** One `--provider` value: `NAME` or `NAME.NAMESPACE`. */
function parseProvider(text: string): DevProvider {
  const [service = '', namespace = DEFAULT_PROVIDER_NAMESPACE, ...rest] = text.split('.');
  if (rest.length > 0 || !isDnsLabel(service) || !isDnsLabel(namespace)) throw invalid('provider', text);
  return { service, namespace };
}

/** Parses `eso-mtls dev-certs` flags; throws naming the flag, the value and what it accepts. */
export function parseDevCertsArgs(argv: readonly string[]): DevCertsArgs | 'help' {
  const read = readArgv(argv, { command: COMMAND, flags: DEV_CERTS_FLAGS, words: goFlagWords(COMMAND) });
  if (read.kind === 'error') throw new DevCertsFlagError(read.message);
  if (read.kind === 'help') return 'help';
  const v = read.values;
  const dir = v.get('dir');
  if (dir === undefined || dir === '') throw new DevCertsFlagError(`--dir is required: the folder to write the certificates into, e.g. --dir ./dev-certs`);
  const providers = (v.get('provider') ?? `my-provider.${DEFAULT_PROVIDER_NAMESPACE}`).split(',').map(parseProvider);
  if (providers.length > MAX_DEV_PROVIDERS)
    throw new DevCertsFlagError(`--provider: ${providers.length} providers is more than ${MAX_DEV_PROVIDERS}; name at most ${MAX_DEV_PROVIDERS}`);
  const seen = new Set<string>();
  for (const p of providers) {
    const name = `${p.service}.${p.namespace}`;
    if (seen.has(name)) throw new DevCertsFlagError(`--provider: ${name} is named twice; name each provider once`);
    seen.add(name);
  }
  const caRotation = v.get('ca-rotation') ?? 'false';
  if (caRotation !== 'true' && caRotation !== 'false') throw invalid('ca-rotation', caRotation);
  const once = v.get('once') ?? 'false';
  if (once !== 'true' && once !== 'false') throw invalid('once', once);
  const validity = (v.get('validity') ?? 'current') as LeafValidity;
  if (!LEAF_VALIDITIES.includes(validity)) throw invalid('validity', validity);
  const rotateText = v.get('rotate-every');
  if (rotateText === undefined) {
    if (caRotation === 'true')
      throw new DevCertsFlagError(`--ca-rotation needs --rotate-every: say how often, e.g. --rotate-every ${MIN_CA_ROTATE_EVERY_MS / 1000}s`);
    return { dir: resolve(dir), providers, caRotation: false, once: once === 'true', validity };
  }
  if (once === 'true')
    throw new DevCertsFlagError(`--once exits once the folders are written, so nothing would rotate: drop --once or --rotate-every ${rotateText}`);
  const rotateEveryMs = parseDuration(rotateText);
  const floor = caRotation === 'true' ? MIN_CA_ROTATE_EVERY_MS : MIN_ROTATE_EVERY_MS;
  if (rotateEveryMs === undefined || rotateEveryMs > MAX_ROTATE_EVERY_MS) throw invalid('rotate-every', rotateText);
  if (rotateEveryMs < floor) {
    const why =
      caRotation === 'true' ? 'an overlap CA rotation (prepare, activate, retire) takes about 22s' : 'a rotation needs 3s to reach the folders and be reloaded';
    throw new DevCertsFlagError(`--rotate-every: ${JSON.stringify(rotateText)} is too short: ${why}; use at least ${floor / 1000}s`);
  }
  return { dir: resolve(dir), providers, rotateEveryMs, caRotation: caRotation === 'true', once: false, validity };
}

/** The lines printed once the folders are written: what is where, and what each serves. */
function formatReady(layout: DevCertsLayout, args: DevCertsArgs): string {
  const lines = [`${COMMAND}: certificates written under ${layout.dir}`];
  for (const p of layout.providers) lines.push(`  provider ${p.provider.service}.${p.provider.namespace}.svc  ${p.directory}`);
  lines.push(`  ESO client (CN external-secrets-core)  ${layout.client}`, `  CA bundle  ${layout.ca}/ca.crt`);
  if (args.validity !== 'current')
    lines.push(`Every leaf is ${args.validity === 'expired' ? 'already expired' : 'not yet valid'} (--validity ${args.validity}).`);
  if (args.once) {
    lines.push('Written once (--once); exiting. A later run issues a new CA.');
    return `${lines.join('\n')}\n`;
  }
  if (args.rotateEveryMs === undefined) lines.push('No rotations: pass --rotate-every to rotate, or --once to exit now.');
  else lines.push(`${args.caRotation ? 'An overlap CA rotation, re-issuing every leaf,' : 'Every leaf rotates'} every ${args.rotateEveryMs / 1000}s.`);
  lines.push('Press Ctrl-C to stop.');
  return `${lines.join('\n')}\n`;
}

/** `eso-mtls dev-certs [flags]`: resolves with the exit code (0 stopped by a signal or written --once, 1 failed or refused the folder, 2 bad flags). */
export async function runDevCertsCommand(
  argv: readonly string[],
  streams: CliStreams = { stdout: process.stdout, stderr: process.stderr },
  signal?: AbortSignal,
): Promise<number> {
  let args: DevCertsArgs | 'help';
  try {
    args = parseDevCertsArgs(argv);
  } catch (e) {
    if (!(e instanceof DevCertsFlagError)) throw e;
    // readArgv's own messages already point to --help.
    const seeHelp = e.message.includes('--help') ? '' : `; see ${COMMAND} --help`;
    streams.stderr.write(`${COMMAND}: ${e.message}${seeHelp}\n`);
    return 2;
  }
  if (args === 'help') {
    streams.stdout.write(USAGE);
    return 0;
  }
  const stop = new AbortController();
  const onSignal = (name: NodeJS.Signals): void => {
    streams.stderr.write(`${COMMAND}: ${name}: stopping\n`);
    stop.abort();
  };
  const onAbort = (): void => stop.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const chosen = args;
    await runDevCerts({ ...chosen, signal: stop.signal, out: streams.stdout, onReady: (layout) => streams.stdout.write(formatReady(layout, chosen)) });
    if (!args.once) streams.stderr.write(`${COMMAND}: stopped; every folder in ${args.dir} is whole\n`);
    return 0;
  } catch (e) {
    const what = e instanceof RefusedFolderError ? e.message : `failed: ${(e as Error).message}`;
    streams.stderr.write(`${COMMAND}: ${what}\n`);
    return 1;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
