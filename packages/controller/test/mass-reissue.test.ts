import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoordinationV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { ESO_NS, PROVIDER_SECRET, converged, createProviderNamespace } from './support/cluster.js';
import { ControllerProcess, timedGet } from './support/controller-process.js';
import { applyAll, kustomizeBuild, serviceAccountKubeConfig } from './support/manifests.js';

// RSA-3072 key generation for many namespaces at once must not starve the event loop: the Lease
// is renewed on time throughout and /healthz keeps answering quickly.
const NAMESPACES = 30;
const RENEW_DEADLINE_MS = 3000;

describe('lease renewals and /healthz during a mass issuance with RSA-3072 keys', () => {
  let plane: ControlPlane;
  let admin: KubeConfig;
  let controller: ControllerProcess | undefined;

  beforeAll(async () => {
    plane = await startControlPlane();
    admin = plane.adminKubeConfig;
    await applyAll(admin, kustomizeBuild('deploy'));
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
    controller = new ControllerProcess('rsa', ['--kubeconfig', kubeconfig, '--key-algorithm=RSA-3072', '--leader-elect',
      '--leader-election-lease-duration=4s', `--leader-election-renew-deadline=${RENEW_DEADLINE_MS}ms`, '--leader-election-retry-period=500ms',
      '--leader-election-identity=rsa-replica', '--health-probe-bind-address=127.0.0.1:0', '--metrics-bind-address=127.0.0.1:0']);
    const { probes } = await controller.endpoints();
    await controller.waitForLog((l) => l.msg === 'acquired leader lease', 30_000, 'the lease');

    // Watch from outside while it works: /healthz latency, and every renewTime the Lease shows.
    const coordination = admin.makeApiClient(CoordinationV1Api);
    const health: { status: number; ms: number }[] = [];
    const renewals: number[] = [];
    let done = false;
    const probeLoop = (async () => {
      while (!done) {
        const r = await timedGet(`${probes}/healthz`, 5000).catch(() => ({ status: 0, ms: 5000 }));
        health.push({ status: r.status, ms: r.ms });
        await new Promise((res) => setTimeout(res, 100));
      }
    })();
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
    try {
      while (!(await converged(admin, expected))) {
        if (Date.now() - started > 240_000) throw new Error('no convergence within 240 s');
        await new Promise((res) => setTimeout(res, 500));
      }
    } finally {
      done = true;
      await Promise.all([probeLoop, leaseLoop]);
    }
    const tookMs = Date.now() - started;

    const secrets = (await admin.makeApiClient(CoreV1Api).listSecretForAllNamespaces({ fieldSelector: `metadata.name=${PROVIDER_SECRET}` })).items;
    expect(secrets).toHaveLength(NAMESPACES);
    for (const s of secrets) {
      const leaf = new X509Certificate(Buffer.from(s.data!['tls.crt']!, 'base64'));
      expect(leaf.publicKey.asymmetricKeyDetails?.modulusLength).toBe(3072);
    }
    const gaps = renewals.slice(1).map((t, i) => t - renewals[i]!);
    const maxGap = Math.max(...gaps);
    const maxHealthMs = Math.max(...health.map((h) => h.ms));
    process.stdout.write(`RSA-3072 x ${NAMESPACES + 2} keys: converged in ${tookMs} ms; ${renewals.length} renewals seen, max gap ${maxGap} ms; ` +
      `${health.length} /healthz calls, max ${Math.round(maxHealthMs)} ms\n`);
    expect(renewals.length).toBeGreaterThanOrEqual(Math.floor(tookMs / 1000));
    expect(maxGap).toBeLessThan(RENEW_DEADLINE_MS);
    expect(health.every((h) => h.status === 200)).toBe(true);
    expect(maxHealthMs).toBeLessThan(1000);
    expect(controller.lines.filter((l) => l.msg.startsWith('lost leader lease'))).toEqual([]);
    expect(controller.lines.filter((l) => l.msg === 'acquired leader lease')).toHaveLength(1);
  }, 300_000);
});
