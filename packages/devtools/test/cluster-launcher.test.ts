import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createPublicKey, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { type Server, type Socket, connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuthenticationV1Api, AuthorizationV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { locateTestBinaries } from '../../../testing/envtest/src/index.js';
import { type LaunchedControlPlane, endpointReconcilerFlags, launchControlPlane } from '../src/cluster/control-plane.js';
import { KUBE_CONTROLLER_MANAGER, KUBE_PROXY, KUBE_SCHEDULER, nodeIdentity, tokenKubeConfig } from '../src/cluster/identities.js';
import { freePort } from '@eso-mtls/test-kit/ports';
import { type SpawnWrap, groupAlive } from '../src/cluster/process-group.js';

// The launcher as the real node uses it: every process started through a wrapper that forks and
// passes no signal on (as `nsenter --pid` does), the apiserver bound and advertised on an address
// that is not the host's 127.0.0.1 (127.0.0.2 stands in for the node's address in its network
// namespace), clients on the host reaching it through a forwarder at 127.0.0.1, and the static
// identities kube-controller-manager, kube-scheduler, kube-proxy and a kubelet use.
// Scale: one control plane, started twice on the same folder.

const ADDRESS = '127.0.0.2';
const nsenterLike: SpawnWrap = (argv) => ['bash', '-c', '"$@" & wait $!', 'nsenter-like', ...argv];

/** A TCP forwarder on the host's 127.0.0.1, as the node harness puts in front of its apiserver. */
function forwarder(port: number, targetPort: number): Promise<Server> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(targetPort, ADDRESS);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  server.on('close', () => sockets.forEach((s) => s.destroy()));
  return new Promise((resolveServer) => server.listen(port, '127.0.0.1', () => resolveServer(server)));
}

async function whoAmI(kc: KubeConfig): Promise<{ username?: string; groups?: string[] }> {
  const review = await kc.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({ body: {} });
  return { username: review.status?.userInfo?.username, groups: review.status?.userInfo?.groups };
}

async function allowed(kc: KubeConfig, verb: string, resource: string, subresource?: string): Promise<boolean> {
  const review = await kc.makeApiClient(AuthorizationV1Api).createSelfSubjectAccessReview({
    body: { spec: { resourceAttributes: { verb, resource, ...(subresource ? { subresource } : {}), namespace: 'default' } } },
  });
  return review.status?.allowed === true;
}

