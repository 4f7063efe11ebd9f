// The soak: the whole system through simulated years with faults. See docs/soak.md.
import { X509Certificate } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import { DEFAULT_POLICY } from '@eso-mtls/core';
import { text } from '@eso-mtls/test-kit/secrets';
import { attributeFailures, expectedReloads, type FolderEvent, type WindowReport } from './accounting.js';
import { secretProblems } from './checks.js';
import { CA_RESETTING, type FailureWindow, FAULT_KINDS, type FaultContext, type FaultKind, injectFault } from './faults.js';
import { caHistory, type CaEvent, issuancesByNamespace, leakedKeys, leavesNotFromActiveCa, secretVersions } from './history.js';
import { SeededRandom } from './random.js';
import { CA_SECRET, CLIENT_SECRET, ESO_NS, PROVIDER_SECRET, REPLICA_USERS, type SoakService, SoakWorld, serialOf } from './world.js';
import { bundleHash } from './bundle-hash.js';

const DAY = 86_400_000;
const NAMES = { esoNamespace: ESO_NS, ca: CA_SECRET, client: CLIENT_SECRET, provider: PROVIDER_SECRET };
/** The design's reconcile interval: how long after a fault every Secret must be valid again (simulated = real time while the soak waits). */
const RECONCILE_INTERVAL_MS = DEFAULT_POLICY.reconcileInterval;
/** Longest a fault's window of allowed failed calls may last. */
const WINDOW_BOUND_MS: Partial<Record<FaultKind, number>> = { 'restart-provider': 30_000, 'emergency-ca-rotation': 60_000 };

/** The providers of a soak: 8 namespaces, three of them with two labelled Services, 11 provider processes. */
export const SOAK_SERVICES: readonly SoakService[] = [
  ...['vault', 'aws'].map((service) => ({ namespace: 'team-a', service })),
  ...['gcp', 'azure'].map((service) => ({ namespace: 'team-b', service })),
  ...['files', 'keys'].map((service) => ({ namespace: 'team-c', service })),
  ...['team-d', 'team-e', 'team-f', 'team-g', 'team-h'].map((namespace) => ({ namespace, service: 'provider' })),
];
/** A labelled namespace whose provider Secret somebody else wrote first: the controller must leave it alone. */
const FOREIGN = { namespace: 'team-foreign', service: 'taken' };

/** Secrets the controller does not own, planted to be compared byte for byte at the end. */
function plantedSecrets(): V1Secret[] {
  const secret = (namespace: string, name: string, value: string): V1Secret => ({
    metadata: { namespace, name, labels: { planted: 'true' }, annotations: { note: 'not the controller’s' } },
    data: { value: Buffer.from(value).toString('base64') },
  });
  return [
    secret('team-a', 'unrelated-config', 'db=primary'),
    secret('team-b', `${PROVIDER_SECRET}-backup`, 'a copy someone keeps'),
    secret(ESO_NS, 'unrelated-eso-secret', 'webhook token'),
    secret(FOREIGN.namespace, PROVIDER_SECRET, 'a tenant wrote this first'),
  ];
}

/** How a soak runs. */
export interface SoakOptions {
  readonly seed: number;
  /** Simulated days to drive. */
  readonly days: number;
  /** Each time step jumps a random number of days in this range. */
  readonly stepDays: { readonly min: number; readonly max: number };
  /** Probability of an extra random fault after each step (never a CA-resetting or forced one). */
  readonly extraFaultProbability: number;
  /** Include the forced overlap CA rotation (the short soak; the long one waits for the CA to age). */
  readonly forcedCaRotation: boolean;
  readonly log: (line: string) => void;
}

/** One injected fault. */
export interface FaultRecord {
  readonly kind: FaultKind;
  readonly day: number;
  readonly detail: string;
  /** Until every Secret was valid, delivered and reloaded again (real = simulated ms). */
  readonly convergedMs: number;
  /** Issuances and CA rotations the controllers counted as failed meanwhile. */
  readonly failedRotations: number;
}

