import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { TestCluster } from '@eso-mtls/test-kit/adapter';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { text } from '@eso-mtls/test-kit/secrets';
import { OperatorProcess } from './support/operator-process.js';

// The example operator, as two real processes against a real apiserver: one replica issues, the
// other waits on the Lease, and a SIGTERM hands over at once because the Lease is released.
const ESO = 'external-secrets-system';
const LEASE = 'example-operator';

let plane: ControlPlane;
let cluster: TestCluster;
let coordination: CoordinationV1Api;
let kubeconfig: string;
const replicas: OperatorProcess[] = [];

beforeAll(async () => {
  plane = await startControlPlane({ identities: [{ name: 'example-operator', groups: ['system:masters'] }] });
  cluster = new TestCluster(plane);
  coordination = plane.adminKubeConfig.makeApiClient(CoordinationV1Api);
  kubeconfig = plane.identity('example-operator').kubeconfigPath;
  await cluster.namespace(ESO);
}, 120_000);

afterAll(async () => {
  for (const r of replicas) r.kill();
  await plane?.stop();
});

function replica(name: string): OperatorProcess {
  const r = new OperatorProcess(name, { KUBECONFIG: kubeconfig, ESO_NAMESPACE: ESO });
  replicas.push(r);
  return r;
}

const lease = async () => (await coordination.readNamespacedLease({ name: LEASE, namespace: ESO })).spec!;
const scrape = async (url: string): Promise<string> => (await fetch(url)).text();

/** The provider Secret of `namespace` once it holds a leaf signed by the stored CA naming `<service>.<namespace>.svc`. */
async function issuedFor(namespace: string, service: string): Promise<X509Certificate> {
  return eventually(async () => {
    const ca = new X509Certificate(text(await cluster.secret(ESO, 'eso-provider-ca-internal'), 'ca.crt'));
    const leaf = new X509Certificate(text(await cluster.secret(namespace), 'tls.crt'));
    expect(leaf.verify(ca.publicKey)).toBe(true);
    expect(leaf.subjectAltName?.split(', ')).toContain(`DNS:${service}.${namespace}.svc`);
    return leaf;
  }, 60_000);
}

describe('examples/embed-in-operator on a real apiserver', () => {
  let a: OperatorProcess;
  let b: OperatorProcess;

  it('issues the provider Secret for a labelled Service, holds the Lease, and serves the certificate metrics beside its own', async () => {
    await cluster.namespace('team-a');
    await cluster.labelledService('team-a', 'vault');
    a = replica('replica-a');
    const running = await a.log('example operator running');
    await a.log('acquired leader lease', { identity: 'replica-a' });
    await issuedFor('team-a', 'vault');
    expect((await lease()).holderIdentity).toBe('replica-a');

    const metrics = await eventually(async () => {
      const body = await scrape(running.metrics as string);
      return body.includes('eso_provider_certificate_rotation_total{namespace="team-a",service="vault",reason="initial"} 1') && body;
    });
    expect(metrics).toMatch(/^eso_provider_certificate_expiry_seconds\{namespace="team-a",service="vault"\} \d+/m);
    expect(metrics).toMatch(/^process_cpu_user_seconds_total /m); // the host's own registry, on the same endpoint
    expect((await fetch(`${running.probes as string}/readyz`)).status).toBe(200);
  }, 120_000);

  it('a second replica waits on the Lease, exporting no gauges, and takes over when the first shuts down on SIGTERM', async () => {
    b = replica('replica-b');
    const running = await b.log('example operator running');
    await b.log('observed leader lease holder', { holder: 'replica-a' });
    await eventually(async () => (await fetch(`${running.probes as string}/readyz`)).status === 200);
    expect(await scrape(running.metrics as string)).not.toContain('eso_provider_certificate_expiry_seconds{');

    expect(await a.terminate()).toEqual({ code: 0, signal: null });
    await a.log('released leader lease');
    await a.log('stopped');
    await b.log('acquired leader lease', { identity: 'replica-b' });
    expect((await lease()).holderIdentity).toBe('replica-b');

    // The new leader does the work: a Service labelled now gets its Secret from replica-b.
    await cluster.namespace('team-b');
    await cluster.labelledService('team-b', 'consul');
    await issuedFor('team-b', 'consul');
  }, 120_000);

  it('the last replica exits by itself on SIGTERM, leaving the Lease released, and no log line holds key material', async () => {
    expect(await b.terminate()).toEqual({ code: 0, signal: null });
    await b.log('stopped');
    expect(await lease()).toMatchObject({ holderIdentity: '', leaseDurationSeconds: 1 });
    for (const r of [a, b]) expect(r.output).not.toContain('PRIVATE KEY');
  }, 60_000);

  it("logs every line, the certificates' lines included, under the operator's own component name", () => {
    for (const r of [a, b]) {
      expect(r.lines.some((l) => l.msg === 'acquired leader lease')).toBe(true); // the embedded parts' lines are among them
      expect(r.lines.filter((l) => l.component !== 'example-operator')).toEqual([]);
    }
  });
});
