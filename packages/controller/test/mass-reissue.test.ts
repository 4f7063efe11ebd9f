import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:http';
import { CoordinationV1Api, CoreV1Api, type KubeConfig, type V1Deployment } from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { ESO_NS, PROVIDER_SECRET, converged, createProviderNamespace, writesBy } from '@eso-mtls/test-kit/cluster';
import { ControllerProcess } from '@eso-mtls/test-kit/controller-process';
import { KubeletProbe, type ProbeVerdict, judge } from './support/kubelet-probe.js';
import { applyAll, find, kustomizeInstall, serviceAccountKubeConfig } from '@eso-mtls/test-kit/manifests';

/** The controller's user, as the apiserver's audit log names it. */
const CONTROLLER_USER = `system:serviceaccount:${ESO_NS}:eso-mtls-controller`;

// RSA-3072 key generation for many namespaces at once must not starve the event loop: the Lease
// is renewed within its deadline throughout, and the kubelet, probing /healthz as the shipped
// livenessProbe says, never sees failureThreshold misses in a row. Those are the real deadlines;
// how fast /healthz answers is printed, not asserted (the machine may be loaded).
const NAMESPACES = 30;
const RENEW_DEADLINE_MS = 3000;
const manifests = kustomizeInstall('deploy');
const livenessProbe = find<V1Deployment>(manifests, 'Deployment', 'eso-mtls-controller').spec!.template.spec!.containers.find(
  (c) => c.name === 'controller',
)!.livenessProbe!;