/** What a soak did and found. */
export interface SoakReport {
  readonly seed: number;
  readonly simulatedDays: number;
  readonly steps: number;
  readonly faults: readonly FaultRecord[];
  readonly calls: { readonly made: number; readonly failed: number };
  readonly windows: readonly WindowReport[];
  readonly caEvents: readonly CaEvent[];
  /** Prepares of an overlap rotation nobody asked for: the CA aged. */
  readonly ageDrivenCaRotations: number;
  readonly issuances: number;
  readonly hotReloads: number;
  readonly refusedReloads: number;
  readonly longestConvergeMs: number;
  readonly wallSeconds: number;
  /** Every broken promise; empty when the soak passed. */
  readonly problems: readonly string[];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The mandatory faults, each once, at days spread over the run; CA-resetting ones early. */
function faultSchedule(o: SoakOptions, random: SeededRandom): Map<number, FaultKind[]> {
  const kinds = FAULT_KINDS.filter((k) => k !== 'forced-ca-rotation' || o.forcedCaRotation);
  const early = random.shuffle(kinds.filter((k) => CA_RESETTING.has(k)));
  const rest = random.shuffle(kinds.filter((k) => !CA_RESETTING.has(k)));
  const order = [...early, ...rest];
  // Leave the last quarter free of mandatory faults, so a forced rotation can finish within the run.
  const span = o.days * 0.75;
  const schedule = new Map<number, FaultKind[]>();
  order.forEach((kind, i) => {
    const day = Math.floor(3 + (i * (span - 3)) / order.length);
    schedule.set(day, [...(schedule.get(day) ?? []), kind]);
  });
  return schedule;
}

/** Runs a soak and reports; the caller asserts `problems` is empty. */
export async function runSoak(o: SoakOptions): Promise<SoakReport> {
  const wallStart = performance.now();
  const random = new SeededRandom(o.seed);
  o.log(`soak: seed ${o.seed}, ${o.days} simulated days, steps of ${o.stepDays.min}-${o.stepDays.max} days; replay with SOAK_SEED=${o.seed}`);
  const world = new SoakWorld(random, o.log);
  const problems: string[] = [];
  const faults: FaultRecord[] = [];
  const windows: FailureWindow[] = [];
  const labelled = new Map<string, string[]>();
  for (const s of SOAK_SERVICES) labelled.set(s.namespace, [...(labelled.get(s.namespace) ?? []), s.service]);
  let steps = 0;
  let longestConvergeMs = 0;
  try {
    await world.start([...SOAK_SERVICES, FOREIGN], plantedSecrets());
    const planted = new Map(
      (await world.secrets()).filter((s) => s.metadata?.labels?.['planted'] === 'true').map((s) => [`${s.metadata!.namespace}/${s.metadata!.name}`, s]),
    );
    const start = world.now();
    const ctx: FaultContext = { world, labelled, settle: (what) => settle(world, labelled, what, o.log) };
    o.log(`soak: control plane and replicas up after ${((performance.now() - wallStart) / 1000).toFixed(0)} s`);
    await ctx.settle('the first issuance');
    for (const s of SOAK_SERVICES) await world.startProvider(s);
    await world.startClient();
    world.kubelet.start();
    for (const p of world.providers.values()) world.addTarget(p);
    await ctx.settle('the providers and the client starting');
    o.log(`soak: ${world.providers.size} providers and the ESO client up after ${((performance.now() - wallStart) / 1000).toFixed(0)} s`);

    const schedule = faultSchedule(o, random);
    let failedSoFar = (await world.controllerCounts()).failures;
    const done = new Set<number>();
    while (world.now() - start < o.days * DAY) {
      await world.jump(Math.round(random.between(o.stepDays.min, o.stepDays.max) * DAY));
      steps++;
      const day = Math.floor((world.now() - start) / DAY);
      const jumpSettledMs = await ctx.settle(`the jump to day ${day}`);
      longestConvergeMs = Math.max(longestConvergeMs, jumpSettledMs);
      o.log(`day ${day}: settled after ${(jumpSettledMs / 1000).toFixed(1)} s, ${world.failures.length} failed calls so far`);
      const due = [...schedule].filter(([d]) => d <= day && !done.has(d));
      const kinds = due.flatMap(([d, k]) => (done.add(d), k));
      if (random.fraction() < o.extraFaultProbability) {
        kinds.push(random.pick(FAULT_KINDS.filter((k) => !CA_RESETTING.has(k) && k !== 'forced-ca-rotation')));
      }
      for (const kind of kinds) {
        o.log(`day ${day}: injecting ${kind}`);
        const outcome = await injectFault(kind, ctx);
        if (outcome.window) windows.push(outcome.window);
        const convergedMs = await ctx.settle(`${kind} (${outcome.detail})`);
        longestConvergeMs = Math.max(longestConvergeMs, convergedMs);
        const failed = (await world.controllerCounts()).failures;
        faults.push({ kind, day, detail: outcome.detail, convergedMs, failedRotations: failed - failedSoFar });
        o.log(`day ${day}: ${kind}: ${outcome.detail}; valid again after ${(convergedMs / 1000).toFixed(1)} s; ${failed - failedSoFar} failed rotations`);
        failedSoFar = failed;
      }
    }
    await sleep(2000); // calls in flight finish
    const client = await world.clientReport();

    // Calls.
    const attributed = attributeFailures(world.failures, windows);
    for (const f of attributed.unexplained)
      problems.push(`call to ${f.address} failed outside any fault window at ${new Date(f.at).toISOString()}: ${f.message}`);
    for (const w of attributed.windows) {
      const bound = WINDOW_BOUND_MS[w.cause as FaultKind];
      if (bound !== undefined && w.durationMs > bound) problems.push(`${w.cause} on ${w.address}: calls failed for ${w.durationMs} ms, more than ${bound} ms`);
    }
    if (client.failed !== world.failures.length) problems.push(`the client counted ${client.failed} failed calls but reported ${world.failures.length}`);

    // History, from the audit log.
    const versions = secretVersions(world.plane.auditEvents());
    problems.push(...leakedKeys(versions, ESO_NS).map((l) => `ESO key material outside ${ESO_NS}: ${l}`));
    const ca = caHistory(versions, ESO_NS, CA_SECRET, REPLICA_USERS);
    problems.push(...ca.problems, ...leavesNotFromActiveCa(versions, PROVIDER_SECRET, ESO_NS, CA_SECRET, REPLICA_USERS));
    const policy = DEFAULT_POLICY;
    const ageDriven = ca.events.filter((e) => e.kind === 'prepare' && !e.requested && e.activeAgeDays! * DAY >= policy.caValidity - policy.caLookahead - DAY);
    for (const v of versions) {
      const key = `${v.namespace}/${v.name}`;
      if (planted.has(key) && REPLICA_USERS.has(v.user)) problems.push(`${v.user} wrote the planted Secret ${key} (${v.verb})`);
    }
    const now = new Map((await world.secrets()).map((s) => [`${s.metadata!.namespace}/${s.metadata!.name}`, s]));
    for (const [key, before] of planted) {
      const after = now.get(key);
      const same = (s: V1Secret | undefined): string => JSON.stringify([s?.data, s?.metadata?.labels, s?.metadata?.annotations, s?.metadata?.resourceVersion]);
      if (same(after) !== same(before)) problems.push(`the planted Secret ${key} changed`);
    }

    // Metrics against history.
    const counts = await world.controllerCounts();
    const issued = issuancesByNamespace(versions, PROVIDER_SECRET, REPLICA_USERS);
    const events = await rotationEvents(world);
    // A Service's series go when it does (unlabelled or deleted): compare the Services labelled now.
    const present = (key: string): boolean => labelled.get(key.split('/')[0]!)?.includes(key.split('/')[1]!) ?? false;
    for (const key of [...new Set([...counts.rotations.keys(), ...events.keys()])].filter(present)) {
      if ((counts.rotations.get(key) ?? 0) !== (events.get(key) ?? 0)) {
        problems.push(`rotations ${key}: the metrics count ${counts.rotations.get(key) ?? 0}, the Events ${events.get(key) ?? 0}`);
      }
    }
    const eventIssuances = await issuanceEventsByNamespace(world);
    for (const ns of new Set([...issued.keys(), ...eventIssuances.keys()])) {
      if ((issued.get(ns) ?? 0) !== (eventIssuances.get(ns) ?? 0))
        problems.push(`issuances in ${ns}: the audit log has ${issued.get(ns) ?? 0}, the Events ${eventIssuances.get(ns) ?? 0}`);
    }
    const failedEvents = await failureEvents(world);
    if (counts.failures !== failedEvents) {
      problems.push(`the controllers counted ${counts.failures} failed rotations, the Warning Events ${failedEvents}${unrecordedEvents(world)}`);
    }
    let hotReloads = 0;
    let refusedReloads = 0;
    for (const p of world.providers.values()) {
      const expected = expectedReloads(folderEvents(world, p.spec.certDir));
      const actual = await p.reloadCounts();
      hotReloads += actual.reloads;
      refusedReloads += actual.refused;
      if (expected.reloads !== actual.reloads || expected.refused !== actual.refused) {
        problems.push(
          `${p.address}: reloads ${actual.reloads}, refused ${actual.refused}; the deliveries call for ${expected.reloads} and ${expected.refused}`,
        );
      }
    }
    const clientExpected = expectedReloads(folderEvents(world, world.clientDir));
    if (clientExpected.reloads !== client.reloads || clientExpected.refused !== client.refused) {
      problems.push(
        `ESO client: reloads ${client.reloads}, refused ${client.refused}; the deliveries call for ${clientExpected.reloads} and ${clientExpected.refused}`,
      );
    }
    return {
      seed: o.seed,
      simulatedDays: Math.floor((world.now() - start) / DAY),
      steps,
      faults,
      calls: { made: client.made, failed: client.failed },
      windows: attributed.windows,
      caEvents: ca.events,
      ageDrivenCaRotations: ageDriven.length,
      issuances: [...issued.values()].reduce((a, b) => a + b, 0),
      hotReloads,
      refusedReloads,
      longestConvergeMs,
      wallSeconds: (performance.now() - wallStart) / 1000,
      problems,
    };
  } finally {
    await world.stop();
  }
}

/** A folder's starts and deliveries, in order. */
function folderEvents(world: SoakWorld, directory: string): FolderEvent[] {
  const starts: (FolderEvent & { seq: number })[] = world.providerStarts
    .filter((s) => s.directory === directory)
    .map((s) => ({ kind: 'start', payload: s.payload, at: s.at, readerRunning: true, seq: s.seq }));
  const deliveries: (FolderEvent & { seq: number })[] = world.deliveries
    .filter((d) => d.mount.directory === directory && d.delivery.kind !== 'mount')
    .map((d) => ({ kind: 'delivery', payload: d.delivery.payload, at: d.at, readerRunning: d.providerRunning, seq: d.seq }));
  return [...starts, ...deliveries].sort((a, b) => a.seq - b.seq);
}

/**
 * The running replicas' own reports of Events they could not write (for a count that does not
 * match: an Event lost while the apiserver was down says so here), at most five.
 */
function unrecordedEvents(world: SoakWorld): string {
  const lines = [...world.replicas.values()].flatMap((r) =>
    r.lines.filter((l) => l.msg === 'could not record Event').map((l) => `${r.name}: ${JSON.stringify(l)}`),
  );
  return lines.length === 0 ? ' (no replica logged an Event it could not record)' : `; Events the replicas could not record: ${lines.slice(0, 5).join('; ')}`;
}

/** Issued/Rotated Events by "namespace/service/reason". */
async function rotationEvents(world: SoakWorld): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const e of (await world.core.listEventForAllNamespaces()).items) {
    if (e.involvedObject.kind !== 'Service' || !['Issued', 'Rotated'].includes(e.reason ?? '')) continue;
    const reason = /\(reason: ([a-z_]+)\)/.exec(e.message ?? '')?.[1] ?? 'unknown';
    const key = `${e.involvedObject.namespace}/${e.involvedObject.name}/${reason}`;
    counts.set(key, (counts.get(key) ?? 0) + (e.count ?? 1));
  }
  return counts;
}

