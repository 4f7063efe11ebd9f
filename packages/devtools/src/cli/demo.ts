import { type SecretWrite, describeTarget } from '@eso-mtls/core';
import {
  CHART_FILE_ACCEPTS,
  type CliStreams,
  type Flag,
  goFlagWords,
  helpTable,
  isChartFileName,
  parseBindAddress,
  parseDuration,
  readArgv,
} from '@eso-mtls/controller';
import { writeTimelineChart } from '../chart/chart-file.js';
import type { ChartRecord } from '../chart/timeline-data.js';
import { runDemo } from '../demo/run-demo.js';
import { MAX_PROVIDERS, MIN_PROVIDERS, minDemoDuration } from '../demo/scenario.js';
import { demoPolicy } from '../demo/schedule.js';
import { demoExitCode } from '../demo/summary.js';
import type { TimelineOutput } from '../demo/timeline.js';

const COMMAND = 'eso-mtls demo';
const MAX_DURATION_MS = 24 * 3_600_000;

const DEMO_FLAGS: readonly Flag[] = [
  { name: 'duration', kind: 'string', accepts: 'a duration such as 2m or 90s, at most 24h' },
  { name: 'providers', kind: 'string', accepts: `a whole number from ${MIN_PROVIDERS} to ${MAX_PROVIDERS}` },
  { name: 'seed', kind: 'string', accepts: 'a whole number' },
  { name: 'json', kind: 'bool' },
  { name: 'metrics-bind-address', kind: 'string', accepts: 'host:port such as 127.0.0.1:9090 or :0, or 0 to serve none' },
  { name: 'chart', kind: 'string', accepts: CHART_FILE_ACCEPTS },
];

const USAGE = `Usage: ${COMMAND} [flags]

Shows real mTLS calls surviving certificate rotations, on this machine, with Node only: an
in-memory cluster reconciled by the controller's own planner, ${MIN_PROVIDERS}-${MAX_PROVIDERS} providers on loopback
reading folders written the way the kubelet writes a mounted Secret, and ESO's client calling
GetSecret on each without retries. A scenario forces leaf rotations, an overlap CA rotation, a
deleted Secret, a damaged file and a second Service. Prints the timeline and a summary; exits 1
if any call failed or a step was not seen.

Certificates keep the design's lifetimes on the real clock; only the waits for propagation and
for old connections are shortened, by a schedule built into the demo that eso-mtls controller
does not accept.

Flags:
${helpTable([
  ['--duration <duration>', `how long to run (default 2m; at least ${minDemoDuration(3) / 1000}s with 3 providers)`],
  ['--providers <n>', `providers to run (default 3, ${MIN_PROVIDERS} to ${MAX_PROVIDERS})`],
  ['--seed <n>', 'seed of serial numbers and delivery delays (default 1)'],
  ['--json', 'one JSON object per line, with ISO 8601 timestamps'],
  [
    '--metrics-bind-address <addr>',
    ["where the controller's /metrics listens (default 127.0.0.1:0,", 'a free port; a bare :port stays on 127.0.0.1); 0 serves none'],
  ],
  ['--chart <file>', 'also draw the rotation timeline of the run into this .svg or .html file'],
  ['--help', 'print this text'],
])}
`;

/** What the flags ask for. */
export interface DemoArgs {
  readonly durationMs: number;
  readonly providers: number;
  readonly seed: number;
  readonly json: boolean;
  readonly metricsAddress: { readonly host: string; readonly port: number } | null;
  /** Where to draw the rotation timeline (.svg or .html), if asked. */
  readonly chart?: string;
}

/** A flag value the demo cannot use; the message names the flag, the value and what it accepts. */
class DemoFlagError extends Error {}

function flagError(flag: Flag, value: string): DemoFlagError {
  return new DemoFlagError(`--${flag.name}: ${JSON.stringify(value)} is not ${flag.accepts}`);
}

const flag = (name: string): Flag => DEMO_FLAGS.find((f) => f.name === name)!;

