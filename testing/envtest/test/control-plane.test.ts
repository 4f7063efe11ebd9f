import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { type ControlPlane, nodeIdentity, startControlPlane } from '../src/index.js';
import { eventually } from '@eso-mtls/test-kit/eventually';

const here = fileURLToPath(new URL('.', import.meta.url));
const repoRoot = resolve(here, '..', '..', '..');

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Runs a fixture script under the repo's TypeScript loader; resolves with its first stdout line. */
function runFixture(name: string, env: NodeJS.ProcessEnv): { child: ReturnType<typeof spawn>; firstLine: Promise<string> } {
  const child = spawn(process.execPath, ['--import', join(repoRoot, 'scripts/register-ts.mjs'), join(here, 'fixtures', name)], {
    cwd: repoRoot,
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const firstLine = new Promise<string>((resolveLine, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', (l) => {
      lines.close();
      resolveLine(l);
    });
    child.once('exit', (code) => reject(new Error(`fixture ${name} exited with ${code} before printing`)));
  });
  return { child, firstLine };
}

describe('envtest control plane', () => {
  let plane: ControlPlane;
  beforeAll(async () => {
    plane = await startControlPlane({ identities: [{ name: 'reader', groups: ['team-a'] }, nodeIdentity('n1')], audit: true });
  }, 120_000);
  afterAll(async () => {
    await plane?.stop();
  });

  it('serves the admin over TLS with the CA in the kubeconfig and enforces RBAC for other identities', async () => {
    expect(plane.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const admin = plane.adminKubeConfig.makeApiClient(CoreV1Api);
    const names = (await admin.listNamespace()).items.map((n) => n.metadata?.name);
    expect(names).toContain('kube-system');

    const reader = plane.kubeconfigFor('reader').makeApiClient(CoreV1Api);
    await expect(reader.listNamespacedSecret({ namespace: 'default' })).rejects.toMatchObject({ code: 403 });
    const rbac = plane.adminKubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: 'default',
      body: { metadata: { name: 'read-secrets' }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['list'] }] },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: 'default',
      body: {
        metadata: { name: 'team-a-reads' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-secrets' },
        subjects: [{ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'team-a' }],
      },
    });
    // The authorizer sees new bindings through its informer, a moment after the write.
    let allowed = false;
    for (let i = 0; i < 50 && !allowed; i++) {
      allowed = await reader.listNamespacedSecret({ namespace: 'default' }).then(
        () => true,
        () => false,
      );
      if (!allowed) await new Promise((r) => setTimeout(r, 100));
    }
    expect(allowed).toBe(true);
    expect(() => plane.kubeconfigFor('nobody')).toThrow(/identity "nobody" was not declared; declared: admin, reader/);
  });

  it('records requests in the audit log under each identity', async () => {
    const events = plane.auditEvents();
    expect(events.some((e) => e.user.username === 'reader' && e.verb === 'list' && e.objectRef?.resource === 'secrets' && e.responseStatus?.code === 403)).toBe(
      true,
    );
    expect(events.some((e) => e.user.username === 'admin' && e.verb === 'create' && e.objectRef?.resource === 'rolebindings')).toBe(true);
  });

  it('restarts kube-apiserver on the same port against the same etcd', async () => {
    const admin = plane.adminKubeConfig.makeApiClient(CoreV1Api);
    await admin.createNamespace({ body: { metadata: { name: 'survives-restart' } } });
    const [, apiBefore] = plane.processGroupIds();
    await plane.restartApiServer();
    const [, apiAfter] = plane.processGroupIds();
    expect(apiAfter).not.toBe(apiBefore);
    expect(groupAlive(apiBefore!)).toBe(false);
    const ns = await admin.readNamespace({ name: 'survives-restart' });
    expect(ns.metadata?.name).toBe('survives-restart');
  }, 60_000);

  it('authorises with RBAC alone by default, and with the Node authorizer and NodeRestriction on request', async () => {
    // RBAC alone: nothing grants a node anything.
    const byDefault = plane.kubeconfigFor('system:node:n1').makeApiClient(CoreV1Api);
    await expect(byDefault.createNode({ body: { metadata: { name: 'n1' } } })).rejects.toMatchObject({ code: 403 });

    const withNodes = await startControlPlane({ nodeAuthorization: true, identities: [nodeIdentity('n1')] });
    try {
      const node = withNodes.kubeconfigFor('system:node:n1').makeApiClient(CoreV1Api);
      // The Node authorizer lets a kubelet register its Node; NodeRestriction stops it touching another's.
      expect((await node.createNode({ body: { metadata: { name: 'n1' } } })).metadata?.name).toBe('n1');
      const refused = (await node.createNode({ body: { metadata: { name: 'n2' } } }).catch((e: unknown) => e)) as { code?: number; body?: unknown };
      expect(refused.code).toBe(403);
      expect(String(refused.body)).toMatch(/is not allowed to modify node/);
    } finally {
      await withNodes.stop();
    }
  }, 120_000);

  it('stop() ends every process group and removes the temp dir', async () => {
    const other = await startControlPlane();
    const groups = other.processGroupIds();
    expect(groups.every(groupAlive)).toBe(true);
    await other.stop();
    expect(groups.filter(groupAlive)).toEqual([]);
    expect(existsSync(other.dir)).toBe(false);
    await other.stop(); // idempotent
  }, 120_000);
});

describe('envtest processes outlive nothing', () => {
  it('kills etcd and kube-apiserver when the process that started them is SIGKILLed', async () => {
    const { child, firstLine } = runFixture('orphan.ts', process.env);
    const { pgids, dir } = JSON.parse(await firstLine) as { pgids: number[]; dir: string };
    expect(pgids).toHaveLength(2);
    expect(pgids.every(groupAlive)).toBe(true);
    child.kill('SIGKILL');
    await eventually(() => !pgids.some(groupAlive), 20_000, 'every process group to be gone', 200);
    rmSync(dir, { recursive: true, force: true }); // no cleanup ran in the killed process
  }, 120_000);

  it('says what to install when Go is missing and no binaries are cached', async () => {
    const emptyCache = mkdtempSync(join(tmpdir(), 'eso-mtls-no-testbin-'));
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, PATH: '/usr/bin:/bin', ESO_MTLS_TESTBIN_CACHE: emptyCache, KUBEBUILDER_ASSETS: emptyCache };
      delete env.GO;
      const { firstLine } = runFixture('locate.ts', env);
      const report = JSON.parse(await firstLine) as { ok: boolean; message?: string };
      expect(report.ok).toBe(false);
      expect(report.message).toMatch(/'go' not found/);
      expect(report.message).toMatch(/Install Go \(https:\/\/go\.dev\/dl\)/);
      expect(report.message).toMatch(/KUBEBUILDER_ASSETS/);
    } finally {
      rmSync(emptyCache, { recursive: true, force: true });
    }
  }, 60_000);
});