/**
 * Failed issuances and CA rotations as the controllers' Warning Events count them: Failed, and
 * Conflict (a provider Secret someone else owns, reported again each reconcile interval).
 */
async function failureEvents(world: SoakWorld): Promise<number> {
  return (await world.core.listEventForAllNamespaces()).items
    .filter((e) => e.type === 'Warning' && ['Failed', 'Conflict'].includes(e.reason ?? ''))
    .reduce((n, e) => n + (e.count ?? 1), 0);
}

/** Distinct issuances per namespace in the Events (one issuance gives one Event per Service, same text). */
async function issuanceEventsByNamespace(world: SoakWorld): Promise<Map<string, number>> {
  const seen = new Map<string, Set<string>>();
  for (const e of (await world.core.listEventForAllNamespaces()).items) {
    if (e.involvedObject.kind !== 'Service' || !['Issued', 'Rotated'].includes(e.reason ?? '')) continue;
    const ns = e.involvedObject.namespace!;
    seen.set(ns, (seen.get(ns) ?? new Set()).add(e.message ?? ''));
  }
  return new Map([...seen].map(([ns, s]) => [ns, s.size]));
}

/**
 * Waits until every Secret is valid at simulated now, unchanged for a moment, delivered to every
 * folder, served by every provider and used by the client; at most one reconcile interval.
 */
