import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CertificateCache, type Instant, MemoryStore, type SecretTarget, type SecretWrite, clientSpiffeId, seededRandom } from '@eso-mtls/core';
import { createNodeCryptoBackend, createNodeVerifier } from '@eso-mtls/core/node';
import type { ProviderLogRecord } from '@eso-mtls/grpc';
import { isTerminal } from '@eso-mtls/controller';
import { demoCertificateStatus } from './certificate-status.js';
import { RunBook } from './run-book.js';
import { describeReconcile } from './describe-writes.js';
import { EsoCaller } from './eso-caller.js';
import { type Delivery, KubeletVolume } from './kubelet-volume.js';
import { startDemoMetrics } from './metrics.js';
import { type DemoProvider, startDemoProvider } from './provider-fleet.js';
import { ReconcileLoop } from './reconcile-loop.js';
import { demoScenario } from './scenario.js';
import { ScenarioPlayer, type ScenarioProvider } from './scenario-player.js';
import { DEMO_SCHEDULE, demoPolicy } from './schedule.js';
import { type DemoSummary, formatSummary } from './summary.js';
import { type DemoEvent, Timeline, type TimelineOutput } from './timeline.js';
import { formatStart } from './start-banner.js';

/** Options of {@link runDemo}. */
export interface DemoOptions {
  readonly durationMs: number;
  readonly providers: number;
  readonly seed: number;
  /** One JSON object per line instead of text. */
  readonly json: boolean;
  /** Where the controller's /metrics listens; null serves none. */
  readonly metricsAddress: { readonly host: string; readonly port: number } | null;
  readonly out: TimelineOutput;
  /** Ends the run early (Ctrl-C); the summary is still printed. */
  readonly signal?: AbortSignal;
  /** Told once everything runs, with the providers (a test stops one to see a failed call fail the run). */
  readonly onRunning?: (running: { readonly providers: readonly DemoProvider[] }) => void;
  /** Told every Secret write with its instant (`--chart` draws them). */
  readonly onWritten?: (write: SecretWrite, at: Instant) => void;
}

/** Provider names; the namespace and Service are `provider-<name>`. */
const PROVIDER_NAMES = ['aws', 'vault', 'gcp', 'azure', 'doppler'];
// Failures past this many are counted, not printed, so one broken provider cannot flood the output.
const MAX_FAILURE_LINES = 20;

/**
 * Runs the demo: an in-memory cluster driven by the controller's planner and executor, providers
 * on loopback reading kubelet-style folders, ESO's client calling every provider over mTLS, and
 * the scenario; prints the timeline and the summary and returns the summary.
 */
