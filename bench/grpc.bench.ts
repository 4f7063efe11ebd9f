/**
 * The gRPC adapter under load, on loopback with certificates from the core:
 * - reload latency: from the rename of `..data` to the first completed handshake that presents the
 *   new certificate, for our reloading credentials and for grpc-js's stock FileWatcherCertificateProvider;
 * - unary GetSecret throughput and latency with our credentials against grpc-js's static createSsl;
 * - calls per second through the rotation sequence of the rotation test, with failures.
 *
 *   node --import ./scripts/register-ts.mjs bench/grpc.bench.ts
 */
import 'reflect-metadata';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { pathToFileURL } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import {
  CertificateWatcher,
  clientTlsMaterial,
  createSecretStoreProviderClient,
  healthServiceDefinition,
  HealthService,
  ProviderChannel,
  ReloadingServerCredentials,
  startProviderServer,
  type ServedCertificateSource,
  type SecretStoreProvider,
} from '@eso-mtls/grpc';
import { writeAtomically } from '@eso-mtls/test-kit/demo';
import { issueTestCa, issueTestClient, issueTestServer, TEST_SERVER_NAME, type KeyPair, type TestCa } from '@eso-mtls/test-kit/pki';
import { loaded, PlannedCluster } from '@eso-mtls/test-kit/planned-cluster';
import { startProviderOn } from '@eso-mtls/test-kit/reloading-provider';

/** A server leaf and its serial (lower-case hex). */
type Leaf = KeyPair & { readonly serial: string };
const files = (ca: string, leaf: KeyPair) => ({ 'ca.crt': ca, 'tls.crt': leaf.cert, 'tls.key': leaf.key });
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? NaN;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Latency figures in milliseconds. */
export interface Latency {
  readonly samples: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}
const latency = (xs: number[]): Latency => ({ samples: xs.length, p50: quantile(xs, 0.5), p99: quantile(xs, 0.99), max: Math.max(...xs) });

/** Everything {@link runGrpcBenchmark} measures. */
export interface GrpcBenchmark {
  readonly reload: Latency;
  readonly reloadStock: Latency;
  /** Whether a new handshake succeeded while a mismatched pair was on disk. */
  readonly servesDuringBadPair: { readonly ours: boolean; readonly stock: boolean };
  readonly unary: { readonly ours: Throughput; readonly staticSsl: Throughput; readonly ratio: number };
  readonly rotation: { readonly seconds: number; readonly calls: number; readonly failed: number; readonly perSecond: number };
}
/** Calls per second and per-call latency. */
export interface Throughput {
  readonly calls: number;
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
}

/** One handshake as ESO's client; resolves with the served serial and when the handshake completed, or undefined if refused. */
function handshake(port: number, ca: TestCa, client: KeyPair): Promise<{ serial: string; at: number } | undefined> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port, servername: TEST_SERVER_NAME, ca: ca.cert, cert: client.cert, key: client.key, ALPNProtocols: ['h2'] });
    s.once('secureConnect', () => {
      const at = performance.now();
      resolve({ serial: s.getPeerX509Certificate()!.serialNumber.toLowerCase(), at });
      s.destroy();
    });
    s.once('error', () => resolve(undefined));
  });
}

/** Swaps `leaves` in turn and measures rename-to-first-new-handshake for each. */
async function reloadLatency(dir: string, port: number, ca: TestCa, client: KeyPair, leaves: Leaf[], maxWaitMs: number): Promise<number[]> {
  const out: number[] = [];
  for (const leaf of leaves) {
    const want = leaf.serial;
    const { swappedAt } = await writeAtomically(dir, files(ca.cert, leaf));
    for (;;) {
      const h = await handshake(port, ca, client);
      if (h?.serial === want) {
        out.push(h.at - swappedAt);
        break;
      }
      if (performance.now() - swappedAt > maxWaitMs) throw new Error(`no handshake with serial ${want} within ${maxWaitMs} ms`);
      if (h === undefined) await sleep(1);
    }
  }
  return out;
}