async function settle(world: SoakWorld, labelled: ReadonlyMap<string, readonly string[]>, what: string, log: (line: string) => void): Promise<number> {
  const start = Date.now();
  let told = start;
  await sleep(1500); // the controllers read the offset every 100 ms, and watch events arrive
  let last = '';
  let problems: string[] = ['not read yet'];
  for (;;) {
    if (Date.now() - start > RECONCILE_INTERVAL_MS) {
      throw new Error(`after ${what}: not valid, delivered and reloaded within one reconcile interval: ${problems.join('; ')}`);
    }
    try {
      const secrets = await world.secrets();
      problems = secretProblems(secrets, NAMES, labelled, world.now());
      const versions = secrets.map((s) => `${s.metadata!.namespace}/${s.metadata!.name}@${s.metadata!.resourceVersion}`).join(',');
      if (problems.length === 0 && versions === last) {
        problems = await deliveryProblems(world, secrets);
        if (problems.length === 0) return Date.now() - start;
      }
      last = versions;
    } catch (e) {
      problems = [`reading the cluster: ${(e as Error).message}`];
    }
    if (Date.now() - told > 30_000) {
      told = Date.now();
      log(`  still settling after ${what} (${Math.round((told - start) / 1000)} s): ${problems.slice(0, 3).join('; ')}`);
    }
    await sleep(500);
  }
}

