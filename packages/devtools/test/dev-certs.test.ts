import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdir, mkdtemp, readFile, readdir, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { clientSpiffeId } from '@eso-mtls/core';
import type { ProviderLogRecord } from '@eso-mtls/grpc';
import { runDevCertsCommand } from '../src/cli/dev-certs.js';
import { EsoCaller } from '../src/demo/eso-caller.js';
import { type DemoProvider, startDemoProvider } from '../src/demo/provider-fleet.js';
import { demoPolicy } from '../src/demo/schedule.js';
import { ControllerProcess } from '@eso-mtls/test-kit/controller-process';
import { repoRoot } from '@eso-mtls/test-kit/repo';
import { type Capture, capture } from './support/cli-streams.js';

// `eso-mtls dev-certs` as a provider developer uses it: real providers (startProviderServer from
// @eso-mtls/grpc) serving from the provider folders it writes, ESO's side calling them over mTLS
// with the client folder, through leaf rotations and an overlap CA rotation, and Ctrl-C to a real
// child process. Scale: 2 providers, rotations every 5 s (leaves) and 30 s (CA); about 90 s.

// Generous bounds for a loaded 2-core machine: each waits for an event the run makes in seconds.
const EVENT_BOUND_MS = 120_000;

async function until(what: string, condition: () => boolean | Promise<boolean>, boundMs = EVENT_BOUND_MS): Promise<void> {
  const deadline = Date.now() + boundMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting ${boundMs / 1000}s for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A folder is whole when its certificate matches its key and chains to its bundle. */
async function expectWhole(folder: string): Promise<X509Certificate> {
  const certificate = new X509Certificate(await readFile(join(folder, 'tls.crt')));
  expect(certificate.checkPrivateKey(createPrivateKey(await readFile(join(folder, 'tls.key'))))).toBe(true);
  const bundle = (await readFile(join(folder, 'ca.crt'), 'utf8')).match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
  expect(bundle.some((pem) => certificate.verify(new X509Certificate(pem).publicKey))).toBe(true);
  // Laid out as the kubelet does: the files are links into the folder `..data` points at.
  expect(await readlink(join(folder, 'tls.crt'))).toBe('..data/tls.crt');
  return certificate;
}

const bundleOf = async (dir: string): Promise<string[]> =>
  (await readFile(join(dir, 'ca', 'ca.crt'), 'utf8')).match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];

/** A running dev-certs with providers on its folders and ESO calling each. */
interface Bench {
  readonly dir: string;
  readonly run: Promise<number>;
  readonly stop: AbortController;
  readonly output: Capture;
  readonly providers: DemoProvider[];
  readonly reloads: Map<string, number>;
  readonly caller: EsoCaller;
  readonly failures: string[];
}

async function startBench(flags: readonly string[]): Promise<Bench> {
  const dir = await mkdtemp(join(tmpdir(), 'eso-mtls-dev-certs-'));
  const output = capture();
  const stop = new AbortController();
  const argv = ['--dir', dir, '--provider', 'aws', '--provider', 'vault.team-a', ...flags];
  const run = runDevCertsCommand(argv, output.streams, stop.signal);
  await until('the folders', () => output.out().includes('Press Ctrl-C to stop.') || output.err() !== '');
  expect(output.err()).toBe('');
  const policy = demoPolicy();
  const reloads = new Map<string, number>();
  const providers: DemoProvider[] = [];
  for (const [service, namespace] of [
    ['aws', 'provider-system'],
    ['vault', 'team-a'],
  ] as const) {
    const log = (r: ProviderLogRecord): void => void (r.reason === 'reloaded' && reloads.set(namespace, (reloads.get(namespace) ?? 0) + 1));
    const clientId = clientSpiffeId(policy.clusterDomain, policy.esoNamespace, policy.serviceAccount);
    providers.push(await startDemoProvider({ namespace, service, directory: join(dir, `${service}.${namespace}`), clientSpiffeId: clientId, log }));
  }
  const failures: string[] = [];
  const caller = new EsoCaller({
    directory: join(dir, 'eso-client'),
    onFailure: (f) => failures.push(`${f.target.address}: ${f.message}`),
    onReload: () => undefined,
    onReloadRefused: (f) => failures.push(`client reload refused: ${f.message}`),
  });
  await caller.start();
  for (const p of providers) {
    const port = p.server.port;
    caller.add({ namespace: p.namespace, service: p.service, address: `${p.service}.${p.namespace}.svc:${port}`, connectTo: `127.0.0.1:${port}` });
  }
  return { dir, run, stop, output, providers, reloads, caller, failures };
}

