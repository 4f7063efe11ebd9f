import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoordinationV1Api, CoreV1Api, type KubeConfig, type V1Lease, V1MicroTime } from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { ESO_NS, bindShippedRoles } from '@eso-mtls/test-kit/cluster';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { bindClusterRole, runCli } from '@eso-mtls/test-kit/cli-run';
import { applyAll, kustomizeBuild, kustomizeInstall } from '@eso-mtls/test-kit/manifests';
import { type RunningController, createLogger, parseControllerConfig, startController } from '../src/index.js';
import type { StatusReport } from '../src/status/report.js';

// A forged leader election Lease on a real apiserver: another holder, 3,600 s. Both replicas (each
// under its own user bound to exactly the shipped roles) must say so within one lease duration, in
// the gauge eso_leader_lease_foreign, one log line and an Event on the Lease; `eso-mtls status`
// must name it; and all of it must clear once our holder is back or the forged Lease is deleted.
const LEASE = 'eso-mtls-controller';
const LEASE_MS = 10_000;
const TIMINGS = [`--leader-election-lease-duration=${LEASE_MS}ms`, '--leader-election-renew-deadline=6s', '--leader-election-retry-period=1s'];
// Deployment pod names of two ReplicaSets of one Deployment (a rollout): both are ours.
const IDENTITIES = ['eso-mtls-controller-7d9f8b6c5-x2k9z', 'eso-mtls-controller-5c6b7d8f9-q4w7r'];

interface Replica {
  readonly identity: string;
  readonly controller: RunningController;
  readonly lines: Record<string, unknown>[];
}