describe('the control-plane launcher, set up as the real node uses it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'eso-mtls-launcher-'));
  let forward: Server;
  let plane: LaunchedControlPlane;
  const launch = async (securePort: number, clientPort: number): Promise<LaunchedControlPlane> =>
    launchControlPlane({
      binaries: await locateTestBinaries(),
      dir,
      wrap: nsenterLike,
      bindAddress: ADDRESS,
      advertiseAddress: ADDRESS,
      securePort,
      serviceClusterIpRange: '10.97.0.0/16',
      clientUrl: `https://127.0.0.1:${clientPort}`,
      clientTlsServerName: 'kubernetes.default.svc',
      nodeAuthorization: true,
      identities: [KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER, KUBE_PROXY, nodeIdentity('n1')],
      stopGraceMs: 5000,
      startTimeoutMs: 90_000,
    });
  let securePort: number;
  let clientPort: number;

  beforeAll(async () => {
    [securePort, clientPort] = [await freePort(), await freePort()];
    forward = await forwarder(clientPort, securePort);
    plane = await launch(securePort, clientPort);
  }, 120_000);
  afterAll(async () => {
    await plane?.stop();
    await new Promise((r) => forward?.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it('hands clients the forwarder URL with the name to verify, and components beside the apiserver its own address', async () => {
    expect(plane.url).toBe(`https://127.0.0.1:${clientPort}`);
    expect(plane.advertisedUrl).toBe(`https://${ADDRESS}:${securePort}`);
    expect((await whoAmI(plane.kubeconfigFor('admin'))).username).toBe('admin');
    expect((await whoAmI(plane.kubeconfigFor('admin', { advertised: true }))).username).toBe('admin');
    // The serving certificate does not name the forwarder's 127.0.0.1: without the name, TLS refuses.
    const unnamed = tokenKubeConfig({ url: plane.url, caPem: plane.caPem }, 'admin', plane.adminToken);
    await expect(whoAmI(unnamed)).rejects.toThrow(/IP: 127\.0\.0\.1 is not in the cert's list/);
    expect(readFileSync(plane.caFile, 'utf8')).toBe(plane.caPem);
  });

  it('gives the components their static identities, which the bootstrap RBAC and the Node authorizer recognise', async () => {
    expect(await whoAmI(plane.kubeconfigFor(KUBE_SCHEDULER.name))).toEqual({ username: 'system:kube-scheduler', groups: ['system:authenticated'] });
    expect(await allowed(plane.kubeconfigFor(KUBE_SCHEDULER.name), 'create', 'pods', 'binding')).toBe(true);
    expect(await allowed(plane.kubeconfigFor(KUBE_PROXY.name), 'list', 'endpoints')).toBe(true);
    expect(await allowed(plane.kubeconfigFor(KUBE_CONTROLLER_MANAGER.name), 'create', 'serviceaccounts', 'token')).toBe(true);
    expect(await allowed(plane.kubeconfigFor(KUBE_PROXY.name), 'list', 'secrets')).toBe(false);
    const node = plane.kubeconfigFor('system:node:n1').makeApiClient(CoreV1Api);
    expect((await node.createNode({ body: { metadata: { name: 'n1' } } })).metadata?.name).toBe('n1');
  });

  it('signs ServiceAccount tokens with the key it names (kube-controller-manager signs with the same file)', async () => {
    const core = plane.kubeconfigFor('admin').makeApiClient(CoreV1Api);
    await core.createNamespacedServiceAccount({ namespace: 'default', body: { metadata: { name: 'probe' } } });
    const request = await core.createNamespacedServiceAccountToken({ name: 'probe', namespace: 'default', body: { spec: { audiences: [] } } });
    const [header, payload, signature] = request.status!.token.split('.') as [string, string, string];
    const key = createPublicKey(readFileSync(plane.serviceAccountKeyFile));
    expect(verify('sha256', Buffer.from(`${header}.${payload}`), key, Buffer.from(signature, 'base64url'))).toBe(true);
  });

  it('stops every wrapped server through its process group, and a second launch on the same folder keeps the data and the tokens', async () => {
    const before = plane.processes().map((p) => p.pgid);
    const kubelet = plane.identity('system:node:n1').token;
    const core = plane.kubeconfigFor('admin').makeApiClient(CoreV1Api);
    const minted = await core.createNamespacedServiceAccountToken({ name: 'probe', namespace: 'default', body: { spec: { audiences: [] } } });
    await plane.stopApiServer();
    expect(groupAlive(before[1]!)).toBe(false);
    await plane.startApiServer();
    await plane.stop();
    expect(plane.processes().filter((p) => groupAlive(p.pgid))).toEqual([]);

    plane = await launch(securePort, clientPort);
    expect(plane.identity('system:node:n1').token).toBe(kubelet);
    const node = await plane.kubeconfigFor('admin').makeApiClient(CoreV1Api).readNode({ name: 'n1' });
    expect(node.metadata?.name).toBe('n1');
    // The service-account key was kept too: a token signed before the restart still authenticates.
    const kept = tokenKubeConfig(plane, 'probe', minted.status!.token);
    expect((await whoAmI(kept)).username).toBe('system:serviceaccount:default:probe');
  }, 120_000);
});

describe('the endpoint reconciler', () => {
  it('is off for a loopback advertise address, which may not stand in the kubernetes Endpoints, and on for any other', () => {
    expect(endpointReconcilerFlags('127.0.0.1')).toEqual(['--endpoint-reconciler-type=none']);
    expect(endpointReconcilerFlags('127.0.0.2')).toEqual(['--endpoint-reconciler-type=none']);
    expect(endpointReconcilerFlags('::1')).toEqual(['--endpoint-reconciler-type=none']);
    expect(endpointReconcilerFlags('10.200.0.2')).toEqual([]);
  });
});