describe('the kubelet model of the liveness probe', () => {
  it('counts misses per kubelet, in start order, and fails only at failureThreshold in a row', () => {
    const r = (phase: number, seq: number, ok: boolean) => ({ phase, seq, ms: ok ? 5 : 1500, status: 200, ok });
    // Phase 0 misses twice, recovers, misses twice; phase 1 misses three times but reported out of order.
    const verdict = judge([r(0, 1, false), r(0, 2, false), r(0, 3, true), r(0, 4, false), r(0, 5, false), r(1, 3, false), r(1, 1, false), r(1, 2, false)], 3);
    expect(verdict).toEqual({ maxConsecutiveMisses: 3, failureThreshold: 3, probes: 8, misses: 7, worstMs: 1500 });
    expect(judge([r(0, 1, false), r(1, 1, false), r(0, 2, true), r(1, 2, false)], 3).maxConsecutiveMisses).toBe(2);
  });

  it('sees a server whose answers stall past the timeout for longer than failureThreshold periods', async () => {
    let stalledUntil = 0;
    const server = createServer((_, res) => {
      setTimeout(() => res.end('ok'), Math.max(0, stalledUntil - Date.now()));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as { port: number };
      const kubelet = new KubeletProbe(`http://127.0.0.1:${port}/healthz`, { periodSeconds: 1, timeoutSeconds: 1, failureThreshold: 3 }, 2);
      await new Promise((r) => setTimeout(r, 1500));
      stalledUntil = Date.now() + 4500;
      await new Promise((r) => setTimeout(r, 6000));
      const verdict = await kubelet.stop();
      expect(verdict.maxConsecutiveMisses).toBeGreaterThanOrEqual(3);
      expect(verdict.worstMs).toBeGreaterThan(1000);
    } finally {
      server.close();
    }
  }, 30_000);
});

describe('lease renewals and /healthz during a mass issuance with RSA-3072 keys', () => {
  let plane: ControlPlane;
  let admin: KubeConfig;
  let controller: ControllerProcess | undefined;

  beforeAll(async () => {
    plane = await startControlPlane({ audit: true });
    admin = plane.adminKubeConfig;
    await applyAll(admin, manifests);
  }, 120_000);
  afterAll(async () => {
    await controller?.kill();
    await plane?.stop();
  });

  it(`issues ${NAMESPACES} RSA-3072 certificates without missing a renewal or a health check`, async () => {
    const expected = new Map<string, string[]>();
    for (let i = 1; i <= NAMESPACES; i++) {
      await createProviderNamespace(admin, `rsa-${i}`, ['provider']);
      expected.set(`rsa-${i}`, ['provider']);
    }
    const { kc } = await serviceAccountKubeConfig(admin, plane.url, plane.caPem, ESO_NS, 'eso-mtls-controller');
    const kubeconfig = join(plane.dir, 'kubeconfig-rsa.yaml');
    writeFileSync(kubeconfig, kc.exportConfig(), { mode: 0o600 });
    controller = new ControllerProcess('rsa', [
      '--kubeconfig',
      kubeconfig,
      '--key-algorithm=RSA-3072',
      '--leader-elect',
      '--leader-election-lease-duration=4s',
      `--leader-election-renew-deadline=${RENEW_DEADLINE_MS}ms`,
      '--leader-election-retry-period=500ms',
      '--leader-election-identity=rsa-replica',
      '--health-probe-bind-address=127.0.0.1:0',
      '--metrics-bind-address=127.0.0.1:0',
    ]);
    const { probes } = await controller.endpoints();
    await controller.waitForLog((l) => l.msg === 'acquired leader lease', 30_000, 'the lease');

    // Watch from outside while it works: the kubelet's view of /healthz, and every renewTime the Lease shows.
    // 100 kubelets a tenth of a second apart: a stall anywhere in the run meets some kubelet's probes.
    const kubelet = new KubeletProbe(`${probes}/healthz`, livenessProbe, 100);
    const coordination = admin.makeApiClient(CoordinationV1Api);
    const renewals: number[] = [];
    let done = false;
    const leaseLoop = (async () => {
      while (!done) {
        const lease = await coordination.readNamespacedLease({ name: 'eso-mtls-controller', namespace: ESO_NS });
        expect(lease.spec!.holderIdentity).toBe('rsa-replica');
        const t = Date.parse(String(lease.spec!.renewTime));
        if (renewals.at(-1) !== t) renewals.push(t);
        await new Promise((res) => setTimeout(res, 200));
      }
    })();

    const started = Date.now();
    let tookMs: number;
    let health: ProbeVerdict;
    try {
      while (!(await converged(admin, expected))) {
        if (Date.now() - started > 240_000) throw new Error('no convergence within 240 s');
        await new Promise((res) => setTimeout(res, 500));
      }
      tookMs = Date.now() - started;
    } finally {
      done = true;
      health = await kubelet.stop();
      await leaseLoop;
    }

    const secrets = (await admin.makeApiClient(CoreV1Api).listSecretForAllNamespaces({ fieldSelector: `metadata.name=${PROVIDER_SECRET}` })).items;
    expect(secrets).toHaveLength(NAMESPACES);
    for (const s of secrets) {
      const leaf = new X509Certificate(Buffer.from(s.data!['tls.crt']!, 'base64'));
      expect(leaf.publicKey.asymmetricKeyDetails?.modulusLength).toBe(3072);
    }
    // The gaps between the controller's Lease updates as the apiserver received them (its audit
    // log), not as this test's polling saw them: a starved poll would merge two renewals into one gap.
    const renewedAt = writesBy(plane, CONTROLLER_USER, ['leases'])
      .filter((e) => e.verb === 'update' && Date.parse(e.requestReceivedTimestamp) >= started)
      .map((e) => Date.parse(e.requestReceivedTimestamp));
    const gaps = renewedAt.slice(1).map((t, i) => t - renewedAt[i]!);
    const maxGap = Math.max(...gaps);
    process.stdout.write(
      `RSA-3072 x ${NAMESPACES + 2} keys: converged in ${tookMs} ms; ${renewedAt.length} renewals received, max gap ${maxGap} ms; ` +
        `${health.probes} /healthz probes (${JSON.stringify(livenessProbe)}), ${health.misses} missed, ` +
        `at most ${health.maxConsecutiveMisses} in a row, worst ${health.worstMs} ms\n`,
    );
    expect(renewedAt.length).toBeGreaterThanOrEqual(Math.floor(tookMs / RENEW_DEADLINE_MS));
    expect(maxGap).toBeLessThan(RENEW_DEADLINE_MS);
    expect(health.probes).toBeGreaterThan(0);
    expect(health.maxConsecutiveMisses).toBeLessThan(health.failureThreshold);
    expect(controller.lines.filter((l) => l.msg.startsWith('lost leader lease'))).toEqual([]);
    expect(controller.lines.filter((l) => l.msg === 'acquired leader lease')).toHaveLength(1);
  }, 300_000);
});
