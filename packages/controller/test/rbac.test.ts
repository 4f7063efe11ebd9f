import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ApiException, CoordinationV1Api, CoreV1Api, type KubeConfig, type V1Secret, Watch } from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { applyAll, kustomizeBuild, serviceAccountKubeConfig } from './support/manifests.js';

// The shipped RBAC and admission policy on a real apiserver, exercised with a real token of the
// shipped ServiceAccount (TokenRequest): what the controller needs works, everything else is refused.
const ESO_NS = 'external-secrets-system';
const PROVIDER = 'external-secrets-provider-tls';
const LABELS = { 'app.kubernetes.io/managed-by': 'eso-mtls', 'app.kubernetes.io/component': 'provider-tls' };

async function status(call: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await call;
    return { code: 200, message: '' };
  } catch (e) {
    if (!(e instanceof ApiException)) throw e;
    let message = String(e.body);
    try {
      message = (JSON.parse(String(e.body)) as { message: string }).message;
    } catch {
      // not JSON: keep the raw body
    }
    return { code: e.code, message };
  }
}

function secret(namespace: string, name: string, extra: Partial<V1Secret> = {}): V1Secret {
  return { metadata: { name, namespace, labels: LABELS }, type: 'kubernetes.io/tls', data: { 'tls.crt': '', 'tls.key': '' }, ...extra };
}

