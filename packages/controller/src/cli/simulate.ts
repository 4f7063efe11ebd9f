import {
  type CaPhase,
  type Duration,
  KEY_ALGORITHMS,
  type KeyAlgorithm,
  type Policy,
  PolicyError,
  PROVIDER_SECRET_NAME,
  type RotationReason,
  SIMULATION_EPOCH,
  type SimulationEvent,
  type SimulationResult,
  days,
  resolvePolicy,
  seededRandom,
  simulate,
} from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { formatFlagDuration, parseDuration } from '../duration.js';
import { type Flag, type HelpRow, helpTable, readArgv } from '../command-line/args.js';
import { CHART_FILE_ACCEPTS, isChartFileName } from './chart-file-name.js';
import type { CliStreams } from './controller.js';
import { type DeveloperTools, DevtoolsMissingError, loadDeveloperTools } from './developer-tools.js';
import { EXIT_INTERRUPTED } from './stop-signals.js';
import { isTerminal } from './terminal.js';

const DURATION = 'a duration such as 90d, 36h, 10m or 1d12h';
/** Policy fields that have a flag, with the flag name. */
const POLICY_FLAGS = {
  caValidity: 'ca-validity',
  caLookahead: 'ca-lookahead',
  leafValidity: 'leaf-validity',
  leafLookahead: 'leaf-lookahead',
  leafJitter: 'leaf-jitter',
  notBeforeBackdate: 'not-before-backdate',
  reconcileInterval: 'reconcile-interval',
  propagationDelay: 'propagation-delay',
  maxConnectionAge: 'max-connection-age',
} as const satisfies Partial<Record<keyof Policy, string>>;

const USAGE = `Usage: eso-mtls simulate [flags]

Runs the real planner over simulated time with an in-memory cluster, checks that trust is never
broken and that no certificate in use reaches its last day, and prints the timeline.
Exits 1 if any invariant was violated, so it can test a rotation policy offline.

Flags:
${helpTable([
  ['--years <n>', 'simulated years (default 3)'],
  ['--services <n>', 'labelled Services (default 200)'],
  ['--namespaces <n>', 'namespaces they are spread over (default: services / 4, rounded up)'],
  ['--seed <n>', 'seed of serial numbers, hence of the jitter and the timeline (default 1)'],
  ['--delete-ca-at <duration>', 'delete the CA Secret this long after the start (recovery)'],
  ['--emergency-at <duration>', 'request an emergency CA rotation this long after the start'],
  ['--timeline', 'print every issuance, not only the first ones and the CA phases'],
  ['--json', 'print the summary and timeline as JSON (instants as ISO 8601)'],
  ['--chart <file>', 'also draw the rotation timeline into this .svg or .html file (needs @eso-mtls/devtools)'],
  ...Object.values(POLICY_FLAGS).map((f): HelpRow => [`--${f} <duration>`, 'policy override']),
  ['--key-algorithm <name>', KEY_ALGORITHMS.join(', ')],
  ['--fresh-keys', 'a real key per leaf, as the controller does (default: leaves share a small pool of real keys)'],
  ['--cluster-domain <name>', 'cluster DNS domain (default cluster.local)'],
  ['--help', 'print this text'],
])}

A progress line is drawn on stderr while it runs, when stderr is a terminal.
`;

const SIMULATE_FLAGS: readonly Flag[] = [
  ...['years', 'services', 'namespaces', 'seed'].map((name) => ({ name, kind: 'string' as const, accepts: 'a number' })),
  ...['delete-ca-at', 'emergency-at', ...Object.values(POLICY_FLAGS)].map((name) => ({ name, kind: 'string' as const, accepts: DURATION })),
  { name: 'key-algorithm', kind: 'string', accepts: KEY_ALGORITHMS.join(', ') },
  { name: 'cluster-domain', kind: 'string', accepts: 'a DNS name such as cluster.local' },
  { name: 'chart', kind: 'string', accepts: CHART_FILE_ACCEPTS },
  { name: 'timeline', kind: 'bool' },
  { name: 'fresh-keys', kind: 'bool' },
  { name: 'json', kind: 'bool' },
];

