import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig, type V1Deployment } from '@kubernetes/client-node';
import { KubeRestClient, connectionFromKubeConfig } from '@eso-mtls/kubernetes';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { LeaderElector, LeaseLock } from '../src/index.js';
import { ESO_NS, SA_USER, bindShippedRoles, converged, createProviderNamespace, leaseHolder, privateKeyForms, writesBy } from '@eso-mtls/test-kit/cluster';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { ControllerProcess, timedGet } from '@eso-mtls/test-kit/controller-process';
import { applyAll, find, kustomizeBuild, kustomizeInstall, serviceAccountKubeConfig } from '@eso-mtls/test-kit/manifests';

// `eso-mtls controller` as a real child process against a real apiserver with the shipped
// manifests applied, authenticated with a real token of the shipped ServiceAccount.
const FAST_LEASE = ['--leader-election-lease-duration=4s', '--leader-election-renew-deadline=3s', '--leader-election-retry-period=500ms'];
const LOCAL = ['--health-probe-bind-address=127.0.0.1:0', '--metrics-bind-address=127.0.0.1:0'];

describe('eso-mtls controller process', () => {
  let plane: ControlPlane;
  let admin: KubeConfig;
  let saKubeconfig: string;
  const processes: ControllerProcess[] = [];
  const start = (name: string, args: string[]): ControllerProcess => {
    const p = new ControllerProcess(name, args);
    processes.push(p);
    return p;
  };

  beforeAll(async () => {
    plane = await startControlPlane({ audit: true, identities: [{ name: 'no-secret-rights' }, { name: 'no-rights-at-all' }] });
    admin = plane.adminKubeConfig;
    await applyAll(admin, kustomizeInstall('deploy'));
    const { kc } = await serviceAccountKubeConfig(admin, plane.url, plane.caPem, ESO_NS, 'eso-mtls-controller');
    saKubeconfig = join(plane.dir, 'kubeconfig-sa.yaml');
    writeFileSync(saKubeconfig, kc.exportConfig(), { mode: 0o600 });
  }, 120_000);
  afterEach(async () => {
    await Promise.all(processes.splice(0).map((p) => p.kill()));
  });
  afterAll(async () => {
    await plane?.stop();
  });

  it('converges several namespaces as the shipped ServiceAccount with zero 403s, logs no key, and shuts down cleanly on SIGTERM', async () => {
    const expected = new Map([
      ['team-1', ['vault']],
      ['team-2', ['aws', 'gcp']],
      ['team-3', ['files']],
      ['team-4', ['db']],
    ]);
    for (const [ns, services] of expected) await createProviderNamespace(admin, ns, services);
    const example = kustomizeBuild('deploy/examples/file-provider');
    await applyAll(admin, example);
    expected.set('provider-file', ['file-provider']);
    const controller = start('controller', ['--kubeconfig', saKubeconfig, '--leader-elect', ...FAST_LEASE, ...LOCAL, '--log-level=debug']);
    const { probes, metrics } = await controller.endpoints();
    await eventually(() => converged(admin, expected), 60_000, 'every namespace to hold a valid certificate');
    expect((await timedGet(`${probes}/readyz`)).status).toBe(200);
    expect((await timedGet(`${probes}/healthz`)).status).toBe(200);

    // The leader exports one expiry series per Service, and one initial rotation each.
    // The gauges follow each write as it lands; the scrape may still race the last write's watch event.
    let scrape = '';
    await eventually(
      async () => {
        scrape = (await timedGet(metrics)).body;
        return [...expected].every(([ns, services]) =>
          services.every((s) => scrape.includes(`eso_provider_certificate_expiry_seconds{namespace="${ns}",service="${s}"}`)),
        );
      },
      10_000,
      'an expiry series for every Service',
    );
    for (const [ns, services] of expected) {
      for (const s of services) {
        expect(scrape).toMatch(new RegExp(`eso_provider_certificate_expiry_seconds\\{namespace="${ns}",service="${s}"\\} \\d+`));
        expect(scrape).toContain(`eso_provider_certificate_rotation_total{namespace="${ns}",service="${s}",reason="initial"} 1`);
      }
    }
    expect(scrape).toMatch(/eso_client_certificate_expiry_seconds \d+/);
    expect(scrape).toMatch(/eso_ca_certificate_expiry_seconds\{state="active"\} \d+/);

    await exampleProviderServes(admin, example);

    // A forced rotation of team-2 adds exactly one to each of its two Services, and the gauge follows the new certificate.
    const core = admin.makeApiClient(CoreV1Api);
    const notAfterOf = async (): Promise<number> => {
      const s = await core.readNamespacedSecret({ name: 'external-secrets-provider-tls', namespace: 'team-2' });
      return Date.parse(new X509Certificate(Buffer.from(s.data!['tls.crt']!, 'base64')).validTo);
    };
    const before = await notAfterOf();
    await new Promise((r) => setTimeout(r, 3100)); // notAfter has whole-second precision: make the new one differ by >= 3 s
    await core.patchNamespacedService({
      name: 'aws',
      namespace: 'team-2',
      body: [{ op: 'add', path: '/metadata/annotations', value: { 'eso-mtls.io/rotate': 'now' } }],
    });
    await eventually(async () => (await notAfterOf()) > before, 20_000, 'the forced rotation of team-2');
    const rotated = await notAfterOf();
    expect(rotated - before).toBeGreaterThanOrEqual(3000);
    const gaugeOf = (body: string, s: string): number =>
      Number(new RegExp(`eso_provider_certificate_expiry_seconds\\{namespace="team-2",service="${s}"\\} (\\d+(?:\\.\\d+)?)`).exec(body)?.[1]);
    let after = '';
    // The gauge is computed at scrape time from the controller's view: it must follow the new notAfter.
    await eventually(
      async () => {
        after = (await timedGet(metrics)).body;
        return ['aws', 'gcp'].every((s) => Math.abs(gaugeOf(after, s) - (rotated - Date.now()) / 1000) < 1.5);
      },
      10_000,
      'the expiry gauge to follow the re-issued certificate',
    );
    for (const s of ['aws', 'gcp']) {
      expect(after).toContain(`eso_provider_certificate_rotation_total{namespace="team-2",service="${s}",reason="forced"} 1`);
      expect(after).toContain(`eso_provider_certificate_rotation_total{namespace="team-2",service="${s}",reason="initial"} 1`);
    }
    expect(after).not.toContain('namespace="team-1",service="vault",reason="forced"');

    controller.signal('SIGTERM');
    expect(await controller.exited).toEqual({ code: 0, signal: null });
    expect(await leaseHolder(admin)).toBe('');

    const ours = plane.auditEvents().filter((e) => e.user.username === SA_USER);
    expect(writesBy(plane, SA_USER, ['secrets']).length).toBeGreaterThanOrEqual(2 + expected.size);
    expect(ours.filter((e) => e.responseStatus?.code === 403).map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);

    // No key material in any form, at debug level, anywhere in the output.
    const output = controller.stdout + controller.stderr;
    expect(output).not.toContain('PRIVATE KEY');
    const forms = await privateKeyForms(admin);
    expect(forms.length).toBeGreaterThanOrEqual(3 * (2 + expected.size));
    for (const form of forms) expect(output.includes(form)).toBe(false);
    // Every rotation is one line per namespace with namespace, how many Services and which, reason and the new notAfter.
    const issuedLines = controller.lines.filter((l) => l.msg.startsWith('certificate issued') && String(l.target).startsWith('namespace/'));
    expect(issuedLines.length).toBeGreaterThanOrEqual(expected.size);
    for (const l of issuedLines) {
      expect([typeof l.namespace, typeof l.services, Array.isArray(l.sample), typeof l.reason, Number.isNaN(Date.parse(String(l.notAfter)))]).toEqual([
        'string',
        'number',
        true,
        'string',
        false,
      ]);
    }
    // team-2 has two Services under one certificate: its first issuance is one line naming both.
    expect(issuedLines.filter((l) => l.namespace === 'team-2' && l.reason === 'initial').map((l) => [l.services, l.sample])).toEqual([[2, ['aws', 'gcp']]]);
  }, 120_000);

  it('on SIGTERM in the middle of an RSA-3072 round, finishes the writes in flight, sends no more, releases the lease and exits 0', async () => {
    const namespaces = Array.from({ length: 12 }, (_, i) => `sigterm-${i + 1}`);
    for (const ns of namespaces) await createProviderNamespace(admin, ns, ['provider']);
    const controller = start('sigterm', ['--kubeconfig', saKubeconfig, '--leader-elect', ...FAST_LEASE, ...LOCAL, '--key-algorithm=RSA-3072']);
    await controller.waitForLog(
      (l) => l.msg.startsWith('certificate issued') && String(l.target).startsWith('namespace/sigterm-'),
      60_000,
      'the first issuance',
    );
    const termAt = Date.now();
    controller.signal('SIGTERM');
    expect(await controller.exited).toEqual({ code: 0, signal: null });
    const exitedAt = Date.now();
    expect(exitedAt - termAt).toBeLessThan(25_000); // inside the Deployment's 30 s grace period
    expect(controller.lines.at(-1)?.msg).toBe('stopped');
    expect(await leaseHolder(admin)).toBe('');

    const issued = controller.lines.filter((l) => l.msg.startsWith('certificate issued') && String(l.target).startsWith('namespace/sigterm-'));
    expect(issued.length).toBeLessThan(namespaces.length); // it really was stopped mid-round
    const core = admin.makeApiClient(CoreV1Api);
    const stored = (await core.listSecretForAllNamespaces({ fieldSelector: 'metadata.name=external-secrets-provider-tls' })).items.filter((s) =>
      s.metadata!.namespace!.startsWith('sigterm-'),
    );
    // Every write sent was finished and logged; none was cut off or sent unlogged.
    expect(stored.map((s) => s.metadata!.namespace).sort()).toEqual(issued.map((l) => String(l.target).slice('namespace/'.length)).sort());
    const writes = writesBy(plane, SA_USER, ['secrets']).filter((e) => e.objectRef?.namespace?.startsWith('sigterm-'));
    expect(writes).toHaveLength(issued.length);
    expect(writes.every((e) => e.responseStatus?.code === 201 || e.responseStatus?.code === 200)).toBe(true);
    expect(writes.filter((e) => Date.parse(e.requestReceivedTimestamp) > exitedAt)).toEqual([]);
  }, 120_000);

  it('is ready only once the lease is known: held by another replica, it waits and writes nothing; released, it takes over', async () => {
    await createProviderNamespace(admin, 'team-5', ['vault']);
    // Another replica of the same workload: the CLI's default identity form on this host, as the follower's.
    const otherIdentity = `${hostname()}_${randomUUID()}`;
    const other = new LeaderElector({
      lock: new LeaseLock(new KubeRestClient(await connectionFromKubeConfig(admin)), ESO_NS, 'eso-mtls-controller'),
      identity: otherIdentity,
      timings: { leaseDuration: 4000, renewDeadline: 3000, retryPeriod: 500 },
    });
    other.start();
    await eventually(() => other.writesAllowed(), 10_000, 'the other replica to lead');
    const before = writesBy(plane, SA_USER).length;
    const controller = start('follower', ['--kubeconfig', saKubeconfig, '--leader-elect', ...FAST_LEASE, ...LOCAL]);
    const { probes, metrics } = await controller.endpoints();
    await eventually(async () => (await timedGet(`${probes}/readyz`)).status === 200, 20_000, 'readiness as a follower');
    await new Promise((r) => setTimeout(r, 2000));
    expect(writesBy(plane, SA_USER).length).toBe(before);
    expect((await timedGet(metrics)).body).not.toContain('eso_provider_certificate_expiry_seconds{');
    await other.stopAndRelease();
    await eventually(() => converged(admin, new Map([['team-5', ['vault']]])), 20_000, 'the follower to take over and converge team-5');
    expect(await leaseHolder(admin)).not.toBe(otherIdentity);
    await eventually(
      async () => (await timedGet(metrics)).body.includes('eso_provider_certificate_expiry_seconds{namespace="team-5",service="vault"}'),
      10_000,
      'the new leader to export the gauges',
    );
  }, 180_000);

  it('stays unready while its caches cannot sync, stays live, and becomes ready once it may read', async () => {
    const kubeconfig = plane.identity('no-secret-rights').kubeconfigPath;
    const controller = start('unauthorised', ['--kubeconfig', kubeconfig, ...LOCAL]);
    const { probes } = await controller.endpoints();
    await new Promise((r) => setTimeout(r, 2000));
    const ready = await timedGet(`${probes}/readyz`);
    expect(ready.status).toBe(500);
    expect(ready.body).toContain('[-]informers failed: caches not synced yet');
    expect((await timedGet(`${probes}/healthz`)).status).toBe(200);
    await bindShippedRoles(admin, 'no-secret-rights');
    await eventually(async () => (await timedGet(`${probes}/readyz`)).status === 200, 30_000, 'readiness after the grant');
  }, 180_000);

  it('exits 0 on SIGTERM while its caches cannot sync, without ever campaigning for the Lease', async () => {
    const controller = start('never-synced', ['--kubeconfig', plane.identity('no-rights-at-all').kubeconfigPath, '--leader-elect', ...FAST_LEASE, ...LOCAL]);
    const { probes } = await controller.endpoints();
    await new Promise((r) => setTimeout(r, 1500));
    expect((await timedGet(`${probes}/readyz`)).status).toBe(500);
    const termAt = Date.now();
    controller.signal('SIGTERM');
    expect(await controller.exited).toEqual({ code: 0, signal: null });
    expect(Date.now() - termAt).toBeLessThan(25_000); // inside the Deployment's 30 s grace period
    expect(controller.lines.at(-1)?.msg).toBe('stopped');
    expect(plane.auditEvents().filter((e) => e.user.username === 'no-rights-at-all' && e.objectRef?.resource === 'leases')).toEqual([]);
  }, 180_000);

  // Three processes that each load the controller's sources: about 5 s apiece at load 20 on two
  // cores, so they start together, and the limit only catches a process that never exits.
  it('rejects a bad flag with exit code 2 and a message naming the flag, its variable and what it accepts', async () => {
    const controller = start('bad-flag', ['--key-algorithm=DSA']);
    const fromEnv = new ControllerProcess('bad-env', [], { ESO_MTLS_RECONCILE_INTERVAL: 'soon' });
    processes.push(fromEnv);
    const outside = start('no-cluster', []);
    expect(await controller.exited).toEqual({ code: 2, signal: null });
    expect(controller.stderr).toBe(
      'eso-mtls controller: invalid value "DSA" for --key-algorithm (env ESO_MTLS_KEY_ALGORITHM): accepts ECDSA-P256, RSA-2048 or RSA-3072\n',
    );
    expect((await fromEnv.exited).code).toBe(2);
    expect(fromEnv.stderr).toContain('invalid value "soon" for ESO_MTLS_RECONCILE_INTERVAL (flag --reconcile-interval)');
    expect((await outside.exited).code).toBe(1);
    expect(outside.stdout).toContain('not running in a cluster (KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT unset): pass --kubeconfig');
  }, 120_000);
});