describe('shipped RBAC and admission policy, as the controller ServiceAccount', () => {
  let plane: ControlPlane;
  let admin: CoreV1Api;
  let sa: CoreV1Api;
  let saKc: KubeConfig;

  beforeAll(async () => {
    plane = await startControlPlane();
    await applyAll(plane.adminKubeConfig, kustomizeBuild('deploy'));
    admin = plane.adminKubeConfig.makeApiClient(CoreV1Api);
    for (const ns of ['team-a', 'team-b', 'kube-system-like']) await admin.createNamespace({ body: { metadata: { name: ns } } });
    await admin.createNamespacedSecret({ namespace: 'team-a', body: { metadata: { name: 'database-password' }, stringData: { password: 'x' } } });
    await admin.createNamespacedSecret({ namespace: 'team-a', body: secret('team-a', PROVIDER) });
    await admin.createNamespacedSecret({ namespace: ESO_NS, body: { metadata: { name: 'eso-core-credentials' }, stringData: { k: 'v' } } });
    saKc = (await serviceAccountKubeConfig(plane.adminKubeConfig, plane.url, plane.caPem, ESO_NS, 'eso-mtls-controller')).kc;
    sa = saKc.makeApiClient(CoreV1Api);
    // A new policy takes a moment to load: wait until it denies what it should.
    const deadline = Date.now() + 20_000;
    while ((await status(sa.createNamespacedSecret({ namespace: 'team-b', body: secret('team-b', 'probe') }))).code !== 403) {
      if (Date.now() > deadline) throw new Error('the ValidatingAdmissionPolicy never started denying');
      await admin.deleteNamespacedSecret({ name: 'probe', namespace: 'team-b' }).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 250));
    }
  }, 120_000);
  afterAll(async () => {
    await plane?.stop();
  });

  it('allows what the controller does: list/watch Services, and the provider Secret by name everywhere', async () => {
    expect((await status(sa.listServiceForAllNamespaces({ labelSelector: 'external-secrets.io/provider=true' }))).code).toBe(200);
    expect((await status(sa.listSecretForAllNamespaces({ fieldSelector: `metadata.name=${PROVIDER}` }))).code).toBe(200);
    expect((await status(sa.readNamespacedSecret({ name: PROVIDER, namespace: 'team-a' }))).code).toBe(200);
    expect((await status(sa.readNamespacedSecret({ name: PROVIDER, namespace: 'team-b' }))).code).toBe(404);
    expect((await status(sa.listNamespacedSecret({ namespace: ESO_NS, fieldSelector: 'metadata.name=eso-provider-ca-internal' }))).code).toBe(200);
    const created = await status(sa.createNamespacedSecret({ namespace: 'team-b', body: secret('team-b', PROVIDER) }));
    expect(created.code).toBe(200);
    const current = await sa.readNamespacedSecret({ name: PROVIDER, namespace: 'team-b' });
    expect((await status(sa.replaceNamespacedSecret({ name: PROVIDER, namespace: 'team-b', body: { ...current, data: { 'tls.crt': 'eA==', 'tls.key': 'eA==' } } }))).code).toBe(200);
    const ca = { metadata: { name: 'eso-provider-ca-internal', namespace: ESO_NS, labels: { ...LABELS, 'app.kubernetes.io/component': 'ca' } }, type: 'Opaque' };
    expect((await status(sa.createNamespacedSecret({ namespace: ESO_NS, body: ca }))).code).toBe(200);
    expect((await status(sa.readNamespacedSecret({ name: 'eso-provider-ca-internal', namespace: ESO_NS }))).code).toBe(200);
    const events = await status(sa.createNamespacedEvent({ namespace: 'team-b', body: {
      metadata: { generateName: 'eso-mtls-' }, involvedObject: { kind: 'Service', namespace: 'team-b', name: 'p' }, reason: 'Issued', message: 'm', type: 'Normal',
    } }));
    expect(events.code).toBe(200);
  });

  it('refuses get of any other Secret, in any namespace', async () => {
    for (const [namespace, name] of [['team-a', 'database-password'], [ESO_NS, 'eso-core-credentials'], ['team-a', 'eso-provider-ca-internal'], ['team-b', 'no-such-secret']]) {
      const r = await status(sa.readNamespacedSecret({ name: name!, namespace: namespace! }));
      expect({ namespace, name, code: r.code }).toEqual({ namespace, name, code: 403 });
    }
  });

  it('refuses delete of any Secret, ours included', async () => {
    for (const [namespace, name] of [['team-a', PROVIDER], [ESO_NS, 'eso-provider-ca-internal'], ['team-a', 'database-password']]) {
      expect((await status(sa.deleteNamespacedSecret({ name: name!, namespace: namespace! }))).code).toBe(403);
    }
    expect((await status(sa.deleteCollectionNamespacedSecret({ namespace: 'team-a' }))).code).toBe(403);
  });

  it('refuses list and watch of Secrets without the name field selector', async () => {
    expect((await status(sa.listSecretForAllNamespaces())).code).toBe(403);
    expect((await status(sa.listNamespacedSecret({ namespace: 'team-a' }))).code).toBe(403);
    expect((await status(sa.listNamespacedSecret({ namespace: ESO_NS }))).code).toBe(403);
    expect((await status(sa.listSecretForAllNamespaces({ fieldSelector: 'metadata.name=database-password' }))).code).toBe(403);
    expect((await status(sa.listSecretForAllNamespaces({ labelSelector: 'app.kubernetes.io/managed-by=eso-mtls' }))).code).toBe(403);
    // client-node's Watch hands a non-200 answer to its done callback with the HTTP status attached.
    const codeOf = (e: unknown): number => (e as { statusCode?: number } | undefined)?.statusCode ?? -1;
    const watchCode = await new Promise<number>((resolve) => {
      void new Watch(saKc).watch('/api/v1/secrets', {}, () => resolve(200), (err: unknown) => resolve(codeOf(err)))
        .then((req) => setTimeout(() => req.abort(), 2000), (e: unknown) => resolve(codeOf(e)));
    });
    expect(watchCode).toBe(403);
  });

  it('denies, by admission policy, creating a Secret of another name', async () => {
    const r = await status(sa.createNamespacedSecret({ namespace: 'team-a', body: secret('team-a', 'my-own-secret') }));
    expect(r.code).toBe(403);
    expect(r.message).toContain('ValidatingAdmissionPolicy \'eso-mtls-controller-secret-writes\'');
    expect(r.message).toContain('may write only the Secrets external-secrets-provider-tls, eso-provider-ca-internal and eso-provider-client-tls, not my-own-secret');
  });

  it('denies the service-account-token escalation: our name, type kubernetes.io/service-account-token', async () => {
    await admin.createNamespacedServiceAccount({ namespace: 'kube-system-like', body: { metadata: { name: 'powerful' } } });
    const r = await status(sa.createNamespacedSecret({ namespace: 'kube-system-like', body: {
      metadata: { name: PROVIDER, namespace: 'kube-system-like', labels: LABELS, annotations: { 'kubernetes.io/service-account.name': 'powerful' } },
      type: 'kubernetes.io/service-account-token',
    } }));
    expect(r.code).toBe(403);
    expect(r.message).toContain('may write Secrets of type kubernetes.io/tls or Opaque only, not kubernetes.io/service-account-token');
    expect((await status(admin.readNamespacedSecret({ name: PROVIDER, namespace: 'kube-system-like' }))).code).toBe(404);
  });

  it('denies our names without our labels, and the CA or client names outside the ESO namespace', async () => {
    const unlabelled = await status(sa.createNamespacedSecret({ namespace: 'kube-system-like', body: { metadata: { name: PROVIDER }, type: 'Opaque' } }));
    expect(unlabelled.code).toBe(403);
    expect(unlabelled.message).toContain('must label the Secrets it writes app.kubernetes.io/managed-by=eso-mtls and app.kubernetes.io/component=provider-tls');
    const wrongComponent = await status(sa.createNamespacedSecret({ namespace: 'kube-system-like', body: secret('kube-system-like', PROVIDER, {
      metadata: { name: PROVIDER, labels: { ...LABELS, 'app.kubernetes.io/component': 'ca' } } }) }));
    expect(wrongComponent.code).toBe(403);
    const caElsewhere = await status(sa.createNamespacedSecret({ namespace: 'team-a', body: secret('team-a', 'eso-provider-ca-internal', {
      metadata: { name: 'eso-provider-ca-internal', labels: { ...LABELS, 'app.kubernetes.io/component': 'ca' } } }) }));
    expect(caElsewhere.code).toBe(403);
    expect(caElsewhere.message).toContain('may write eso-provider-ca-internal only in namespace external-secrets-system, not team-a');
    // An update that strips our labels is denied too; the Secret keeps them.
    const current = await sa.readNamespacedSecret({ name: PROVIDER, namespace: 'team-a' });
    const stripped = await status(sa.replaceNamespacedSecret({ name: PROVIDER, namespace: 'team-a', body: { ...current, metadata: { ...current.metadata, labels: {} } } }));
    expect(stripped.code).toBe(403);
  });

  it('applies the policy to the controller only: an admin may still create any Secret', async () => {
    expect((await status(admin.createNamespacedSecret({ namespace: 'team-b', body: { metadata: { name: 'admins-own' }, stringData: { a: 'b' } } }))).code).toBe(200);
  });

  it('allows leader election on the one Lease only', async () => {
    const coordination = saKc.makeApiClient(CoordinationV1Api);
    const lease = { metadata: { name: 'eso-mtls-controller', namespace: ESO_NS }, spec: { holderIdentity: 'x', leaseDurationSeconds: 15 } };
    expect((await status(coordination.createNamespacedLease({ namespace: ESO_NS, body: lease }))).code).toBe(200);
    const read = await coordination.readNamespacedLease({ name: 'eso-mtls-controller', namespace: ESO_NS });
    expect((await status(coordination.replaceNamespacedLease({ name: 'eso-mtls-controller', namespace: ESO_NS, body: read }))).code).toBe(200);
    expect((await status(coordination.readNamespacedLease({ name: 'kube-controller-manager', namespace: ESO_NS }))).code).toBe(403);
    expect((await status(coordination.createNamespacedLease({ namespace: 'team-a', body: { metadata: { name: 'eso-mtls-controller' } } }))).code).toBe(403);
    expect((await status(coordination.deleteNamespacedLease({ name: 'eso-mtls-controller', namespace: ESO_NS }))).code).toBe(403);
  });

  it('applies everything of the opt-in overlay but the PrometheusRule, whose CRD this cluster lacks', async () => {
    const extra = kustomizeBuild('deploy/overlays/prometheus-rule').filter((m) => m.kind === 'PrometheusRule');
    expect(extra).toHaveLength(1);
    await expect(applyAll(plane.adminKubeConfig, extra)).rejects
      .toThrow('applying PrometheusRule external-secrets-system/eso-mtls: Failed to fetch resource metadata for monitoring.coreos.com/v1/PrometheusRule: HTTP-Code: 404');
  });
});