async function stopBench(bench: Bench | undefined): Promise<void> {
  if (bench === undefined) return;
  await bench.caller.stop();
  for (const p of bench.providers) await p.close();
  bench.stop.abort();
  await bench.run;
  await rm(bench.dir, { recursive: true, force: true });
}

describe('eso-mtls dev-certs: real handshakes against the folders it writes', () => {
  let bench: Bench | undefined;
  afterAll(() => stopBench(bench), 60_000);

  it('a provider serves from its folder, ESO calls it from the client folder, and leaf rotations are picked up with no failed call', async () => {
    bench = await startBench(['--rotate-every', '5s']);
    const first = await expectWhole(join(bench.dir, 'aws.provider-system'));
    expect(first.subjectAltName).toContain('DNS:aws.provider-system.svc');
    expect((await expectWhole(join(bench.dir, 'vault.team-a'))).subjectAltName).toContain('DNS:vault.team-a.svc');
    const client = await expectWhole(join(bench.dir, 'eso-client'));
    expect(client.subject).toContain('CN=external-secrets-core');

    // Two rotations reloaded by each provider and by the client, with calls going on throughout.
    await until(
      'two reloads in each provider and the client',
      () => bench!.providers.every((p) => (bench!.reloads.get(p.namespace) ?? 0) >= 2) && bench!.caller.reloads.reloads >= 2,
    );
    const callsBefore = bench.caller.calls.made;
    await until('calls after the reloads', () => bench!.caller.calls.made > callsBefore + 10);
    expect(bench.failures).toEqual([]);
    expect(bench.caller.calls.failed).toBe(0);
    expect((await expectWhole(join(bench.dir, 'aws.provider-system'))).serialNumber).not.toBe(first.serialNumber);
    expect(bench.output.out()).toMatch(/namespace\/team-a: serverLeaf written \(forced\)/);

    await stopBench(bench);
    expect(await bench.run).toBe(0);
    bench = undefined;
  }, 300_000);

  it('--ca-rotation runs an overlap CA rotation that the provider and ESO pick up with no failed call', async () => {
    bench = await startBench(['--rotate-every', '30s', '--ca-rotation']);
    const [originalCa] = await bundleOf(bench.dir);
    const seen = new Set<number>();
    // prepare puts the new CA beside the old (2 in the bundle); retire leaves the new one alone.
    await until(
      'the CA rotation to prepare and retire',
      async () => {
        const bundle = await bundleOf(bench!.dir);
        seen.add(bundle.length);
        return seen.has(2) && bundle.length === 1 && bundle[0] !== originalCa;
      },
      EVENT_BOUND_MS + 30_000,
    );
    const [newCa] = await bundleOf(bench.dir);
    const leaf = await expectWhole(join(bench.dir, 'aws.provider-system'));
    expect(leaf.verify(new X509Certificate(newCa!).publicKey)).toBe(true);
    const callsBefore = bench.caller.calls.made;
    await until('calls under the new CA', () => bench!.caller.calls.made > callsBefore + 10);
    expect(bench.failures).toEqual([]);
    expect(bench.caller.calls.failed).toBe(0);
    expect(bench.output.out()).toMatch(/CA phases .*prepare/);
  }, 400_000);
});