/**
 * Runs the example provider as its manifest configures it (args and env through its own parser),
 * with the Secret the controller wrote laid out as the kubelet would mount it, and checks that the
 * manifest's probe paths answer 200 on the real server: ready means it loaded the certificate.
 */
async function exampleProviderServes(admin: KubeConfig, example: Parameters<typeof find>[0]): Promise<void> {
  const { parseFileProviderConfig } = await import('../../../examples/file-provider/src/config.js');
  const { runFileProvider } = await import('../../../examples/file-provider/src/main.js');
  const deployment = find<V1Deployment>(example, 'Deployment', 'file-provider');
  const container = deployment.spec!.template.spec!.containers[0]!;
  const secret = await admin.makeApiClient(CoreV1Api).readNamespacedSecret({ name: 'external-secrets-provider-tls', namespace: 'provider-file' });
  const dir = mkdtempSync(join(tmpdir(), 'eso-mtls-provider-'));
  try {
    for (const [key, value] of Object.entries(secret.data!)) writeFileSync(join(dir, key), Buffer.from(value, 'base64'));
    const env = { POD_NAMESPACE: 'provider-file', PROVIDER_SERVICE_NAME: 'file-provider' };
    const fromManifest = parseFileProviderConfig(container.args ?? [], env);
    // Only where it listens and where the files are differ from the pod: loopback, free ports, a temp dir.
    const running = await runFileProvider({ ...fromManifest, certDir: dir, dataFile: join(dir, 'secrets.yaml'), host: '127.0.0.1', port: 0, healthPort: 0 });
    try {
      for (const probe of [container.livenessProbe!, container.readinessProbe!]) {
        const r = await timedGet(`http://127.0.0.1:${running.server.healthPort}${probe.httpGet!.path}`);
        expect({ path: probe.httpGet!.path, status: r.status }).toEqual({ path: probe.httpGet!.path, status: 200 });
      }
    } finally {
      await running.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
