/**
 * `simulate` with RSA policies (issue 27): the CLI's `eso-mtls simulate --years 3 --services 200`
 * and examples/policy-test's three-year policy, with leaves on the default pool of real keys, and
 * the same with a fresh key per leaf at a smaller scale for the ratio. Wall-clock figures; tests
 * assert only that the pool is used and reported (packages/core/test/simulation/simulate-keys-abort.test.ts).
 *
 *   node --import ./scripts/register-ts.mjs bench/simulate.bench.ts
 */
import { loadavg } from 'node:os';
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { type KeyAlgorithm, type SimulationEvent, days, hours, minutes, resolvePolicy, simulate } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { runSimulateCommand } from '@eso-mtls/controller';

/** One measured run. */
export interface SimulateRun {
  readonly what: string;
  readonly seconds: number;
  readonly leaves: number;
  readonly realLeafKeys: number;
  /** The target the issue sets, when there is one. */
  readonly targetSeconds?: number;
}

/** What {@link runSimulateBenchmark} measures, with the load average around it. */
export interface SimulateBenchmark {
  readonly runs: readonly SimulateRun[];
  readonly loadBefore: readonly number[];
  readonly loadAfter: readonly number[];
}

const sink = (into: string[]) =>
  new Writable({
    write(chunk: Buffer, _enc, done) {
      into.push(chunk.toString());
      done();
    },
  });

async function cli(keyAlgorithm: KeyAlgorithm, years: number, services: number, fresh: boolean): Promise<SimulateRun> {
  const out: string[] = [];
  const argv = ['--years', String(years), '--services', String(services), '--key-algorithm', keyAlgorithm, '--json', ...(fresh ? ['--fresh-keys'] : [])];
  const started = performance.now();
  const code = await runSimulateCommand(argv, { stdout: sink(out), stderr: sink([]) } as never);
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`eso-mtls simulate ${argv.join(' ')} exited ${code}`);
  const { summary } = JSON.parse(out.join('')) as { summary: { serverIssuances: number; clientIssuances: number; leafKeys: { generated: number } } };
  return {
    what: `eso-mtls simulate ${argv.filter((a) => a !== '--json').join(' ')}`,
    seconds,
    leaves: summary.serverIssuances + summary.clientIssuances,
    realLeafKeys: summary.leafKeys.generated,
    ...(keyAlgorithm === 'RSA-2048' && years === 3 && services === 200 && !fresh ? { targetSeconds: 10 } : {}),
  };
}

/** examples/policy-test's first case, with RSA-2048. */
async function policyTest(fresh: boolean): Promise<SimulateRun> {
  const policy = resolvePolicy({
    caValidity: days(730),
    caLookahead: days(90),
    leafValidity: days(30),
    leafLookahead: days(10),
    leafJitter: hours(12),
    propagationDelay: minutes(5),
    keyAlgorithm: 'RSA-2048',
  });
  const start = Date.UTC(2027, 0, 1);
  const events: SimulationEvent[] = [
    { at: start + days(200), kind: 'requestCaRotation', token: 'drill-2027' },
    { at: start + days(400), kind: 'deleteSecret', target: { namespace: 'aws-provider' } },
    { at: start + days(500), kind: 'addService', namespace: 'aws-provider', service: 'aws-eu' },
  ];
  const services = [
    { namespace: 'vault-provider', name: 'vault' },
    { namespace: 'vault-provider', name: 'vault-canary' },
    { namespace: 'aws-provider', name: 'aws' },
  ];
  const started = performance.now();
  const { summary } = await simulate({ policy, crypto: createNodeCryptoBackend(), services, start, duration: days(3 * 365), events, freshLeafKeys: fresh });
  return {
    what: `examples/policy-test, RSA-2048, 3 years, 3 Services${fresh ? ', freshLeafKeys' : ''}`,
    seconds: (performance.now() - started) / 1000,
    leaves: summary.serverIssuances + summary.clientIssuances,
    realLeafKeys: summary.leafKeys.generated,
    ...(fresh ? {} : { targetSeconds: 5 }),
  };
}

/** Runs every case once, one after another. */
export async function runSimulateBenchmark(): Promise<SimulateBenchmark> {
  const loadBefore = loadavg();
  const runs = [
    await policyTest(false),
    await policyTest(true),
    await cli('RSA-2048', 3, 200, false),
    await cli('ECDSA-P256', 3, 200, false),
    // A fresh RSA key per leaf costs minutes at full scale: a smaller one gives the ratio.
    await cli('RSA-2048', 1, 20, true),
    await cli('RSA-2048', 1, 20, false),
  ];
  return { runs, loadBefore, loadAfter: loadavg() };
}

/** A markdown table of the runs. */
export function formatSimulateBenchmark(b: SimulateBenchmark): string {
  const load = (l: readonly number[]) => l.map((x) => x.toFixed(2)).join(' ');
  return [
    `load average before ${load(b.loadBefore)}, after ${load(b.loadAfter)}`,
    '',
    '| run | seconds | target | leaves | real leaf keys |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...b.runs.map(
      (r) => `| ${r.what} | ${r.seconds.toFixed(2)} | ${r.targetSeconds === undefined ? '' : `< ${r.targetSeconds} s`} | ${r.leaves} | ${r.realLeafKeys} |`,
    ),
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) console.log(formatSimulateBenchmark(await runSimulateBenchmark()));