/** Parses `eso-mtls demo` flags; throws naming the flag and what it accepts. */
export function parseDemoArgs(argv: readonly string[]): DemoArgs | 'help' {
  const read = readArgv(argv, { command: COMMAND, flags: DEMO_FLAGS, words: goFlagWords(COMMAND) });
  if (read.kind === 'error') throw new DemoFlagError(read.message);
  if (read.kind === 'help') return 'help';
  const v = read.values;
  const providersText = v.get('providers') ?? '3';
  const providers = Number(providersText);
  if (!/^\d+$/.test(providersText) || providers < MIN_PROVIDERS || providers > MAX_PROVIDERS) throw flagError(flag('providers'), providersText);
  const durationText = v.get('duration') ?? '2m';
  const durationMs = parseDuration(durationText);
  if (durationMs === undefined || durationMs > MAX_DURATION_MS) throw flagError(flag('duration'), durationText);
  const shortest = minDemoDuration(providers);
  if (durationMs < shortest) {
    throw new DemoFlagError(
      `--duration: ${JSON.stringify(durationText)} is too short to play every step with ${providers} providers; use at least ${shortest / 1000}s`,
    );
  }
  const seedText = v.get('seed') ?? '1';
  if (!/^\d{1,10}$/.test(seedText) || Number(seedText) > 2 ** 32 - 1) throw flagError(flag('seed'), seedText);
  const json = v.get('json') ?? 'false';
  if (json !== 'true' && json !== 'false') throw new DemoFlagError(`--json: ${JSON.stringify(json)} is not true or false`);
  const addressText = v.get('metrics-bind-address') ?? '127.0.0.1:0';
  const address = parseBindAddress(addressText);
  if (address === undefined) throw flagError(flag('metrics-bind-address'), addressText);
  const chart = v.get('chart');
  if (chart !== undefined && !isChartFileName(chart)) throw flagError(flag('chart'), chart);
  return {
    durationMs,
    providers,
    seed: Number(seedText),
    json: json === 'true',
    // A demo serves on loopback unless told otherwise.
    metricsAddress: address === null ? null : { host: address.host ?? '127.0.0.1', port: address.port },
    ...(chart === undefined ? {} : { chart }),
  };
}

/** `eso-mtls demo [flags]`: resolves with the exit code (0 all calls succeeded, 1 otherwise, 2 bad flags). */
export async function runDemoCommand(
  argv: readonly string[],
  streams: CliStreams & { readonly stdout: TimelineOutput } = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  let args: DemoArgs | 'help';
  try {
    args = parseDemoArgs(argv);
  } catch (e) {
    if (!(e instanceof DemoFlagError)) throw e;
    streams.stderr.write(`${COMMAND}: ${e.message}\n`);
    return 2;
  }
  if (args === 'help') {
    streams.stdout.write(USAGE);
    return 0;
  }
  // Ctrl-C ends the run early; the summary is still printed and decides the exit code.
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const records: ChartRecord[] = [];
  const start = Date.now();
  try {
    const { chart, ...options } = args;
    const onWritten =
      chart === undefined
        ? undefined
        : (w: SecretWrite, at: number) =>
            // Only what the chart draws: the write's data holds private keys.
            void records.push({ at, kind: w.kind, target: describeTarget(w.target), reason: w.reason, phases: w.phases });
    const summary = await runDemo({ ...options, out: streams.stdout, signal: stop.signal, ...(onWritten ? { onWritten } : {}) });
    if (chart !== undefined) {
      const title = `eso-mtls demo: ${args.providers} providers, seed ${args.seed}, ${Math.round(summary.durationMs / 1000)}s`;
      await writeTimelineChart(chart, { title, start, end: Date.now(), policy: demoPolicy(), records });
      streams.stderr.write(`rotation timeline drawn in ${chart}\n`);
    }
    return demoExitCode(summary);
  } catch (e) {
    streams.stderr.write(`${COMMAND}: ${(e as Error).message}\n`);
    return 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