describe('a Lease held by no replica of ours', () => {
  let plane: ControlPlane;
  let admin: KubeConfig;
  let coordination: CoordinationV1Api;
  const replicas: Replica[] = [];

  const startReplica = async (user: string, identity: string): Promise<Replica> => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger('info', { destination: { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) } });
    const parsed = parseControllerConfig(
      [
        '--kubeconfig',
        plane.identity(user).kubeconfigPath,
        '--leader-elect',
        ...TIMINGS,
        `--leader-election-identity=${identity}`,
        '--metrics-bind-address=0',
        '--health-probe-bind-address=0',
      ],
      {},
    );
    if (parsed.kind !== 'config') throw new Error(JSON.stringify(parsed));
    const replica = { identity, controller: await startController(parsed.config, { logger, identity }), lines };
    replicas.push(replica);
    return replica;
  };
  /** The gauge as a scrape reads it: reason → value. */
  const gauge = async (r: Replica): Promise<Record<string, number>> => {
    const metric = await r.controller.metrics.registry.getSingleMetric('eso_leader_lease_foreign')!.get();
    return Object.fromEntries(metric.values.map((v) => [String(v.labels.reason), v.value]));
  };
  const everyGauge = async (): Promise<Record<string, number>[]> => Promise.all(replicas.map(gauge));
  const readLease = async (): Promise<V1Lease> => coordination.readNamespacedLease({ name: LEASE, namespace: ESO_NS });
  /** Writes the Lease as someone with update on it would; retried when a replica's renewal got in first (409). */
  const forge = (holderIdentity: string, leaseDurationSeconds: number): Promise<unknown> =>
    eventually(
      async () => {
        const lease = await readLease();
        return coordination.replaceNamespacedLease({
          name: LEASE,
          namespace: ESO_NS,
          body: { ...lease, spec: { ...lease.spec, holderIdentity, leaseDurationSeconds, renewTime: new V1MicroTime() } },
        });
      },
      10_000,
      `the Lease written with holder ${holderIdentity}`,
    );
  const leaseEvents = async (reason: string): Promise<string[]> => {
    const list = await admin.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace: ESO_NS, fieldSelector: `involvedObject.kind=Lease,reason=${reason}` });
    return list.items.map((e) => `${e.reportingInstance}: ${e.message}`);
  };
  const status = async (): Promise<{ code: number; text: string; report: StatusReport }> => {
    const argv = ['--kubeconfig', plane.identity('status-user').kubeconfigPath, ...TIMINGS];
    const text = await runCli('status', argv);
    const json = await runCli('status', [...argv, '-o', 'json']);
    return { code: json.code, text: text.stdout, report: JSON.parse(json.stdout) as StatusReport };
  };

  beforeAll(async () => {
    plane = await startControlPlane({ identities: [{ name: 'replica-a' }, { name: 'replica-b' }, { name: 'status-user' }] });
    admin = plane.adminKubeConfig;
    coordination = admin.makeApiClient(CoordinationV1Api);
    await applyAll(admin, [...kustomizeInstall('deploy'), ...kustomizeBuild('deploy/cli-rbac')]);
    for (const user of ['replica-a', 'replica-b']) await bindShippedRoles(admin, user);
    await bindClusterRole(admin, 'status-user', 'eso-mtls-status');
    await startReplica('replica-a', IDENTITIES[0]!);
    await startReplica('replica-b', IDENTITIES[1]!);
    await Promise.all(replicas.map((r) => r.controller.synced));
    await eventually(() => replicas.some((r) => r.controller.elector!.writesAllowed()), 30_000, 'a replica to lead');
  }, 180_000);
  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.controller.stop()));
    await plane?.stop();
  });

  it('while one of ours holds it, every replica exports 0 for both reasons and status has no Lease problem', async () => {
    await eventually(async () => (await everyGauge()).every((g) => g.unknown_holder === 0 && g.duration_too_long === 0), 10_000, 'both gauges at 0');
    const { report } = await status();
    expect(report.leaderElection).toMatchObject({ lease: `${ESO_NS}/${LEASE}`, checked: true, exists: true, problems: [] });
    expect(IDENTITIES).toContain(report.leaderElection!.holder);
  });

  it('a forged holder with 3,600 s is seen by every replica within one lease duration, named by status, and clears when our holder is back', async () => {
    const ours = (await readLease()).spec!;
    await forge('mallory', 3600);
    // The real deadline: one lease duration. Each replica reads the Lease once per retry period (1 s).
    await eventually(
      async () => (await everyGauge()).every((g) => g.unknown_holder === 1 && g.duration_too_long === 1),
      LEASE_MS,
      'both replicas to see the forged Lease',
    );
    // Nobody issues meanwhile: neither replica may write (the leader stops at the same read).
    await eventually(() => expect(replicas.map((r) => r.controller.elector!.writesAllowed())).toEqual([false, false]), 5_000);

    const { code, text, report } = await status();
    expect(code).toBe(1);
    expect(report.leaderElection).toMatchObject({ holder: 'mallory', leaseDurationSeconds: 3600, maxLeaseDurationSeconds: 70 });
    expect(report.leaderElection!.problems).toHaveLength(1);
    expect(report.leaderElection!.problems[0]!.kind).toBe('foreign');
    expect(text).toContain(`Leader election Lease ${ESO_NS}/${LEASE}  1 PROBLEM`);
    expect(text).toContain('holder "mallory" is not of our replicas\' identity form');
    expect(text).toContain('leaseDurationSeconds 3600 is above the 70 s our replicas may write (--leader-election-lease-duration 10s)');

    // One log line per replica when it starts, and an Event on the Lease from each.
    for (const r of replicas) {
      const said = r.lines.filter((l) => String(l.msg).startsWith('the leader election Lease is held by no replica of this installation'));
      expect(said).toHaveLength(1);
      expect(said[0]).toMatchObject({ level: 'error', lease: `${ESO_NS}/${LEASE}`, holder: 'mallory', leaseDurationSeconds: 3600 });
    }
    await eventually(async () => (await leaseEvents('LeaseHeldByForeignHolder')).length === 2, 10_000, 'an Event from each replica');
    expect((await leaseEvents('LeaseHeldByForeignHolder')).every((e) => e.includes('holder "mallory" is not a replica of "eso-mtls-controller"'))).toBe(true);

    // Our holder back, as it was: it clears everywhere, once each, and a replica leads again.
    await forge(ours.holderIdentity!, ours.leaseDurationSeconds!);
    await eventually(async () => (await everyGauge()).every((g) => g.unknown_holder === 0 && g.duration_too_long === 0), LEASE_MS, 'both gauges back at 0');
    for (const r of replicas)
      expect(r.lines.filter((l) => String(l.msg).startsWith('the leader election Lease is no longer held by "mallory"'))).toHaveLength(1);
    await eventually(async () => (await leaseEvents('LeaseForeignHolderGone')).length === 2, 10_000, 'the end said by each replica');
    await eventually(() => replicas.some((r) => r.controller.elector!.writesAllowed()), 3 * LEASE_MS, 'a replica to lead again');
    expect((await status()).report.leaderElection!.problems).toEqual([]);
  }, 120_000);

  it('a holder of our form claiming the Lease far too long is named too, and clears when the forged Lease is deleted', async () => {
    await forge('eso-mtls-controller-5c6b7d8f9-zzzzz', 3600);
    await eventually(
      async () => (await everyGauge()).every((g) => g.unknown_holder === 0 && g.duration_too_long === 1),
      LEASE_MS,
      'both replicas to see the duration',
    );
    const { code, report } = await status();
    expect(code).toBe(1);
    expect(report.leaderElection!.problems[0]!.message).toContain('leaseDurationSeconds 3600 is above the 70 s');
    expect(report.leaderElection!.problems[0]!.message).not.toContain('identity form');

    await coordination.deleteNamespacedLease({ name: LEASE, namespace: ESO_NS });
    await eventually(async () => (await everyGauge()).every((g) => g.duration_too_long === 0), LEASE_MS, 'both gauges back at 0 once deleted');
    await eventually(() => replicas.some((r) => r.controller.elector!.writesAllowed()), 3 * LEASE_MS, 'a replica to create the Lease and lead');
    await eventually(async () => (await status()).report.leaderElection?.problems.length === 0, 10_000, 'status to see our Lease');
  }, 120_000);
});