export async function runDemo(options: DemoOptions): Promise<DemoSummary> {
  const root = await mkdtemp(join(tmpdir(), 'eso-mtls-demo-'));
  try {
    return await runIn(root, options);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

async function runIn(root: string, options: DemoOptions): Promise<DemoSummary> {
  const policy = demoPolicy();
  const store = new MemoryStore();
  const status = demoCertificateStatus(store);
  const crypto = { ...createNodeCryptoBackend(), random: seededRandom(options.seed) };
  const delays = seededRandom(options.seed ^ 0x6b75_6265);
  const { min, max } = DEMO_SCHEDULE.deliveryDelayMs;
  const deliveryDelay = (): number => {
    const [hi, lo] = delays(2);
    return min + (((hi! << 8) | lo!) / 0xffff) * (max - min);
  };
  const book = new RunBook();
  let failureLines = 0;
  // Events before the banner (the first issuance) are held and printed under it with their times.
  // The timeline is declared below, once the caller whose calls it counts exists.
  let held: { event: DemoEvent; at: number }[] | undefined = [];
  const record = (event: DemoEvent): void => (held === undefined ? timeline.record(event) : void held.push({ event, at: Date.now() }));

  const caller = new EsoCaller({
    directory: join(root, 'eso-client'),
    onFailure: (f) => {
      if (++failureLines <= MAX_FAILURE_LINES) record({ source: 'eso', subject: f.target.address, message: `GetSecret FAILED: ${f.message}` });
      if (failureLines === MAX_FAILURE_LINES) record({ source: 'eso', subject: 'calls', message: 'further failures are counted, not printed' });
    },
    onReload: (m, previous) => {
      const what =
        m.serialNumber === previous.serialNumber
          ? `new ca.crt, same certificate ${m.serialNumber.slice(0, 8)}…`
          : `now presenting ${m.serialNumber.slice(0, 8)}…`;
      record({ source: 'eso', subject: 'ESO client', message: `reloaded: ${what} (new calls get a channel built from it)` });
    },
    onReloadRefused: (f) => record({ source: 'eso', subject: 'ESO client', message: `reload refused, last good pair kept: ${f.message}`, reason: f.reason }),
  });
  const providers: DemoProvider[] = [];
  const started = Date.now();
  const timeline = new Timeline(options.out, {
    json: options.json,
    now: () => Date.now(),
    calls: () => caller.calls,
    // Carriage returns are for people: no progress line into a pipe or a file.
    progress: !isTerminal(options.out)
      ? undefined
      : () => {
          const c = caller.calls;
          const left = Math.max(0, Math.ceil((started + options.durationMs - Date.now()) / 1000));
          const handshakes = providers.reduce((n, p) => n + p.connections(), 0);
          return `  ${left}s left · calls ${c.made.toLocaleString('en-US')} · failed ${c.failed} · handshakes ${handshakes} · rotations ${book.issued}`;
        },
  });

  const slots = PROVIDER_NAMES.slice(0, options.providers).map((name) => ({ namespace: `provider-${name}`, service: `provider-${name}` }));
  const volumes = new Map<string, KubeletVolume>();
  for (const [key, namespace] of [['eso-client', undefined], ...slots.map((s) => [s.namespace, s.namespace])] as const) {
    const directory = join(root, key);
    await mkdir(directory);
    const onError = (e: Error): void => record({ source: 'kubelet', subject: key, message: e.message });
    const onDelivering = namespace === undefined ? undefined : (d: Delivery) => book.delivering(namespace, d);
    volumes.set(key, new KubeletVolume({ directory, deliveryDelay, onError, ...(onDelivering ? { onDelivering } : {}) }));
  }
  const volumeOf = (target: SecretTarget): KubeletVolume | undefined =>
    volumes.get(target === 'client' ? 'eso-client' : (target as { namespace: string }).namespace);

  let live = false;
  const metrics = await startDemoMetrics(status, options.metricsAddress);
  const loop = new ReconcileLoop({
    store,
    policy,
    crypto,
    cache: new CertificateCache(createNodeVerifier()),
    now: () => Date.now(),
    onPlan: (plan) => status.update(plan),
    onError: (e) => record({ source: 'controller', subject: 'reconcile', message: `failed, retrying in 1s: ${e.message}` }),
    onReconcile: (outcome) => {
      const at = Date.now();
      for (const w of outcome.written) {
        options.onWritten?.(w, at);
        status.recordWrite(w);
        book.written(w);
        if (w.kind === 'serverLeaf' && typeof w.target === 'object' && w.reason) metrics.controller.recordRotation(w.target.namespace, w.services, w.reason);
        const data = store.get(w.target)?.data;
        // Before the pods start, the first content is mounted whole; after, the kubelet delivers changes.
        if (live && data !== undefined && w.target !== 'ca') volumeOf(w.target)?.secretChanged(volumePayload(data));
      }
      for (const e of describeReconcile(outcome)) record(e);
    },
  });

  const scenarioProviders: ScenarioProvider[] = [];
  const onProviderLog = (namespace: string, r: ProviderLogRecord): void => {
    const { event, dnsNames } = book.providerLog(namespace, r);
    record(event);
    // ESO calls the second Service once the provider serves its name (a user adds the SecretStore then).
    const p = scenarioProviders.find((x) => x.namespace === namespace);
    if (p === undefined || !book.player?.secondLabelled.has(namespace) || caller.calling(p.secondTarget.address)) return;
    if (!dnsNames.includes(`${p.secondService}.${namespace}.svc`)) return;
    caller.add(p.secondTarget);
    record({ source: 'eso', subject: p.secondTarget.address, message: 'the provider serves this name now: calling it too' });
  };

  try {
    for (const s of slots) store.setServices(s.namespace, [{ name: s.service }]);
    await loop.settle();
    for (const [key, volume] of volumes) {
      const data = store.get(key === 'eso-client' ? 'client' : { namespace: key })?.data;
      if (data === undefined) throw new Error(`the first reconcile wrote no Secret for ${key}, so there is nothing to mount`);
      await volume.mount(volumePayload(data));
    }
    live = true;
    const spiffeId = clientSpiffeId(policy.clusterDomain, policy.esoNamespace, policy.serviceAccount);
    for (const s of slots) {
      const log = (r: ProviderLogRecord): void => onProviderLog(s.namespace, r);
      const provider = await startDemoProvider({ ...s, directory: volumes.get(s.namespace)!.directory, clientSpiffeId: spiffeId, log });
      providers.push(provider);
      const secondService = `${s.service}-canary`;
      scenarioProviders.push({
        ...s,
        secondService,
        volume: volumes.get(s.namespace)!,
        secondTarget: target(s.namespace, secondService, provider.server.port),
      });
    }
    await caller.start();
    book.player = new ScenarioPlayer({ store, providers: scenarioProviders, caller, loop, record }, () => Date.now());
    const banner = formatStart({ options, policy, root, metricsUrl: metrics.server?.url, providers });
    timeline.print(banner.text, banner.json);
    timeline.heading();
    for (const h of held) timeline.record(h.event, h.at);
    held = undefined;
    for (const p of providers) caller.add(target(p.namespace, p.service, p.server.port));
    timeline.startProgress();
    options.onRunning?.({ providers });
    await playScenario(book.player, options, record);
  } finally {
    timeline.stopProgress();
    await caller.stop();
    await loop.stop();
    for (const v of volumes.values()) await v.close();
    for (const p of providers) await p.close();
    await metrics.close();
    if (held !== undefined) for (const h of held) timeline.record(h.event, h.at); // a failed start: show what happened
  }

  const reloads = caller.reloads;
  const summary: DemoSummary = {
    durationMs: Date.now() - started,
    providers: options.providers,
    seed: options.seed,
    calls: caller.calls,
    handshakes: providers.reduce((n, p) => n + p.connections(), 0),
    rotations: book.rotations,
    caPhases: book.caPhases,
    serverRotations: book.serverRotations,
    reloads: book.providerReloads.reloads + reloads.reloads,
    refusedReloads: book.providerReloads.refused + reloads.refused,
    interrupted: options.signal?.aborted ?? false,
    checks: book.checks(
      slots.map((s) => s.namespace),
      scenarioProviders.some((p) => caller.callsTo(p.secondTarget.address).made > 0),
    ),
  };
  timeline.print(formatSummary(summary), { event: 'summary', ...summary, metricsUrl: metrics.server?.url ?? null });
  return summary;
}

/** The files a Secret's data puts in its mounted folder. */
function volumePayload(data: Readonly<Record<string, unknown>>): Record<string, string> {
  const text = (v: unknown): string => (typeof v === 'string' ? v : v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : '');
  return { 'tls.crt': text(data['tls.crt']), 'tls.key': text(data['tls.key']), 'ca.crt': text(data['ca.crt']) };
}

function target(namespace: string, service: string, port: number): { namespace: string; service: string; address: string; connectTo: string } {
  return { namespace, service, address: `${service}.${namespace}.svc:${port}`, connectTo: `127.0.0.1:${port}` };
}

/** Plays each step at its time; resolves at the end of the run, or at once when aborted. */
async function playScenario(player: ScenarioPlayer, options: DemoOptions, record: (e: DemoEvent) => void): Promise<void> {
  const steps = demoScenario(options.durationMs, options.providers);
  const start = Date.now();
  const timers: NodeJS.Timeout[] = [];
  const playing: Promise<void>[] = [];
  await new Promise<void>((resolve) => {
    const end = setTimeout(resolve, options.durationMs);
    timers.push(end);
    options.signal?.addEventListener('abort', () => resolve(), { once: true });
    if (options.signal?.aborted) resolve();
    for (const step of steps) {
      const timer = setTimeout(
        () =>
          playing.push(
            player
              .play(step.action)
              .catch((e: unknown) => record({ source: 'scenario', subject: step.action.kind, message: `step failed: ${(e as Error).message}` })),
          ),
        Math.max(0, start + step.at - Date.now()),
      );
      timers.push(timer);
    }
  });
  for (const t of timers) clearTimeout(t);
  await Promise.all(playing);
}