/** A flag's value that is not what the flag accepts. */
class FlagError extends Error {}

/** Durations as the controller flags write them (`90d`, `1d12h`, `10m`). */
function parseSimDuration(flag: string, text: string): Duration {
  const value = parseDuration(text);
  if (value === undefined) throw new FlagError(`--${flag}: ${JSON.stringify(text)} is not ${DURATION}`);
  return value;
}

function parseCount(flag: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < min || n > max) throw new FlagError(`--${flag}: ${JSON.stringify(text)} is not a whole number from ${min} to ${max}`);
  return n;
}

/** What the flags ask for. */
export interface SimulateArgs {
  readonly policy: Policy;
  readonly years: number;
  readonly services: number;
  readonly namespaces: number;
  readonly seed: number;
  readonly events: readonly SimulationEvent[];
  readonly timeline: boolean;
  readonly json: boolean;
  /** A real key per leaf instead of the pool. */
  readonly freshKeys: boolean;
  /** Where to draw the rotation timeline (.svg or .html), if asked. */
  readonly chart?: string;
  /** The text typed for each policy duration given on the command line, to print it back as typed. */
  readonly typed: Readonly<Partial<Record<keyof Policy, string>>>;
}

/** Parses `eso-mtls simulate` flags; throws an Error naming the flag and what it accepts. */
export function parseSimulateArgs(argv: readonly string[]): SimulateArgs | 'help' {
  const read = readArgv(argv, { command: 'eso-mtls simulate', flags: SIMULATE_FLAGS });
  if (read.kind === 'error') throw new FlagError(read.message);
  if (read.kind === 'help') return 'help';
  const str = (k: string): string | undefined => read.values.get(k);
  const yearsText = str('years') ?? '3';
  const years = Number(yearsText);
  if (!/^\d+(\.\d+)?$/.test(yearsText) || years <= 0 || years > 100)
    throw new FlagError(`--years: ${JSON.stringify(yearsText)} is not a number of years above 0 and at most 100`);
  const services = parseCount('services', str('services') ?? '200', 1, 100_000);
  const namespaces = parseCount('namespaces', str('namespaces') ?? String(Math.ceil(services / 4)), 1, services);
  const seed = parseCount('seed', str('seed') ?? '1', 0, 2 ** 32 - 1);
  const keyAlgorithm = str('key-algorithm');
  if (keyAlgorithm !== undefined && !(KEY_ALGORITHMS as readonly string[]).includes(keyAlgorithm)) {
    throw new FlagError(`--key-algorithm: ${JSON.stringify(keyAlgorithm)} is not one of ${KEY_ALGORITHMS.join(', ')}`);
  }
  const overrides: Partial<Record<keyof Policy, unknown>> = { keyAlgorithm: keyAlgorithm as KeyAlgorithm | undefined, clusterDomain: str('cluster-domain') };
  const typed: Partial<Record<keyof Policy, string>> = {};
  for (const [field, flag] of Object.entries(POLICY_FLAGS)) {
    const text = str(flag);
    if (text === undefined) continue;
    overrides[field as keyof Policy] = parseSimDuration(flag, text);
    typed[field as keyof Policy] = text;
  }
  let policy: Policy;
  try {
    policy = resolvePolicy(overrides as Partial<Policy>);
  } catch (e) {
    if (!(e instanceof PolicyError)) throw e;
    const flag = (POLICY_FLAGS as Partial<Record<string, string>>)[e.field] ?? e.field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    throw new FlagError(`--${flag}: ${e.message}`);
  }
  const events: SimulationEvent[] = [];
  const deleteAt = str('delete-ca-at');
  if (deleteAt !== undefined) events.push({ at: SIMULATION_EPOCH + parseSimDuration('delete-ca-at', deleteAt), kind: 'deleteSecret', target: 'ca' });
  const emergencyAt = str('emergency-at');
  if (emergencyAt !== undefined)
    events.push({ at: SIMULATION_EPOCH + parseSimDuration('emergency-at', emergencyAt), kind: 'requestCaRotation', token: 'emergency' });
  const chart = str('chart');
  if (chart !== undefined && !isChartFileName(chart)) throw new FlagError(`--chart: ${JSON.stringify(chart)} is not ${CHART_FILE_ACCEPTS}`);
  return {
    policy,
    years,
    services,
    namespaces,
    seed,
    events,
    timeline: switchOf(read.values, 'timeline'),
    json: switchOf(read.values, 'json'),
    freshKeys: switchOf(read.values, 'fresh-keys'),
    typed,
    ...(chart === undefined ? {} : { chart }),
  };
}

