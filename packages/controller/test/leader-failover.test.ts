import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoordinationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { ESO_NS, bindShippedRoles, converged, createProviderNamespace, createProviderService, leaseHolder, writesBy } from '@eso-mtls/test-kit/cluster';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { ControllerProcess, timedGet } from '@eso-mtls/test-kit/controller-process';
import { applyAll, kustomizeInstall } from '@eso-mtls/test-kit/manifests';

// Two controller processes, each under its own identity bound to exactly the shipped roles, with
// the apiserver's audit log as the record of who wrote what and when.
const LEASE_MS = 4000;
const RETRY_MS = 500;
const TIMINGS = [`--leader-election-lease-duration=${LEASE_MS}ms`, '--leader-election-renew-deadline=3s', `--leader-election-retry-period=${RETRY_MS}ms`];

describe('two controller replicas with leader election', () => {
  let plane: ControlPlane;
  let admin: KubeConfig;
  const replicas = new Map<string, ControllerProcess>();
  const expected = new Map<string, string[]>();

  const startReplica = (name: string): ControllerProcess => {
    const p = new ControllerProcess(name, [
      '--kubeconfig',
      plane.identity(name).kubeconfigPath,
      '--leader-elect',
      ...TIMINGS,
      `--leader-election-identity=${name}`,
      '--health-probe-bind-address=127.0.0.1:0',
      '--metrics-bind-address=127.0.0.1:0',
    ]);
    replicas.set(name, p);
    return p;
  };
  const addNamespace = async (ns: string, services: string[]): Promise<void> => {
    await createProviderNamespace(admin, ns, services);
    expected.set(ns, services);
  };

  beforeAll(async () => {
    plane = await startControlPlane({ audit: true, identities: [{ name: 'replica-a' }, { name: 'replica-b' }] });
    admin = plane.adminKubeConfig;
    await applyAll(admin, kustomizeInstall('deploy'));
    for (const r of ['replica-a', 'replica-b']) await bindShippedRoles(admin, r);
    await addNamespace('ns-1', ['vault']);
    await addNamespace('ns-2', ['aws', 'gcp']);
    await addNamespace('ns-3', ['files']);
  }, 120_000);
  afterAll(async () => {
    await Promise.all([...replicas.values()].map((p) => p.kill()));
    await plane?.stop();
  });

  it('only the leader writes', async () => {
    const a = startReplica('replica-a');
    // Only catches a replica that never leads: loading the sources alone took over 30 s at load 18-21.
    await a.waitForLog((l) => l.msg === 'acquired leader lease', 90_000, 'replica-a to lead');
    const b = startReplica('replica-b');
    const { probes } = await b.endpoints();
    await eventually(() => converged(admin, expected), 60_000, 'convergence');
    await eventually(async () => (await timedGet(`${probes}/readyz`)).status === 200, 20_000, 'replica-b ready as a follower');
    expect(writesBy(plane, 'replica-a', ['secrets']).length).toBeGreaterThanOrEqual(2 + expected.size);
    expect(writesBy(plane, 'replica-b')).toEqual([]);
    expect(await leaseHolder(admin)).toBe('replica-a');
  }, 240_000);

  it('a leader stopped past its lease writes nothing after it resumes; the other takes over and converges', async () => {
    const a = replicas.get('replica-a')!;
    const writesBefore = writesBy(plane, 'replica-a').length;
    const stoppedAt = Date.now();
    a.signal('SIGSTOP');
    await eventually(async () => (await leaseHolder(admin)) === 'replica-b', 3 * LEASE_MS, 'replica-b to take the lease');
    await addNamespace('ns-4', ['vault']);
    await eventually(() => converged(admin, expected), 30_000, 'replica-b to converge ns-4');
    // Work that replica-a will see the moment it resumes: a Service nobody has issued for yet.
    await addNamespace('ns-5', ['late']);
    a.signal('SIGCONT');
    const lost = await a.waitForLog((l) => l.msg.startsWith('lost leader lease'), 10_000, 'replica-a to notice');
    expect(String(lost.reason)).toMatch(/^not renewed for \d+ms, more than renewDeadline 3000ms/);
    await eventually(() => converged(admin, expected), 30_000, 'replica-b to converge ns-5');
    await new Promise((r) => setTimeout(r, 2 * RETRY_MS + 1000)); // let replica-a's resumed loops run
    const late = writesBy(plane, 'replica-a').filter((e) => Date.parse(e.requestReceivedTimestamp) >= stoppedAt);
    expect(late.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
    expect(writesBy(plane, 'replica-a')).toHaveLength(writesBefore);
    expect(writesBy(plane, 'replica-b', ['secrets']).length).toBeGreaterThanOrEqual(2); // ns-4 and ns-5
    expect(a.alive).toBe(true);
    expect(await leaseHolder(admin)).toBe('replica-b');
  }, 90_000);

  it('a SIGKILLed leader is replaced within leaseDuration plus two retry periods, and the new leader converges', async () => {
    const b = replicas.get('replica-b')!;
    expect(await leaseHolder(admin)).toBe('replica-b');
    const killedAt = Date.now();
    b.signal('SIGKILL');
    while ((await leaseHolder(admin)) !== 'replica-a') {
      if (Date.now() - killedAt > 4 * LEASE_MS) throw new Error('replica-a never took over');
      await new Promise((r) => setTimeout(r, 50));
    }
    // Timed by the Lease's own acquireTime (written by replica-a as it took over, same clock), not
    // by this test's polling, which a loaded machine delays by seconds.
    const lease = await admin.makeApiClient(CoordinationV1Api).readNamespacedLease({ name: 'eso-mtls-controller', namespace: ESO_NS });
    const handoverMs = new Date(lease.spec!.acquireTime!).getTime() - killedAt;
    // 4000 + 2 x 500 ms, plus replica-a's request latency.
    expect(handoverMs).toBeLessThan(LEASE_MS + 2 * RETRY_MS + 300);
    process.stdout.write(`handover after SIGKILL: ${Math.round(handoverMs)} ms (bound ${LEASE_MS + 2 * RETRY_MS} ms)\n`);
    await createProviderService(admin, 'ns-1', 'after-kill');
    expected.set('ns-1', ['vault', 'after-kill']);
    await eventually(() => converged(admin, expected), 30_000, 'replica-a to converge after the handover');
  }, 60_000);
});