/** What is not yet delivered, served or used: folders, providers' handshakes, the client's certificate. */
async function deliveryProblems(world: SoakWorld, secrets: readonly V1Secret[]): Promise<string[]> {
  if (world.kubelet === undefined || world.providers.size === 0) return [];
  await world.kubelet.freshRead();
  if (!world.kubelet.settled) return ['a delivery is pending'];
  const secret = (ns: string, name: string) => secrets.find((s) => s.metadata?.namespace === ns && s.metadata?.name === name);
  const client = { cert: text(secret(ESO_NS, CLIENT_SECRET), 'tls.crt'), key: text(secret(ESO_NS, CLIENT_SECRET), 'tls.key') };
  const problems: string[] = [];
  for (const p of world.providers.values()) {
    if (!p.running) continue;
    const served = await world.servedLeaf(p, client);
    const wanted = text(secret(p.spec.namespace, PROVIDER_SECRET), 'tls.crt');
    if (served === undefined || wanted === '' || served !== fingerprint(wanted)) problems.push(`${p.address} does not serve its Secret's certificate yet`);
  }
  const report = await world.clientReport();
  if (report.serial !== serialOf(client.cert) || report.bundle !== bundleHash(text(secret(ESO_NS, CLIENT_SECRET), 'ca.crt'))) {
    problems.push('the ESO client does not use its Secret yet');
  }
  return problems;
}

function fingerprint(pem: string): string {
  return new X509Certificate(pem).fingerprint256;
}
