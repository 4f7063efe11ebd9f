import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { CoreV1Api, type KubeConfig, type V1Deployment, type V1Secret } from '@kubernetes/client-node';
import { DEFAULT_POLICY, days } from '@eso-mtls/core';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { CONTROLLER_FLAGS } from '../src/flags.js';
import { CLIENT_SECRET, ESO_NS, PROVIDER_SECRET, converged } from '@eso-mtls/test-kit/cluster';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { applyAll, find, kustomizeInstall, serviceAccountKubeConfig } from '@eso-mtls/test-kit/manifests';
import { repoRoot } from '@eso-mtls/test-kit/repo';

// Issue 16, T6 (docs/flood-control.md): thousands of labelled Services created at once while
// certificates are due. The controller, from dist/ with its certificate clock moved past the
// renewal time of what it issued, must renew those first, stay under its shipped memory limit,
// neither crash nor spin, and serve every namespace within one reconcile interval.
// FLOOD_NAMESPACES and FLOOD_SERVICES_PER_NAMESPACE size the flood (`npm run test:flood-heavy`).
const FLOOD_NAMESPACES = Number(process.env['FLOOD_NAMESPACES'] ?? 1250);
const SERVICES_PER_NAMESPACE = Number(process.env['FLOOD_SERVICES_PER_NAMESPACE'] ?? 4);
const DUE_NAMESPACES = 20;
/** The shipped default of --max-issuances-per-reconcile: what this test holds the controller to. */
const BOUND = Number(CONTROLLER_FLAGS.find((f) => f.name === 'max-issuances-per-reconcile')!.default);
/** Past the renewal time of every leaf issued at the real now (notAfter - leafLookahead - leafJitter), 34 days before notAfter. */
const CLOCK_OFFSET = DEFAULT_POLICY.leafValidity - DEFAULT_POLICY.leafLookahead + days(1);
const CHILD = join(repoRoot, 'packages/controller/test/support/shifted-controller.child.mjs');

const manifests = kustomizeInstall('deploy');
const controllerContainer = find<V1Deployment>(manifests, 'Deployment', 'eso-mtls-controller').spec!.template.spec!.containers.find(
  (c) => c.name === 'controller',
)!;
const memoryLimit = controllerContainer.resources!.limits!['memory']!;
/**
 * Every literal `env` entry of the shipped container (Node's and glibc's options among them), which
 * the limit above counts on; entries from a `valueFrom` are the pod's own and have no value here.
 */
const SHIPPED_ENV = Object.fromEntries((controllerContainer.env ?? []).flatMap((e) => (e.value === undefined ? [] : [[e.name, e.value]])));
/** The shipped limit in bytes (`256Mi`). */
const MEMORY_LIMIT_BYTES = Number(/^(\d+)Mi$/.exec(memoryLimit)![1]) * 1024 * 1024;

/** The controller child: its log lines by level, its peak RSS, and its reconcile count on request. */
class ShiftedController {
  readonly child: ChildProcessWithoutNullStreams;
  readonly levels = new Map<string, number>();
  readonly problems: string[] = [];
  private readonly replies: ((rounds: number) => void)[] = [];
  readonly exited: Promise<number | null>;