/** A bool flag's value: absent or `false` is off, bare or `true` is on. */
function switchOf(values: ReadonlyMap<string, string>, name: string): boolean {
  const value = values.get(name);
  if (value !== undefined && value !== 'true' && value !== 'false') throw new FlagError(`--${name}: ${JSON.stringify(value)} is not true or false`);
  return value === 'true';
}

const iso = (t: number): string => new Date(t).toISOString().replace('.000Z', 'Z');
const CA_PHASE_WORDS: Record<CaPhase, string> = {
  create: 'CA created',
  prepare: 'next CA generated and published in every bundle (not signing yet)',
  activate: 'next CA activated: it signs from now on, the old one stays trusted as retired',
  retire: 'retired CA dropped from every bundle',
  recover: 'CA key lost: readable CA certificates kept trusted as retired, a new CA published',
  emergency: 'EMERGENCY: new CA active at once, every older CA dropped',
  restore: 'CA certificate restored from the client bundle for its good key (nothing re-issued)',
  renew: 'upstream intermediate renewed under the same anchor: it signs at once, no bundle changes',
};

/** The human-readable report of a simulation. */
export function formatSimulation(args: SimulateArgs, result: SimulationResult): string {
  const { summary, timeline } = result;
  const p = args.policy;
  const d = (field: keyof typeof POLICY_FLAGS): string => formatFlagDuration(p[field], args.typed[field]);
  const span = summary.interrupted
    ? `INTERRUPTED: ${formatYears(summary.end - summary.start)} of ${args.years} year(s) simulated, from ${iso(summary.start)} to ${iso(summary.end)}`
    : `${args.years} year(s) from ${iso(summary.start)} to ${iso(summary.end)}`;
  const lines = [
    `eso-mtls simulate: ${span}, ${args.services} Services in ${args.namespaces} namespaces, seed ${args.seed}`,
    oneSecretPerNamespace(args.services, args.namespaces),
    `policy: CA ${d('caValidity')} (rotation starts ${d('caLookahead')} before notAfter), leaves ${d('leafValidity')} (renewed ${d('leafLookahead')} + up to ${d('leafJitter')} jitter before notAfter), ${p.keyAlgorithm}`,
    `        reconcile ${d('reconcileInterval')}, propagation delay ${d('propagationDelay')}, max connection age ${d('maxConnectionAge')}, notBefore backdated ${d('notBeforeBackdate')}`,
    '',
  ];
  const firstAt = timeline.find((e) => e.kind !== 'event')?.at;
  const shown = args.timeline ? timeline : timeline.filter((e) => e.at === firstAt || e.kind === 'ca' || e.kind === 'event');
  lines.push(args.timeline ? 'Timeline' : 'Timeline (first issuances, events and CA phases; --timeline for every issuance)');
  for (let i = 0; i < shown.length; i++) {
    const e = shown[i]!;
    if (e.kind === 'ca') {
      const leaves =
        shown === timeline || e.at === firstAt ? [] : timeline.filter((x) => x.at === e.at && (x.kind === 'serverLeaf' || x.kind === 'clientLeaf'));
      const reissued = leaves.length > 0 ? `; ${leaves.length} leaves issued (${[...new Set(leaves.map((x) => x.reason))].join(', ')})` : '';
      lines.push(`  ${iso(e.at)}  ${(e.phases ?? []).map((ph) => CA_PHASE_WORDS[ph]).join('; ')}${e.reason ? ` [${e.reason}]` : ''}${reissued}`);
    } else if (e.kind === 'event') {
      lines.push(`  ${iso(e.at)}  event: ${e.message}${e.target ? ` (${e.target})` : ''}`);
    } else if (!args.timeline && e.at === firstAt) {
      const same = shown.filter((x) => x.at === e.at && x.kind === e.kind);
      if (same[0] === e) lines.push(`  ${iso(e.at)}  ${same.length} ${e.kind === 'clientLeaf' ? 'client' : 'server'} certificate(s) issued (${e.reason})`);
    } else {
      lines.push(`  ${iso(e.at)}  ${e.target}: ${e.kind === 'bundle' ? 'bundle updated' : `${e.reason}`}`);
    }
  }
  lines.push('', 'Rotations by reason (server + client certificates)');
  for (const [reason, n] of Object.entries(summary.byReason) as [RotationReason, number][]) lines.push(`  ${reason.padEnd(15)} ${String(n).padStart(7)}`);
  lines.push(
    `  ${'total'.padEnd(15)} ${String(summary.serverIssuances + summary.clientIssuances).padStart(7)}`,
    '',
    `CA phases: ${Object.entries(summary.caPhases)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
    `Bundle updates (not rotations): ${summary.bundleUpdates}`,
    `Reconciles: ${summary.reconciles}`,
    leafKeysLine(summary.leafKeys),
    `Minimum remaining validity of any certificate in use: ${formatRemaining(summary.minRemainingValidity)}`,
    `Violations: ${summary.violations.length}`,
    ...summary.violations.slice(0, 20).map((v) => `  ${iso(v.at)} ${v.kind}: ${v.message}`),
  );
  return `${lines.join('\n')}\n`;
}

/** Whether leaves shared pooled keys, in one line: the report must say it did. */
export function leafKeysLine(k: SimulationResult['summary']['leafKeys']): string {
  return k.pooled
    ? `Leaf keys: pooled, ${k.generated} real key(s) reused for ${k.handedOut} leaves (times and phases are judged, not key secrecy; --fresh-keys for one per leaf)`
    : `Leaf keys: a fresh key for each of ${k.handedOut} leaves`;
}

/** Why there are fewer server certificates than Services, in one line. */
export function oneSecretPerNamespace(services: number, namespaces: number): string {
  return `${namespaces} server certificate(s) for ${services} Services: each namespace has one Secret (${PROVIDER_SECRET_NAME}) naming all its labelled Services`;
}

// Instants in the JSON output, by key; every other number (a duration, a count) stays a number.
const INSTANT_KEYS = new Set(['at', 'start', 'end']);

/** The result as JSON, with instants as ISO 8601 strings, as every other date this project prints. */
export function simulationJson(result: SimulationResult): string {
  return JSON.stringify(result, (key, value: unknown) => (INSTANT_KEYS.has(key) && typeof value === 'number' ? new Date(value).toISOString() : value), 2);
}

/** The live progress line: simulated date and share done, redrawn in place with a carriage return. */
export function progressLine(start: number, end: number, at: number): string {
  const share = end > start ? Math.min(1, Math.max(0, (at - start) / (end - start))) : 1;
  return `\r\x1b[Ksimulating ${new Date(at).toISOString().slice(0, 10)}  ${String(Math.floor(share * 100)).padStart(3)}%`;
}

// Simulated time as years with two decimals: an interrupted run says how far it got.
const formatYears = (ms: Duration): string => (ms / days(365)).toFixed(2);

/** Erases the progress line, so the report starts on a clean line. */
const CLEAR_LINE = '\r\x1b[K';

function formatRemaining(ms: Duration): string {
  if (!Number.isFinite(ms)) return 'n/a';
  return `${Math.floor(ms / days(1))}d ${Math.floor((ms % days(1)) / 3_600_000)}h`;
}

/**
 * `eso-mtls simulate [flags]`: resolves with the exit code (0 clean, 1 violations, 2 bad flags,
 * 130 stopped early). `signal` (Ctrl-C in the CLI) stops the run; what was simulated so far is
 * then reported, said to be partial.
 * @internal Shared with \@eso-mtls/devtools; not part of the supported API.
 */
export async function runSimulateCommand(
  argv: readonly string[],
  streams: CliStreams = { stdout: process.stdout, stderr: process.stderr },
  signal?: AbortSignal,
): Promise<number> {
  let args: SimulateArgs | 'help';
  try {
    args = parseSimulateArgs(argv);
  } catch (e) {
    if (!(e instanceof FlagError)) throw e;
    streams.stderr.write(`eso-mtls simulate: ${e.message}\n`);
    return 2;
  }
  if (args === 'help') {
    streams.stdout.write(USAGE);
    return 0;
  }
  // The chart writer is found before simulating, so a missing one is said at once, not after the run.
  let charts: DeveloperTools | undefined;
  if (args.chart !== undefined) {
    try {
      charts = await loadDeveloperTools('eso-mtls simulate --chart');
    } catch (e) {
      if (!(e instanceof DevtoolsMissingError)) throw e;
      streams.stderr.write(`${e.message}\n`);
      return 1;
    }
  }
  const services = Array.from({ length: args.services }, (_, i) => ({ namespace: `team-${i % args.namespaces}`, name: `provider-${i}` }));
  const crypto = { ...createNodeCryptoBackend(), random: seededRandom(args.seed) };
  const duration = Math.round(args.years * days(365));
  const onProgress = isTerminal(streams.stderr) ? throttledProgress(streams.stderr, SIMULATION_EPOCH, SIMULATION_EPOCH + duration) : undefined;
  const result = await simulate({ policy: args.policy, crypto, services, duration, events: args.events, onProgress, signal, freshLeafKeys: args.freshKeys });
  if (onProgress !== undefined) streams.stderr.write(CLEAR_LINE);
  streams.stdout.write(args.json ? `${simulationJson(result)}\n` : formatSimulation(args, result));
  const { interrupted } = result.summary;
  if (interrupted) {
    streams.stderr.write(
      `eso-mtls simulate: interrupted; the summary covers ${iso(result.summary.start)} to ${iso(result.summary.end)} only, not the ${args.years} year(s) asked\n`,
    );
  }
  if (args.chart !== undefined && charts !== undefined) {
    const title = `eso-mtls simulate: ${args.years} year(s), ${args.services} Services in ${args.namespaces} namespaces, seed ${args.seed}`;
    // The report may be JSON on stdout: say where the chart went, or why not, on stderr.
    try {
      await charts.writeSimulationChart(args.chart, { title, policy: args.policy, result });
      streams.stderr.write(`rotation timeline drawn in ${args.chart}\n`);
    } catch (e) {
      streams.stderr.write(`eso-mtls simulate: ${(e as Error).message}\n`);
      return 1;
    }
  }
  if (result.summary.violations.length > 0) return 1;
  return interrupted ? EXIT_INTERRUPTED : 0;
}

// Redraws at most ten times a second: a line per reconcile would cost more than the simulation.
function throttledProgress(stderr: { write(text: string): unknown }, start: number, end: number): (at: number) => void {
  let last = 0;
  return (at) => {
    const now = Date.now();
    if (now - last < 100) return;
    last = now;
    stderr.write(progressLine(start, end, at));
  };
}