async function grpcServerOn(credentials: grpc.ServerCredentials): Promise<{ port: number; close(): void }> {
  const server = new grpc.Server();
  server.addService(healthServiceDefinition(), new HealthService([]).handlers());
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', credentials, (e, p) => (e ? reject(e) : resolve(p))));
  return { port, close: () => server.forceShutdown() };
}

/** Reload latency of ours and of grpc-js's stock watcher, and who keeps serving while a bad pair is on disk. */
async function measureReload(ca: TestCa, client: KeyPair, first: Leaf, leaves: Leaf[], stockSwaps: number) {
  const results: { reload?: Latency; reloadStock?: Latency; bad: { ours: boolean; stock: boolean } } = { bad: { ours: false, stock: false } };
  for (const kind of ['ours', 'stock'] as const) {
    const dir = mkdtempSync(join(tmpdir(), `bench-reload-${kind}-`));
    await writeAtomically(dir, files(ca.cert, first));
    const watcher = new CertificateWatcher({ directory: dir, purpose: 'serverAuth' });
    const stock = new grpc.experimental.FileWatcherCertificateProvider({
      certificateFile: join(dir, 'tls.crt'),
      privateKeyFile: join(dir, 'tls.key'),
      caCertificateFile: join(dir, 'ca.crt'),
      refreshIntervalMs: 1000,
    });
    if (kind === 'ours') await watcher.start();
    // grpc-js's server factory takes the identity provider as its first argument: one object for both.
    const credentials =
      kind === 'ours' ? new ReloadingServerCredentials(watcher) : grpc.experimental.createCertificateProviderServerCredentials(stock, stock, true);
    const server = await grpcServerOn(credentials);
    try {
      while ((await handshake(server.port, ca, client))?.serial !== first.serial) await sleep(10);
      const swaps = kind === 'ours' ? leaves : leaves.slice(0, stockSwaps);
      const xs = await reloadLatency(dir, server.port, ca, client, swaps, 5000);
      if (kind === 'ours') results.reload = latency(xs);
      else results.reloadStock = latency(xs);
      // A half-updated pair: the last swapped certificate with another leaf's key.
      await writeAtomically(dir, { 'ca.crt': ca.cert, 'tls.crt': swaps.at(-1)!.cert, 'tls.key': first.key });
      await sleep(kind === 'ours' ? 50 : 1500);
      results.bad[kind] = (await handshake(server.port, ca, client)) !== undefined;
    } finally {
      server.close();
      watcher.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return { reload: results.reload!, reloadStock: results.reloadStock!, bad: results.bad };
}

const provider: SecretStoreProvider = { getSecret: () => ({ value: Buffer.from('value') }), getSecretMap: () => ({ secrets: {} }) };

/** `clients` channels with `depth` calls outstanding each, for `ms`. */
async function unaryLoad(port: number, ca: TestCa, client: KeyPair, ms: number, clients = 4, depth = 8): Promise<Throughput> {
  const material = clientTlsMaterial(files(ca.cert, client));
  const channels = Array.from(
    { length: clients },
    () =>
      new ProviderChannel({
        address: `${TEST_SERVER_NAME}:8080`,
        connectTo: `127.0.0.1:${port}`,
        material,
        channelOptions: { 'grpc.use_local_subchannel_pool': 1 },
      }),
  );
  const typed = channels.map((c) => createSecretStoreProviderClient(c, { retry: false }));
  for (const t of typed) await t.getSecret({ remoteRef: { key: 'warm' } });
  const times: number[] = [];
  const end = performance.now() + ms;
  const t0 = performance.now();
  await Promise.all(
    typed.flatMap((t) =>
      Array.from({ length: depth }, async () => {
        while (performance.now() < end) {
          const s = performance.now();
          await t.getSecret({ remoteRef: { key: 'k' } });
          times.push(performance.now() - s);
        }
      }),
    ),
  );
  const seconds = (performance.now() - t0) / 1000;
  await Promise.all(channels.map((c) => c.close()));
  return { calls: times.length, perSecond: times.length / seconds, p50: quantile(times, 0.5), p99: quantile(times, 0.99) };
}

async function measureUnary(ca: TestCa, server: KeyPair, client: KeyPair, ms: number): Promise<GrpcBenchmark['unary']> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-unary-'));
  await writeAtomically(dir, files(ca.cert, server));
  const staticSource = (): ServedCertificateSource => ({
    credentials: grpc.ServerCredentials.createSsl(Buffer.from(ca.cert), [{ cert_chain: Buffer.from(server.cert), private_key: Buffer.from(server.key) }], true),
    start: async () => undefined,
    servedCertificate: () => ({ notAfter: Date.now() + 86_400_000 }),
    onReload: () => undefined,
    onReloadFailure: () => undefined,
    close: () => undefined,
  });
  const runs: Record<'ours' | 'staticSsl', Throughput[]> = { ours: [], staticSsl: [] };
  try {
    // Alternating rounds, best of two each: the machine is shared, so one noisy second must not decide.
    for (let round = 0; round < 2; round++) {
      for (const kind of ['staticSsl', 'ours'] as const) {
        const p =
          kind === 'ours'
            ? await startProviderOn(dir, { implementation: provider })
            : { server: await startProviderServer({ implementation: provider, certDir: dir, host: '127.0.0.1', port: 0, healthPort: 0 }, staticSource) };
        try {
          runs[kind].push(await unaryLoad(p.server.port, ca, client, ms));
        } finally {
          await p.server.close();
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const best = (xs: Throughput[]) => xs.reduce((a, b) => (b.perSecond > a.perSecond ? b : a));
  const ours = best(runs.ours);
  const staticSsl = best(runs.staticSsl);
  return { ours, staticSsl, ratio: ours.perSecond / staticSsl.perSecond };
}

/** The rotation test's sequence (20 server, 20 client, 2 CA rotations) under continuous load. */
async function measureRotation(): Promise<GrpcBenchmark['rotation']> {
  const root = mkdtempSync(join(tmpdir(), 'bench-rotation-'));
  const dirs = { client: join(root, 'client'), server: join(root, 'server') };
  Object.values(dirs).forEach((d) => mkdirSync(d));
  const cluster = new PlannedCluster('provider-system', 'file-provider', dirs);
  await cluster.reconcile();
  const p = await startProviderOn(dirs.server, { implementation: provider });
  const watcher = new CertificateWatcher({ directory: dirs.client, purpose: 'clientAuth' });
  await watcher.start();
  const channels = Array.from(
    { length: 4 },
    () =>
      new ProviderChannel({
        address: 'file-provider.provider-system.svc:8080',
        connectTo: `127.0.0.1:${p.port}`,
        material: watcher,
        channelOptions: { 'grpc.use_local_subchannel_pool': 1 },
      }),
  );
  const typed = channels.map((c) => createSecretStoreProviderClient(c, { retry: false, waitForReady: false }));
  let running = true;
  let calls = 0;
  let failed = 0;
  const loops = typed.flatMap((t) =>
    Array.from({ length: 8 }, async () => {
      while (running)
        await t.getSecret({ remoteRef: { key: 'k' } }).then(
          () => calls++,
          () => failed++,
        );
    }),
  );
  const step = async () => {
    const writes = await cluster.reconcile();
    await Promise.all(writes.filter((w) => w.target !== 'ca').map((w) => loaded(w.target === 'client' ? watcher : p.watcher, w)));
  };
  const t0 = performance.now();
  for (let i = 0; i < 20; i++) {
    cluster.requestServerRotation(`s${i}`);
    await step();
    cluster.requestRotation('client', `c${i}`);
    await step();
  }
  for (let r = 0; r < 2; r++) {
    cluster.requestRotation('ca', `ca${r}`);
    await step();
    cluster.advance(cluster.policy.propagationDelay + 1000);
    await step();
    cluster.advance(cluster.policy.propagationDelay + cluster.policy.maxConnectionAge + 1000);
    await step();
  }
  const seconds = (performance.now() - t0) / 1000;
  running = false;
  await Promise.all(loops);
  await Promise.all(channels.map((c) => c.close()));
  watcher.close();
  await p.stop();
  rmSync(root, { recursive: true, force: true });
  return { seconds, calls, failed, perSecond: calls / seconds };
}

/** Runs all three measurements once. */
export async function runGrpcBenchmark(options: { swaps?: number; stockSwaps?: number; unaryMs?: number } = {}): Promise<GrpcBenchmark> {
  const ca = await issueTestCa();
  const client = await issueTestClient(ca);
  const withSerial = async (): Promise<Leaf> => {
    const k = await issueTestServer(ca);
    return { ...k, serial: new X509Certificate(k.cert).serialNumber.toLowerCase() };
  };
  const first = await withSerial();
  const leaves = await Promise.all(Array.from({ length: options.swaps ?? 50 }, withSerial));
  const r = await measureReload(ca, client, first, leaves, options.stockSwaps ?? 8);
  const unary = await measureUnary(ca, first, client, options.unaryMs ?? 3000);
  const rotation = await measureRotation();
  return { reload: r.reload, reloadStock: r.reloadStock, servesDuringBadPair: r.bad, unary, rotation };
}

/** Markdown tables of a {@link GrpcBenchmark}. */
export function formatGrpcBenchmark(b: GrpcBenchmark): string {
  const ms = (x: number) => `${x.toFixed(1)} ms`;
  return [
    '| reload: rename of ..data to first handshake with the new certificate | swaps | p50 | p99 | max | serves while a bad pair is on disk |',
    '|---|---:|---:|---:|---:|---|',
    `| ours (folder watch + checked swap) | ${b.reload.samples} | ${ms(b.reload.p50)} | ${ms(b.reload.p99)} | ${ms(b.reload.max)} | ${b.servesDuringBadPair.ours ? 'yes' : 'no'} |`,
    `| grpc-js FileWatcherCertificateProvider, 1 s refresh | ${b.reloadStock.samples} | ${ms(b.reloadStock.p50)} | ${ms(b.reloadStock.p99)} | ${ms(b.reloadStock.max)} | ${b.servesDuringBadPair.stock ? 'yes' : 'no'} |`,
    '',
    '| unary GetSecret, 4 connections x 8 outstanding | calls | calls/s | p50 | p99 |',
    '|---|---:|---:|---:|---:|',
    `| ReloadingServerCredentials | ${b.unary.ours.calls} | ${b.unary.ours.perSecond.toFixed(0)} | ${ms(b.unary.ours.p50)} | ${ms(b.unary.ours.p99)} |`,
    `| grpc.ServerCredentials.createSsl (static) | ${b.unary.staticSsl.calls} | ${b.unary.staticSsl.perSecond.toFixed(0)} | ${ms(b.unary.staticSsl.p50)} | ${ms(b.unary.staticSsl.p99)} |`,
    `| ratio ours / static | | ${b.unary.ratio.toFixed(3)} | | |`,
    '',
    '| rotation sequence (20 server, 20 client, 2 CA), 4 connections x 8 outstanding | seconds | calls | failed | calls/s |',
    '|---|---:|---:|---:|---:|',
    `| ProviderChannel + ReloadingServerCredentials | ${b.rotation.seconds.toFixed(2)} | ${b.rotation.calls} | ${b.rotation.failed} | ${b.rotation.perSecond.toFixed(0)} |`,
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(formatGrpcBenchmark(await runGrpcBenchmark()));
}
