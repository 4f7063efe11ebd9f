import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { type AuditEvent, type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { CLIENT_SECRET, ESO_NS, PROVIDER_SECRET, SA_USER, converged, createProviderNamespace, leaseHolder } from '@eso-mtls/test-kit/cluster';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { ControllerProcess, timedGet } from '@eso-mtls/test-kit/controller-process';
import { applyAll, kustomizeInstall, serviceAccountKubeConfig } from '@eso-mtls/test-kit/manifests';

// Issue 23 item 10: two controllers of one installation with different policies. Two real
// `eso-mtls controller` processes (the shipped entry point) against a real apiserver with the
// shipped manifests, both as the shipped ServiceAccount. Scale: 3 provider namespaces of one
// Service each, so 5 Secrets (CA, ESO client, 3 provider Secrets); a reconcile interval of 5 s,
// watched for 3 intervals.
//
// The bound (docs/controller.md#two-controllers): a controller without leader election writes
// nothing while a leader holds the Lease; without a Lease between them, each contested Secret is
// written at most twice per reconcile interval (once by each), plus the first write of each.
// Before the fix each re-issued the other's certificates without end: 306 and 265 writes in 30 s
// (3 intervals of 10 s, measured on a loaded 2-core machine). The bound counts in intervals, so
// the window is 3 of them at any interval; 5 s keeps the suite short (issue 24's test budget).
const NAMESPACES = ['fight-1', 'fight-2', 'fight-3'];
const INTERVAL_S = 5;
const WINDOW_MS = 3 * INTERVAL_S * 1000;
const FAST_LEASE = ['--leader-election-lease-duration=4s', '--leader-election-renew-deadline=3s', '--leader-election-retry-period=500ms'];
const COMMON = ['--health-probe-bind-address=127.0.0.1:0', '--metrics-bind-address=127.0.0.1:0', `--reconcile-interval=${INTERVAL_S}s`, ...FAST_LEASE];
const expected = new Map(NAMESPACES.map((ns) => [ns, ['provider']]));

describe('two controllers of one installation with different policies', () => {
  let plane: ControlPlane;
  let admin: KubeConfig;
  let core: CoreV1Api;
  let saKubeconfig: string;
  const processes: ControllerProcess[] = [];
  const start = (identity: string, args: string[]): ControllerProcess => {
    const p = new ControllerProcess(identity, ['--kubeconfig', saKubeconfig, `--leader-election-identity=${identity}`, ...COMMON, ...args]);
    processes.push(p);
    return p;
  };

  beforeAll(async () => {
    plane = await startControlPlane({ audit: true });
    admin = plane.adminKubeConfig;
    core = admin.makeApiClient(CoreV1Api);
    await applyAll(admin, kustomizeInstall('deploy'));
    const { kc } = await serviceAccountKubeConfig(admin, plane.url, plane.caPem, ESO_NS, 'eso-mtls-controller');
    saKubeconfig = join(plane.dir, 'kubeconfig-sa.yaml');
    writeFileSync(saKubeconfig, kc.exportConfig(), { mode: 0o600 });
    for (const ns of NAMESPACES) await createProviderNamespace(admin, ns, ['provider']);
  }, 120_000);
  afterEach(async () => {
    await Promise.all(processes.splice(0).map((p) => p.kill()));
  });
  afterAll(async () => {
    await plane?.stop();
  });

  /** Successful Secret writes (create, update) by the controllers' ServiceAccount received in [from, to). */
  const secretWrites = (from: number, to: number): AuditEvent[] =>
    plane.auditEvents().filter((e) => {
      const at = Date.parse(e.requestReceivedTimestamp);
      const code = e.responseStatus?.code ?? 0;
      return e.user.username === SA_USER && e.objectRef?.resource === 'secrets' && ['create', 'update'].includes(e.verb) && code < 300 && at >= from && at < to;
    });
  const secretOf = (ns: string): Promise<V1Secret> => core.readNamespacedSecret({ name: PROVIDER_SECRET, namespace: ns });
  const domainOf = async (ns: string): Promise<string | undefined> => {
    const pem = Buffer.from((await secretOf(ns)).data!['tls.crt']!, 'base64');
    return /provider\.[^.]+\.svc\.([a-z.]+)/.exec(new X509Certificate(pem).subjectAltName ?? '')?.[1];
  };
  const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

  it('a controller without leader election writes nothing while a leader holds the Lease, and writes once it is released', async () => {
    const a = start('controller-a', ['--leader-elect']);
    await eventually(() => converged(admin, expected), 60_000, 'controller A to issue every certificate');
    expect(await leaseHolder(admin)).toBe('controller-a');
    // Every Secret names its writer and the fingerprint of its issuing policy.
    const stamped = await secretOf('fight-1');
    expect(stamped.metadata!.annotations!['eso-mtls.io/written-by']).toBe('controller-a');
    expect(stamped.metadata!.annotations!['eso-mtls.io/policy']).toMatch(/^[0-9a-f]{12}$/);
    const policyA = stamped.metadata!.annotations!['eso-mtls.io/policy'];

    // A Secret as an earlier release wrote it (no writer annotations) is still ours: rotated as usual, and stamped.
    await core.patchNamespacedSecret({
      name: PROVIDER_SECRET,
      namespace: 'fight-2',
      body: [
        { op: 'remove', path: '/metadata/annotations/eso-mtls.io~1written-by' },
        { op: 'remove', path: '/metadata/annotations/eso-mtls.io~1policy' },
      ],
    });
    await core.patchNamespacedService({
      name: 'provider',
      namespace: 'fight-2',
      body: [{ op: 'add', path: '/metadata/annotations', value: { 'eso-mtls.io/rotate': 'older-release' } }],
    });
    await eventually(
      async () => (await secretOf('fight-2')).metadata?.annotations?.['eso-mtls.io/written-by'] === 'controller-a',
      30_000,
      'the older Secret to be rotated and stamped',
    );
    await a.waitForLog((l) => l.msg.startsWith('certificate issued') && l.namespace === 'fight-2' && l.reason === 'forced', 10_000, 'the forced rotation');

    const b = start('controller-b', ['--cluster-domain=other.local']);
    await b.waitForLog((l) => l.msg === 'caches synced', 60_000, "B's caches to sync");
    const from = Date.now();
    await sleep(WINDOW_MS);
    const writes = secretWrites(from, Date.now());
    // The bound while A leads: B writes nothing at all, and A has nothing to write.
    expect(writes.map((e) => `${e.verb} ${e.objectRef?.namespace}/${e.objectRef?.name}`)).toEqual([]);
    for (const ns of NAMESPACES) expect(await domainOf(ns)).toBe('cluster.local');
    expect(b.lines.some((l) => l.msg.startsWith('another controller holds the leader election Lease') && l.holder === 'controller-a')).toBe(true);
    // Only the writer exports gauges: B, yielding, exports none.
    const { metrics } = await b.endpoints();
    expect((await timedGet(metrics)).body).not.toContain('eso_provider_certificate_expiry_seconds{');
    expect(a.lines.some((l) => l.msg.startsWith('another controller replaced'))).toBe(false);

    // A leaves and releases its Lease: B writes, under its own policy, within a few retry periods.
    a.signal('SIGTERM');
    expect(await a.exited).toEqual({ code: 0, signal: null });
    await eventually(async () => (await Promise.all(NAMESPACES.map(domainOf))).every((d) => d === 'other.local'), 30_000, 'B to re-issue under its policy');
    const taken = await secretOf('fight-1');
    expect(taken.metadata!.annotations!['eso-mtls.io/written-by']).toBe('controller-b');
    expect(taken.metadata!.annotations!['eso-mtls.io/policy']).toMatch(/^[0-9a-f]{12}$/);
    expect(taken.metadata!.annotations!['eso-mtls.io/policy']).not.toBe(policyA);
  }, 240_000);

  it('two controllers without leader election fight at a bounded rate, and the one that finds its write replaced reports it', async () => {
    const a = start('controller-a', []);
    const b = start('controller-b', ['--cluster-domain=other.local']);
    await Promise.all([a, b].map((p) => p.waitForLog((l) => l.msg === 'caches synced', 60_000, 'caches to sync')));
    const from = Date.now();
    await sleep(WINDOW_MS);
    const writes = secretWrites(from, Date.now());
    // Contested: the 3 provider Secrets and the ESO client's (its SPIFFE ID names the cluster
    // domain); the CA is not. Each at most twice per interval, plus one more each for the first.
    const contested = NAMESPACES.length + 1;
    const bound = contested * 2 * (Math.ceil(WINDOW_MS / (INTERVAL_S * 1000)) + 1);
    // 32 writes in 3 intervals at this scale.
    process.stdout.write(`two controllers without leader election: ${writes.length} Secret writes in ${WINDOW_MS / 1000} s (bound ${bound})\n`);
    expect(writes.length).toBeLessThanOrEqual(bound);

    // The conflict is reported: a Warning Event WriteConflict on a Secret, and the counter.
    let events: { namespace: string; message: string }[] = [];
    await eventually(
      async () => {
        events = (await core.listEventForAllNamespaces({ fieldSelector: 'reason=WriteConflict' })).items.map((e) => ({
          namespace: e.involvedObject.namespace ?? '',
          message: e.message ?? '',
        }));
        return events.length > 0;
      },
      15_000,
      'a WriteConflict Event',
    );
    expect(events.every((e) => /replaced within \d+s by controller-[ab] \(policy [0-9a-f]{12}, a different one\)/.test(e.message))).toBe(true);
    const scraped = await Promise.all([a, b].map(async (p) => (await timedGet((await p.endpoints()).metrics)).body));
    const conflicts = scraped
      .flatMap((body) => [...body.matchAll(/^eso_secret_write_conflicts_total\{component="([a-z-]+)"\} (\d+)/gm)])
      .reduce((sum, m) => sum + Number(m[2]), 0);
    expect(conflicts).toBeGreaterThanOrEqual(1);
    const named = new Set(events.map((e) => e.namespace));
    expect([...named].every((ns) => NAMESPACES.includes(ns) || ns === ESO_NS)).toBe(true);
    expect(
      [a, b].some((p) =>
        p.lines.some(
          (l) =>
            l.msg.startsWith('another controller replaced a Secret') &&
            (l.secret === `${ESO_NS}/${CLIENT_SECRET}` || String(l.secret).endsWith(PROVIDER_SECRET)),
        ),
      ),
    ).toBe(true);
  }, 240_000);
});