  constructor(kubeconfig: string, offsetMs: number) {
    this.child = spawn(process.execPath, [CHILD, '--kubeconfig', kubeconfig, '--health-probe-bind-address=127.0.0.1:0', '--metrics-bind-address=127.0.0.1:0'], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...SHIPPED_ENV, FLOOD_TEST_CLOCK_OFFSET_MS: String(offsetMs) },
    });
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      let entry: { level?: string; msg?: string };
      try {
        entry = JSON.parse(line) as { level?: string; msg?: string };
      } catch {
        entry = { level: 'raw', msg: line };
      }
      const level = entry.level ?? 'raw';
      this.levels.set(level, (this.levels.get(level) ?? 0) + 1);
      if (['error', 'fatal', 'raw'].includes(level) && this.problems.length < 20) this.problems.push(line.slice(0, 500));
    });
    createInterface({ input: this.child.stderr }).on('line', (line) => {
      const rounds = /^\{"rounds":(\d+)\}$/.exec(line);
      if (rounds) this.replies.shift()?.(Number(rounds[1]));
      else if (this.problems.length < 20) this.problems.push(`stderr: ${line.slice(0, 500)}`);
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  rounds(): Promise<number> {
    return new Promise((resolve) => {
      this.replies.push(resolve);
      this.child.stdin.write('rounds\n');
    });
  }

  /** Peak resident set size since the process started (VmHWM), in bytes. */
  peakRss(): number {
    const kb = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${this.child.pid}/status`, 'utf8'));
    return Number(kb![1]) * 1024;
  }

  async stop(): Promise<number | null> {
    if (this.alive) this.child.kill('SIGTERM');
    return this.exited;
  }
}

/** Runs `tasks` with at most `limit` in flight. */
async function inPool(count: number, limit: number, task: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

/** A namespace with `services` labelled, headless Services (the controller reads only their metadata). */
async function providerNamespace(core: CoreV1Api, namespace: string, services: number): Promise<void> {
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  await inPool(services, services, (s) =>
    core.createNamespacedService({
      namespace,
      body: {
        metadata: { name: `provider-${s}`, labels: { 'external-secrets.io/provider': 'true' } },
        spec: { clusterIP: 'None', ports: [{ name: 'grpc', port: 8443 }] },
      },
    }),
  );
}

const providerSecrets = async (core: CoreV1Api): Promise<V1Secret[]> =>
  (await core.listSecretForAllNamespaces({ fieldSelector: `metadata.name=${PROVIDER_SECRET}` })).items;
const serialOf = (s: V1Secret | undefined): string => new X509Certificate(Buffer.from(s!.data!['tls.crt']!, 'base64')).serialNumber;
const nameOf = (s: V1Secret): string => `${s.metadata!.namespace}/${s.metadata!.name}`;

describe(`a flood of ${FLOOD_NAMESPACES * SERVICES_PER_NAMESPACE} labelled Services while certificates are due`, () => {
  let plane: ControlPlane;
  let admin: KubeConfig;
  let core: CoreV1Api;
  let kubeconfig: string;
  const running: ShiftedController[] = [];

  beforeAll(async () => {
    plane = await startControlPlane();
    admin = plane.adminKubeConfig;
    core = admin.makeApiClient(CoreV1Api);
    await applyAll(admin, manifests);
    const { kc } = await serviceAccountKubeConfig(admin, plane.url, plane.caPem, ESO_NS, 'eso-mtls-controller');
    kubeconfig = join(plane.dir, 'kubeconfig-flood.yaml');
    writeFileSync(kubeconfig, kc.exportConfig(), { mode: 0o600 });
  }, 120_000);
  afterAll(async () => {
    for (const c of running) await c.stop();
    await plane?.stop();
  });

  it(
    'renews what is due first, stays under the shipped memory limit, neither crashes nor spins, and serves every namespace',
    async () => {
      // Served and valid today. Named to sort after every flooded namespace: the planner's name order would serve them last.
      const due = new Map(Array.from({ length: DUE_NAMESPACES }, (_, i) => [`zz-due-${String(i).padStart(2, '0')}`, ['provider-0']] as const));
      await inPool(DUE_NAMESPACES, 8, (i) => providerNamespace(core, [...due.keys()][i]!, 1));
      const today = new ShiftedController(kubeconfig, 0);
      running.push(today);
      await eventually(() => converged(admin, due), 120_000, 'the first certificates');
      expect(await today.stop()).toBe(0);
      const before = new Map((await providerSecrets(core)).map((s) => [nameOf(s), s]));
      const clientBefore = await core.readNamespacedSecret({ namespace: ESO_NS, name: CLIENT_SECRET });

      // The flood, while no controller runs: the next one finds it all at once, with every certificate due.
      const flooded = Array.from({ length: FLOOD_NAMESPACES }, (_, i) => `flood-${String(i).padStart(5, '0')}`);
      const setupStarted = Date.now();
      await inPool(FLOOD_NAMESPACES, 48, (i) => providerNamespace(core, flooded[i]!, SERVICES_PER_NAMESPACE));
      const setupMs = Date.now() - setupStarted;
      const sinceRevision = Number((await core.listSecretForAllNamespaces({ limit: 1 })).metadata!.resourceVersion);

      const expected = new Map<string, readonly string[]>([
        ...due,
        ...flooded.map((ns) => [ns, Array.from({ length: SERVICES_PER_NAMESPACE }, (_, s) => `provider-${s}`)] as const),
      ]);
      const later = new ShiftedController(kubeconfig, CLOCK_OFFSET);
      running.push(later);
      const started = Date.now();
      // The design's promise, and the soak's assertion: every Secret valid within one reconcile interval.
      await eventually(
        async () => {
          if (!later.alive) throw new Error(`the controller exited: ${later.problems.join('\n')}`);
          return (await providerSecrets(core)).length === expected.size && (await converged(admin, expected));
        },
        DEFAULT_POLICY.reconcileInterval,
        'every namespace served',
      );
      const convergedMs = Date.now() - started;

      // Nothing spins: over a quiet spell no Secret changes and the controller barely reconciles.
      const settled = new Map((await providerSecrets(core)).map((s) => [nameOf(s), s.metadata!.resourceVersion]));
      const roundsBefore = await later.rounds();
      await new Promise((r) => setTimeout(r, 15_000));
      const roundsAfter = await later.rounds();
      expect(new Map((await providerSecrets(core)).map((s) => [nameOf(s), s.metadata!.resourceVersion]))).toEqual(settled);
      expect(roundsAfter - roundsBefore).toBeLessThanOrEqual(2);

      // Renewed first: every due leaf (and the client's) was re-issued, and each write landed among
      // the first BOUND leaf writes after the flood; the planner's name order put them after all
      // FLOOD_NAMESPACES first issuances.
      const secrets = [...(await providerSecrets(core)), await core.readNamespacedSecret({ namespace: ESO_NS, name: CLIENT_SECRET })];
      const writes = secrets
        .filter((s) => Number(s.metadata!.resourceVersion) > sinceRevision)
        .sort((a, b) => Number(a.metadata!.resourceVersion) - Number(b.metadata!.resourceVersion))
        .map(nameOf);
      expect(writes).toHaveLength(expected.size + 1);
      const renewals = [...due.keys()].map((ns) => `${ns}/${PROVIDER_SECRET}`).concat(`${ESO_NS}/${CLIENT_SECRET}`);
      for (const name of renewals.slice(0, -1))
        expect([name, serialOf(secrets.find((s) => nameOf(s) === name))]).not.toEqual([name, serialOf(before.get(name))]);
      expect(serialOf(secrets.at(-1))).not.toBe(serialOf(clientBefore));
      const ranks = renewals.map((name) => writes.indexOf(name)).sort((a, b) => a - b);
      expect(ranks.every((r) => r >= 0 && r < Math.min(BOUND, FLOOD_NAMESPACES))).toBe(true);

      // The shipped memory limit, not a benchmark: the peak of the whole run.
      const peak = later.peakRss();
      const rounds = await later.rounds();
      process.stdout.write(
        `flood: ${FLOOD_NAMESPACES} namespaces x ${SERVICES_PER_NAMESPACE} Services created in ${(setupMs / 1000).toFixed(1)} s; ` +
          `every namespace served ${(convergedMs / 1000).toFixed(1)} s after the controller started, in ${rounds} reconciles (bound ${BOUND}); ` +
          `renewals landed at write ranks ${ranks[0]}..${ranks.at(-1)} of ${writes.length}; peak RSS ${(peak / 1048576).toFixed(0)} MiB (limit ${memoryLimit}, env ${JSON.stringify(SHIPPED_ENV)}); ` +
          `log lines by level ${JSON.stringify(Object.fromEntries(later.levels))}\n`,
      );
      expect(peak).toBeLessThan(MEMORY_LIMIT_BYTES);
      expect(later.problems.filter((p) => !p.includes('"level":"error"'))).toEqual([]);
      expect(later.alive).toBe(true);
      expect(await later.stop()).toBe(0);
    },
    DEFAULT_POLICY.reconcileInterval + 600_000,
  );
});