describe('eso-mtls dev-certs: Ctrl-C', () => {
  it('stops a real process on SIGINT: it exits 0 by itself (no timer left) and leaves every folder whole', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'eso-mtls-dev-certs-'));
    try {
      const bin = resolve(repoRoot, 'packages/controller/src/bin/eso-mtls.ts');
      const child = new ControllerProcess('dev-certs', ['--dir', dir, '--rotate-every', '5s'], {}, repoRoot, [bin, 'dev-certs']);
      await child.waitForLog((l) => l.msg === 'Press Ctrl-C to stop.', EVENT_BOUND_MS, 'the ready line');
      // A rotation under way, then Ctrl-C.
      await child.waitForLog((l) => l.msg.includes('serverLeaf written (forced)'), EVENT_BOUND_MS, 'a rotation');
      child.signal('SIGINT');
      const exit = await Promise.race([child.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), EVENT_BOUND_MS).unref())]);
      if (exit === 'hung') await child.kill();
      expect(exit).toEqual({ code: 0, signal: null });
      expect(child.stderr).toContain('eso-mtls dev-certs: SIGINT: stopping');
      expect(child.stderr).toContain(`eso-mtls dev-certs: stopped; every folder in ${dir} is whole`);
      for (const folder of ['my-provider.provider-system', 'eso-client']) await expectWhole(join(dir, folder));
      expect((await readdir(dir)).sort()).toEqual(['.eso-mtls-dev-certs', 'ca', 'eso-client', 'my-provider.provider-system']);
      expect(child.stdout).not.toContain('PRIVATE KEY');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 300_000);
});

describe('eso-mtls dev-certs: what it refuses', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'eso-mtls-dev-certs-flags-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const refusal = async (argv: readonly string[]): Promise<{ code: number; err: string }> => {
    const c = capture();
    const code = await runDevCertsCommand(argv, c.streams);
    expect(c.out()).toBe('');
    return { code, err: c.err() };
  };

  it.each([
    [[], '--dir is required: the folder to write the certificates into, e.g. --dir ./dev-certs; see eso-mtls dev-certs --help'],
    [['--dir', 'x', '--provder', 'a'], 'unknown flag --provder (did you mean --provider?)'],
    [['--dir', 'x', '--provider', 'Bad_Name'], '--provider: "Bad_Name" is not NAME or NAME.NAMESPACE, each a DNS-1123 label'],
    [['--dir', 'x', '--provider', 'a.b.c'], '--provider: "a.b.c" is not NAME or NAME.NAMESPACE'],
    [['--dir', 'x', '--provider', 'a', '--provider', 'a.provider-system'], '--provider: a.provider-system is named twice; name each provider once'],
    [['--dir', 'x', '--rotate-every', 'soon'], '--rotate-every: "soon" is not a duration such as 30s or 2m'],
    [['--dir', 'x', '--rotate-every', '1s'], '--rotate-every: "1s" is too short: a rotation needs 3s to reach the folders and be reloaded; use at least 5s'],
    [
      ['--dir', 'x', '--rotate-every', '10s', '--ca-rotation'],
      '--rotate-every: "10s" is too short: an overlap CA rotation (prepare, activate, retire) takes about 22s; use at least 30s',
    ],
    [['--dir', 'x', '--ca-rotation'], '--ca-rotation needs --rotate-every: say how often, e.g. --rotate-every 30s'],
    [['--dir', 'x', 'extra'], 'unexpected argument "extra"'],
    [['--dir', 'x', '--once', '--rotate-every', '5s'], '--once exits once the folders are written, so nothing would rotate: drop --once or --rotate-every 5s'],
    [['--dir', 'x', '--once=maybe'], '--once: "maybe" is not true or false'],
    [['--dir', 'x', '--validity', 'stale'], '--validity: "stale" is not current, expired or not-yet-valid'],
  ])('%j: exit 2, naming the problem and what to do', async (argv, message) => {
    const { code, err } = await refusal(argv as string[]);
    expect(code).toBe(2);
    expect(err).toContain(`eso-mtls dev-certs: ${message}`);
  });

  it('refuses a folder holding files it did not write, and touches nothing in it', async () => {
    const foreign = join(dir, 'foreign');
    await mkdir(foreign);
    await writeFile(join(foreign, 'notes.txt'), 'mine');
    const { code, err } = await refusal(['--dir', foreign]);
    expect(code).toBe(1);
    expect(err).toBe(
      `eso-mtls dev-certs: ${foreign} holds files eso-mtls dev-certs did not write (notes.txt); give --dir a new or empty folder, so that nothing of yours is overwritten\n`,
    );
    expect(await readdir(foreign)).toEqual(['notes.txt']);
  });
});
