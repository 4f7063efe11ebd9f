import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AuthorizationV1Api, CoreV1Api, type KubeConfig, KubernetesObjectApi, type V1ResourceAttributes, type V1Secret } from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../envtest/src/index.js';
import { type Answer, answer, rawAnswer, untilAnswer } from '@eso-mtls/test-kit/answers';
import { type Manifest, kustomizeBuild, kustomizeInstall, serviceAccountKubeConfig } from '@eso-mtls/test-kit/manifests';
import { Helm, type Values, chartDir } from '@eso-mtls/test-kit/helm';
import { Kubectl } from './support/kubectl.js';
import { OVERLAY_NAMES } from './support/ca-source.js';

// The CA source's RBAC (issue 35 item 6) on a real kube-apiserver, as the controller's
// ServiceAccount with a real token: deploy/overlays/ca-issuer, then a switch to
// deploy/overlays/ca-from-secret, then the chart with an Issuer and with a Secret source in other
// namespaces. What the controller needs is allowed: CertificateRequests in ESO's namespace and
// nowhere else, read on the one issuer, read on the source Secret and the anchors. Writes to them
// are refused, by RBAC and, for a Secret create, by the admission policy as before. Rights are
// asked by SelfSubjectAccessReview with the ServiceAccount's own credentials; reads and writes are
// real requests. cert-manager's CRDs are not installed: a request RBAC allows reaches the API's
// 404, one it refuses stops at 403.
const ESO_NS = 'external-secrets-system';
const CONTROLLER = 'eso-mtls-controller';
const LABELS = { 'app.kubernetes.io/managed-by': 'eso-mtls', 'app.kubernetes.io/component': 'ca' };
const VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];
const yamlStream = (ms: readonly Manifest[]) => ms.map((m) => JSON.stringify(m)).join('\n---\n');
const key = (m: Manifest) => `${m.kind}/${m.metadata?.namespace ?? ''}/${m.metadata?.name}`;

/** Every verb on `resource`, per name and namespace given (undefined: none, all of them). */
function everyVerb(
  group: string,
  resource: string,
  names: readonly (string | undefined)[],
  namespaces: readonly (string | undefined)[],
): V1ResourceAttributes[] {
  return VERBS.flatMap((verb) =>
    names.flatMap((name) => namespaces.map((namespace) => ({ group, resource, verb, ...(name ? { name } : {}), ...(namespace ? { namespace } : {}) }))),
  );
}

/** What `kc` is allowed among `asked`, as "verb resource [name] [in namespace]", asked by SelfSubjectAccessReview. */
async function granted(kc: KubeConfig, asked: readonly V1ResourceAttributes[]): Promise<string[]> {
  const api = kc.makeApiClient(AuthorizationV1Api);
  const out: string[] = [];
  for (const a of asked) {
    const review = await api.createSelfSubjectAccessReview({ body: { spec: { resourceAttributes: a } } });
    if (review.status!.allowed) out.push(`${a.verb} ${a.resource}${a.name ? ` ${a.name}` : ''}${a.namespace ? ` in ${a.namespace}` : ''}`);
  }
  return out.sort();
}

/** A CertificateRequest as the controller sends it (its fields do not matter to RBAC). */
const certificateRequest = (namespace: string) => ({
  apiVersion: 'cert-manager.io/v1',
  kind: 'CertificateRequest',
  metadata: { name: 'eso-mtls-ca-0123456789', namespace },
  spec: {
    request: '',
    isCA: true,
    usages: ['cert sign', 'crl sign', 'digital signature'],
    issuerRef: { kind: 'ClusterIssuer', name: OVERLAY_NAMES.clusterIssuer },
  },
});

describe('the CA source RBAC on a real apiserver, as the controller ServiceAccount', () => {
  let plane: ControlPlane;
  let kubectl: Kubectl;
  let admin: CoreV1Api;
  const helm = new Helm();
  let cluster: Helm;
  const issuerOverlay = kustomizeInstall('deploy/overlays/ca-issuer');
  const secretOverlay = kustomizeBuild('deploy/overlays/ca-from-secret');

  /** Server-side apply with strict field validation: a misspelt field fails instead of being dropped. */
  const apply = (ms: readonly Manifest[]) =>
    kubectl.run(['apply', '--server-side', '--field-manager=eso-mtls-test', '--validate=strict', '-f', '-'], yamlStream(ms));
  const serviceAccount = async (namespace: string, name: string) =>
    (await serviceAccountKubeConfig(plane.adminKubeConfig, plane.url, plane.caPem, namespace, name)).kc;
  const adminSecret = (namespace: string, name: string): V1Secret => ({
    metadata: { name, namespace },
    type: 'kubernetes.io/tls',
    stringData: { 'tls.crt': 'x', 'tls.key': 'x' },
  });

  beforeAll(async () => {
    plane = await startControlPlane();
    kubectl = new Kubectl(plane.adminKubeconfigPath);
    cluster = new Helm(plane.adminKubeconfigPath);
    admin = plane.adminKubeConfig.makeApiClient(CoreV1Api);
    for (const ns of ['team-a']) await admin.createNamespace({ body: { metadata: { name: ns } } });
  }, 180_000);
  afterAll(async () => {
    kubectl?.remove();
    helm.remove();
    cluster?.remove();
    await plane?.stop();
  });

  it('deploy/overlays/ca-issuer: CertificateRequests in ESO namespace only, read on the one ClusterIssuer and the anchors ConfigMap, nothing more', async () => {
    apply(issuerOverlay);
    const sa = await serviceAccount(ESO_NS, CONTROLLER);
    const rights = await granted(sa, [
      ...everyVerb('cert-manager.io', 'certificaterequests', [undefined], [ESO_NS, 'team-a', undefined]),
      ...everyVerb('cert-manager.io', 'clusterissuers', [OVERLAY_NAMES.clusterIssuer, 'other-ca', undefined], [undefined]),
      ...everyVerb('cert-manager.io', 'issuers', [OVERLAY_NAMES.clusterIssuer, undefined], [ESO_NS]),
      ...everyVerb('', 'configmaps', [OVERLAY_NAMES.roots, 'other-config', undefined], [ESO_NS, 'team-a']),
      // Not create: deploy/base grants Secret create everywhere, and its admission policy limits the names.
      ...everyVerb('', 'secrets', [OVERLAY_NAMES.roots], [ESO_NS]).filter((a) => a.verb !== 'create'),
    ]);
    expect(rights).toEqual(
      [
        ...['create', 'get', 'list', 'watch', 'delete'].map((v) => `${v} certificaterequests in ${ESO_NS}`),
        ...['get', 'list', 'watch'].map((v) => `${v} clusterissuers ${OVERLAY_NAMES.clusterIssuer}`),
        ...['get', 'list', 'watch'].map((v) => `${v} configmaps ${OVERLAY_NAMES.roots} in ${ESO_NS}`),
      ].sort(),
    );
    // Real requests: allowed ones reach the API (404: no cert-manager CRDs here), refused ones stop at 403.
    const requests = `/apis/cert-manager.io/v1/namespaces/${ESO_NS}/certificaterequests`;
    expect((await rawAnswer(sa, 'POST', requests, certificateRequest(ESO_NS))).code).toBe(404);
    expect((await rawAnswer(sa, 'POST', '/apis/cert-manager.io/v1/namespaces/team-a/certificaterequests', certificateRequest('team-a'))).code).toBe(403);
    const byName = `fieldSelector=${encodeURIComponent(`metadata.name=${OVERLAY_NAMES.clusterIssuer}`)}`;
    expect((await rawAnswer(sa, 'GET', `/apis/cert-manager.io/v1/clusterissuers?${byName}`, undefined)).code).toBe(404);
    expect((await rawAnswer(sa, 'GET', '/apis/cert-manager.io/v1/clusterissuers', undefined)).code).toBe(403);
    await admin.createNamespacedConfigMap({ namespace: ESO_NS, body: { metadata: { name: OVERLAY_NAMES.roots }, data: { 'ca.crt': 'roots' } } });
    await admin.createNamespacedConfigMap({ namespace: ESO_NS, body: { metadata: { name: 'other-config' }, data: { a: 'b' } } });
    const configMaps = sa.makeApiClient(CoreV1Api);
    expect((await answer(configMaps.readNamespacedConfigMap({ namespace: ESO_NS, name: OVERLAY_NAMES.roots }))).code).toBe(200);
    expect((await answer(configMaps.listNamespacedConfigMap({ namespace: ESO_NS, fieldSelector: `metadata.name=${OVERLAY_NAMES.roots}` }))).code).toBe(200);
    expect((await answer(configMaps.listNamespacedConfigMap({ namespace: ESO_NS }))).code).toBe(403);
    expect((await answer(configMaps.readNamespacedConfigMap({ namespace: ESO_NS, name: 'other-config' }))).code).toBe(403);
    const roots = await configMaps.readNamespacedConfigMap({ namespace: ESO_NS, name: OVERLAY_NAMES.roots });
    expect(
      (await answer(configMaps.replaceNamespacedConfigMap({ namespace: ESO_NS, name: OVERLAY_NAMES.roots, body: { ...roots, data: { 'ca.crt': 'mine' } } })))
        .code,
    ).toBe(403);
  }, 120_000);

  it('switched to deploy/overlays/ca-from-secret: reads the source Secret and the anchors by name, cannot write either, and has no CertificateRequest right left', async () => {
    apply(secretOverlay);
    // What only ca-issuer had goes, as `kubectl apply --prune` or a GitOps tool would remove it.
    const objects = KubernetesObjectApi.makeApiClient(plane.adminKubeConfig);
    const kept = new Set(secretOverlay.map(key));
    for (const m of issuerOverlay.filter((o) => o.kind !== 'Namespace' && !kept.has(key(o)))) await objects.delete(m);
    for (const name of [OVERLAY_NAMES.intermediateSecret, OVERLAY_NAMES.roots, 'eso-core-credentials']) {
      await admin.createNamespacedSecret({ namespace: ESO_NS, body: adminSecret(ESO_NS, name) });
    }
    const sa = await serviceAccount(ESO_NS, CONTROLLER);
    const secrets = sa.makeApiClient(CoreV1Api);
    // The RBAC change reaches the authorizer's cache within moments; wait for it, not a fixed time.
    await untilAnswer('the source Secret readable', () => secrets.readNamespacedSecret({ namespace: ESO_NS, name: OVERLAY_NAMES.intermediateSecret }), 200);
    await untilRawAnswer(
      'CertificateRequests refused',
      () => rawAnswer(sa, 'POST', `/apis/cert-manager.io/v1/namespaces/${ESO_NS}/certificaterequests`, certificateRequest(ESO_NS)),
      403,
    );

    for (const name of [OVERLAY_NAMES.intermediateSecret, OVERLAY_NAMES.roots]) {
      expect({ name, read: (await answer(secrets.readNamespacedSecret({ namespace: ESO_NS, name }))).code }).toEqual({ name, read: 200 });
      const list = await answer(secrets.listNamespacedSecret({ namespace: ESO_NS, fieldSelector: `metadata.name=${name}` }));
      expect({ name, list: list.code }).toEqual({ name, list: 200 });
      const current = await secrets.readNamespacedSecret({ namespace: ESO_NS, name });
      const written = { ...current, metadata: { ...current.metadata, labels: LABELS }, data: { 'tls.crt': 'eA==', 'tls.key': 'eA==' } };
      expect({ name, update: (await answer(secrets.replaceNamespacedSecret({ namespace: ESO_NS, name, body: written }))).code }).toEqual({ name, update: 403 });
      expect({ name, delete: (await answer(secrets.deleteNamespacedSecret({ namespace: ESO_NS, name }))).code }).toEqual({ name, delete: 403 });
      // Create is granted cluster-wide in the Secret mode (RBAC cannot restrict it by name): the
      // admission policy refuses the name, in ESO's namespace and in any other.
      for (const namespace of [ESO_NS, 'team-a']) {
        const created = await answer(secrets.createNamespacedSecret({ namespace, body: { metadata: { name, labels: LABELS }, type: 'Opaque' } }));
        expect({ name, namespace, created }).toEqual({
          name,
          namespace,
          created: {
            code: 403,
            message: expect.stringContaining(
              `eso-mtls-controller may write only the Secrets external-secrets-provider-tls, eso-provider-ca-internal and eso-provider-client-tls, not ${name}`,
            ),
          },
        });
      }
    }
    expect((await answer(secrets.readNamespacedSecret({ namespace: ESO_NS, name: 'eso-core-credentials' }))).code).toBe(403);
    expect((await answer(secrets.listNamespacedSecret({ namespace: ESO_NS }))).code).toBe(403);
    expect(
      await granted(sa, [
        ...everyVerb('', 'secrets', [OVERLAY_NAMES.intermediateSecret, OVERLAY_NAMES.roots], [ESO_NS, 'team-a']),
        ...everyVerb('cert-manager.io', 'certificaterequests', [undefined], [ESO_NS]),
        ...everyVerb('cert-manager.io', 'clusterissuers', [OVERLAY_NAMES.clusterIssuer], [undefined]),
        ...everyVerb('', 'configmaps', [OVERLAY_NAMES.roots], [ESO_NS]),
      ]),
    ).toEqual(
      [
        ...['get', 'list', 'watch'].flatMap((v) => [OVERLAY_NAMES.intermediateSecret, OVERLAY_NAMES.roots].map((n) => `${v} secrets ${n} in ${ESO_NS}`)),
        // Secret create, by RBAC, everywhere: the admission policy limits the names, as above.
        `create secrets ${OVERLAY_NAMES.intermediateSecret} in ${ESO_NS}`,
        `create secrets ${OVERLAY_NAMES.roots} in ${ESO_NS}`,
        `create secrets ${OVERLAY_NAMES.intermediateSecret} in team-a`,
        `create secrets ${OVERLAY_NAMES.roots} in team-a`,
      ].sort(),
    );
    // The stored Secrets are as the admin wrote them.
    for (const name of [OVERLAY_NAMES.intermediateSecret, OVERLAY_NAMES.roots]) {
      expect((await admin.readNamespacedSecret({ namespace: ESO_NS, name })).data).toEqual({ 'tls.crt': 'eA==', 'tls.key': 'eA==' });
    }
  }, 120_000);

  it('the chart with an Issuer: CertificateRequests and read on that Issuer in its namespace only', async () => {
    const ns = 'platform-issuer';
    const values: Values = {
      fullnameOverride: 'issuer-eso-mtls',
      replicaCount: 1,
      ca: {
        source: 'issuer',
        issuer: { kind: 'Issuer', name: 'vault-issuer', group: 'vault.example.com' },
        trustAnchors: { kind: 'Secret', name: 'org-roots' },
      },
    };
    cluster.install(chartDir, 'issuer', ns, values);
    const sa = await serviceAccount(ns, 'issuer-eso-mtls');
    const rights = await granted(sa, [
      ...everyVerb('cert-manager.io', 'certificaterequests', [undefined], [ns, ESO_NS]),
      ...everyVerb('vault.example.com', 'issuers', ['vault-issuer', 'other-issuer', undefined], [ns, ESO_NS]),
      ...everyVerb('vault.example.com', 'clusterissuers', ['vault-issuer'], [undefined]),
      ...everyVerb('cert-manager.io', 'issuers', ['vault-issuer'], [ns]),
      // Not create: granted everywhere in the Secret mode, its names limited by the admission policy.
      ...everyVerb('', 'secrets', ['org-roots'], [ns]).filter((a) => a.verb !== 'create'),
    ]);
    expect(rights).toEqual(
      [
        ...['create', 'get', 'list', 'watch', 'delete'].map((v) => `${v} certificaterequests in ${ns}`),
        ...['get', 'list', 'watch'].map((v) => `${v} issuers vault-issuer in ${ns}`),
        ...['get', 'list', 'watch'].map((v) => `${v} secrets org-roots in ${ns}`),
      ].sort(),
    );
  }, 120_000);

  it("the chart with an external issuer's own cluster-scoped kind: read on that one issuer through its resource, nothing else of its group", async () => {
    const ns = 'platform-pca';
    const values: Values = {
      fullnameOverride: 'pca-eso-mtls',
      replicaCount: 1,
      ca: {
        source: 'issuer',
        issuer: { kind: 'AWSPCAClusterIssuer', name: 'org-pca', group: 'awspca.cert-manager.io', resource: 'awspcaclusterissuers', scope: 'Cluster' },
        trustAnchors: { kind: 'Secret', name: 'org-roots' },
      },
    };
    cluster.install(chartDir, 'pca', ns, values);
    const sa = await serviceAccount(ns, 'pca-eso-mtls');
    const rights = await granted(sa, [
      ...everyVerb('awspca.cert-manager.io', 'awspcaclusterissuers', ['org-pca', 'other-pca', undefined], [undefined]),
      ...everyVerb('awspca.cert-manager.io', 'awspcaissuers', ['org-pca'], [ns]),
      ...everyVerb('cert-manager.io', 'clusterissuers', ['org-pca'], [undefined]),
    ]);
    expect(rights).toEqual(['get', 'list', 'watch'].map((v) => `${v} awspcaclusterissuers org-pca`).sort());
  }, 120_000);

  it('the chart with a Secret source and anchors in a ConfigMap: reads both by name, writes neither', async () => {
    const ns = 'platform-secrets';
    const values: Values = {
      fullnameOverride: 'secret-eso-mtls',
      replicaCount: 1,
      ca: { source: 'secret', secret: { name: 'org-intermediate' }, trustAnchors: { kind: 'ConfigMap', name: 'org-roots' } },
    };
    cluster.install(chartDir, 'secret', ns, values);
    await admin.createNamespacedSecret({ namespace: ns, body: adminSecret(ns, 'org-intermediate') });
    await admin.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'org-roots' }, data: { 'ca.crt': 'roots' } } });
    const sa = await serviceAccount(ns, 'secret-eso-mtls');
    const core = sa.makeApiClient(CoreV1Api);
    // The chart's admission policy and its parameters reach admission within moments.
    await untilAnswer(
      "the source Secret's name refused by the chart's admission policy",
      () => core.createNamespacedSecret({ namespace: 'team-a', body: { metadata: { name: 'org-intermediate', labels: LABELS }, type: 'Opaque' } }),
      403,
      () => admin.deleteNamespacedSecret({ namespace: 'team-a', name: 'org-intermediate' }),
    );
    expect((await answer(core.readNamespacedSecret({ namespace: ns, name: 'org-intermediate' }))).code).toBe(200);
    expect((await answer(core.readNamespacedConfigMap({ namespace: ns, name: 'org-roots' }))).code).toBe(200);
    const current = await core.readNamespacedSecret({ namespace: ns, name: 'org-intermediate' });
    expect(
      (
        await answer(
          core.replaceNamespacedSecret({ namespace: ns, name: 'org-intermediate', body: { ...current, metadata: { ...current.metadata, labels: LABELS } } }),
        )
      ).code,
    ).toBe(403);
    const created = await answer(
      core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'org-intermediate', labels: LABELS }, type: 'Opaque' } }),
    );
    expect(created).toEqual({
      code: 403,
      message: expect.stringContaining(
        'may write only the Secrets external-secrets-provider-tls, eso-provider-ca-internal and eso-provider-client-tls, not org-intermediate',
      ),
    });
    const roots = await core.readNamespacedConfigMap({ namespace: ns, name: 'org-roots' });
    expect((await answer(core.replaceNamespacedConfigMap({ namespace: ns, name: 'org-roots', body: { ...roots, data: { 'ca.crt': 'mine' } } }))).code).toBe(
      403,
    );
    expect(
      await granted(sa, [
        ...everyVerb('', 'secrets', ['org-intermediate'], [ns]),
        ...everyVerb('', 'configmaps', ['org-roots', undefined], [ns]),
        ...everyVerb('cert-manager.io', 'certificaterequests', [undefined], [ns]),
      ]),
    ).toEqual(
      [
        ...['get', 'list', 'watch'].map((v) => `${v} secrets org-intermediate in ${ns}`),
        `create secrets org-intermediate in ${ns}`,
        ...['get', 'list', 'watch'].map((v) => `${v} configmaps org-roots in ${ns}`),
      ].sort(),
    );
  }, 120_000);
});

/** Repeats the raw request `attempt` until it answers `code`, as untilAnswer does for client-node's calls; 30 s at most. */
async function untilRawAnswer(what: string, attempt: () => Promise<Answer>, code: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  let last = await attempt();
  while (last.code !== code) {
    if (Date.now() > deadline) throw new Error(`${what}: still ${last.code} ${last.message} after 30 s, expected ${code}`);
    await new Promise((r) => setTimeout(r, 250));
    last = await attempt();
  }
}
