// An issuer whose API the apiserver does not serve (yet), on a real kube-apiserver: ESO installed
// before cert-manager, or an external issuer with a kind of its own, whose group serves v1beta1 only. The adapter starts
// anyway (its Secret rounds never wait for the issuer), says `issuer_missing` naming the API, and
// takes the issuer up once its CRDs are installed, at the version and scope the group serves. The
// same holds for an input its RBAC does not name (the issuer, the trust anchors): a 403 is the
// source's problem, quoted, and the input is read once a rule allows it.
import { describe, expect, it } from '@jest/globals';
import type { KubeConfig } from '@kubernetes/client-node';
import { hours } from '@eso-mtls/core';
import { KubeRestClient, connectionFromKubeConfig, corePath } from '@eso-mtls/kubernetes';
import { type RecordingAdapter, startAdapter } from '@eso-mtls/test-kit/adapter';
import { installCertManagerCrds } from '@eso-mtls/test-kit/cert-manager-process';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { useControlPlane } from '@eso-mtls/test-kit/installations';
import { serviceAccountKubeConfig } from '@eso-mtls/test-kit/manifests';
import { opensslP256Ca } from '@eso-mtls/test-kit/pod-certificates';
import type { IssuerReference } from '../../src/installation/ca-source.js';
import { type CertificateRequestObject, caRequestPath } from '../../src/upstream/certificate-requests.js';

const suite = useControlPlane();
const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const EXTERNAL_GROUP = 'external-issuer.eso-mtls.test';
// Our reconciles and the apiserver's CRD establishment on a loaded 2-core machine: generous.
const WAIT = 120_000;
const b64 = (s: string): string => Buffer.from(s).toString('base64');

async function admin<T>(use: (client: KubeRestClient) => Promise<T>): Promise<T> {
  const client = new KubeRestClient(await connectionFromKubeConfig(suite.plane.adminKubeConfig));
  try {
    return await use(client);
  } finally {
    client.close();
  }
}

/**
 * An installation in `eso` whose CA comes from `issuer`, the anchors in `org-roots` (a Secret
 * unless told), a labelled Service in `provider`, as `kubeConfig`'s identity (the admin unless
 * told); started, or failing the test if its start waits for the issuer or the anchors.
 */
async function installation(
  eso: string,
  provider: string,
  issuer: IssuerReference,
  { kubeConfig = suite.plane.adminKubeConfig, anchorsIn = 'Secret' }: { kubeConfig?: KubeConfig; anchorsIn?: 'Secret' | 'ConfigMap' } = {},
): Promise<RecordingAdapter> {
  const { cluster } = suite;
  await cluster.namespace(eso);
  await cluster.namespace(provider);
  const org = await opensslP256Ca('eso-mtls test organisation root');
  const roots =
    anchorsIn === 'Secret'
      ? { path: corePath('secrets', eso), body: { metadata: { name: 'org-roots' }, data: { 'ca.crt': b64(org.cert) } } }
      : { path: corePath('configmaps', eso), body: { metadata: { name: 'org-roots' }, data: { 'ca.crt': org.cert } } };
  await admin((c) => c.create(roots.path, roots.body));
  await cluster.labelledService(provider, 'provider');
  const started = startAdapter(kubeConfig, eso, {
    caSource: { kind: 'issuer', issuer, trustAnchors: { kind: anchorsIn, name: 'org-roots', key: 'ca.crt' }, requestDeadline: hours(1) },
    now: Date.now,
    unservedRelistMs: 500,
  });
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the adapter of ${eso} did not start in ${WAIT} ms: its start waits for the issuer's API`)), WAIT);
  });
  try {
    return await Promise.race([started, waited]);
  } finally {
    clearTimeout(timer);
  }
}

/** The upstream problems of a fresh round, as `reason: message`. */
async function problems(run: RecordingAdapter): Promise<string[]> {
  const round = await run.adapter.reconcileNow();
  return (round?.plan.upstream?.problems ?? []).map((p) => `${p.reason}: ${p.message}`);
}

/** A ClusterRole `name` with `rules`, bound to the ServiceAccount `controller` of `namespace`. */
async function grant(client: KubeRestClient, name: string, namespace: string, rules: readonly object[]): Promise<void> {
  const rbac = '/apis/rbac.authorization.k8s.io/v1';
  await client.create(`${rbac}/clusterroles`, { metadata: { name }, rules });
  await client.create(`${rbac}/clusterrolebindings`, {
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: [{ kind: 'ServiceAccount', name: 'controller', namespace }],
  });
}

/** Sets the issuer's Ready condition, as its issuer controller would. */
const markReady = (path: string): Promise<unknown> =>
  admin((c) =>
    c.mergePatch(`${path}/status`, {
      status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KeyPairVerified', message: 'ready', lastTransitionTime: new Date().toISOString() }] },
    }),
  );

/**
 * cert-manager's CRDs, namespace `eso` with a ServiceAccount `controller` bound to `rules` only, and
 * a Ready ClusterIssuer `issuerName`: the kubeconfig of that ServiceAccount and the issuer's reference.
 */
async function restrictedController(eso: string, issuerName: string, rules: readonly object[]): Promise<{ kc: KubeConfig; issuer: IssuerReference }> {
  await installCertManagerCrds(suite.plane);
  await suite.cluster.namespace(eso);
  await admin(async (c) => {
    await c.create(corePath('serviceaccounts', eso), { metadata: { name: 'controller' } });
    await grant(c, `${eso}-controller`, eso, rules);
    await c.create('/apis/cert-manager.io/v1/clusterissuers', {
      apiVersion: 'cert-manager.io/v1',
      kind: 'ClusterIssuer',
      metadata: { name: issuerName },
      spec: { selfSigned: {} },
    });
  });
  await markReady(`/apis/cert-manager.io/v1/clusterissuers/${issuerName}`);
  const { kc } = await serviceAccountKubeConfig(suite.plane.adminKubeConfig, suite.plane.url, suite.plane.caPem, eso, 'controller');
  return { kc, issuer: { kind: 'ClusterIssuer', name: issuerName, group: 'cert-manager.io' } };
}

/** Our CertificateRequest in `eso`, once the adapter sent it. */
const sentRequest = (eso: string): Promise<CertificateRequestObject> =>
  eventually(async () => (await admin((c) => c.get<{ items: CertificateRequestObject[] }>(caRequestPath(eso)))).items[0] ?? false, WAIT);

/** An external issuer's own namespaced kind, OrgIssuer in EXTERNAL_GROUP, served at v1beta1 only, as many external issuers are. */
async function installExternalIssuerCrd(): Promise<void> {
  const name = `orgissuers.${EXTERNAL_GROUP}`;
  await admin((c) =>
    c.create(CRDS, {
      metadata: { name },
      spec: {
        group: EXTERNAL_GROUP,
        scope: 'Namespaced',
        names: { kind: 'OrgIssuer', plural: 'orgissuers', singular: 'orgissuer', listKind: 'OrgIssuerList' },
        versions: [
          {
            name: 'v1beta1',
            served: true,
            storage: true,
            subresources: { status: {} },
            schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
          },
        ],
      },
    }),
  );
  await eventually(
    () =>
      admin(async (c) => {
        const crd = await c.get<{ status?: { conditions?: { type: string; status: string }[] } }>(`${CRDS}/${name}`);
        return crd.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True') ?? false;
      }),
    WAIT,
    `CRD ${name} Established`,
  );
}

describe('an issuer whose API is not served when the controller starts', () => {
  it("starts before cert-manager is installed, says issuer_missing naming cert-manager's CRDs, and asks the issuer once they are installed", async () => {
    const issuer: IssuerReference = { kind: 'ClusterIssuer', name: 'org-ca', group: 'cert-manager.io' };
    const run = await installation('eso-before-cm', 'before-cm-a', issuer);
    try {
      expect(await problems(run)).toContainEqual(
        "issuer_missing: issuer/ClusterIssuer/org-ca: ClusterIssuer org-ca cannot be read: the apiserver does not serve the API group cert-manager.io; install cert-manager's CRDs (looked for again meanwhile), or fix --ca-issuer",
      );
      expect(run.writes.filter((w) => w.kind === 'serverLeaf' || w.kind === 'clientLeaf')).toEqual([]);

      await installCertManagerCrds(suite.plane);
      await admin((c) =>
        c.create('/apis/cert-manager.io/v1/clusterissuers', {
          apiVersion: 'cert-manager.io/v1',
          kind: 'ClusterIssuer',
          metadata: { name: 'org-ca' },
          spec: { selfSigned: {} },
        }),
      );
      // Found without a restart: no controller of cert-manager runs here, so it has no Ready condition yet.
      await eventually(async () => (await problems(run)).some((p) => p.startsWith('issuer_not_ready: ') && p.includes('no Ready condition yet')), WAIT);
      await markReady('/apis/cert-manager.io/v1/clusterissuers/org-ca');
      const request = await sentRequest('eso-before-cm');
      expect(request.spec.issuerRef).toEqual({ name: 'org-ca', kind: 'ClusterIssuer', group: 'cert-manager.io' });
      expect((await problems(run)).filter((p) => p.startsWith('issuer_'))).toEqual([]);
    } finally {
      await run.adapter.stop();
    }
  }, 600_000);

  it("finds an external issuer's own namespaced kind at the version its group serves (v1beta1 only), installed after the controller started", async () => {
    await installCertManagerCrds(suite.plane);
    const issuer: IssuerReference = { kind: 'OrgIssuer', name: 'org-external', group: EXTERNAL_GROUP };
    const run = await installation('eso-external', 'external-a', issuer);
    try {
      expect(await problems(run)).toContainEqual(
        `issuer_missing: issuer/OrgIssuer.${EXTERNAL_GROUP}/org-external: OrgIssuer.${EXTERNAL_GROUP} eso-external/org-external cannot be read: the apiserver does not serve the API group ${EXTERNAL_GROUP}; install the CRDs of the issuer of ${EXTERNAL_GROUP} (looked for again meanwhile), or fix --ca-issuer`,
      );

      await installExternalIssuerCrd();
      const issuers = `/apis/${EXTERNAL_GROUP}/v1beta1/namespaces/eso-external/orgissuers`;
      await admin((c) => c.create(issuers, { apiVersion: `${EXTERNAL_GROUP}/v1beta1`, kind: 'OrgIssuer', metadata: { name: 'org-external' }, spec: {} }));
      await eventually(async () => (await problems(run)).some((p) => p.startsWith('issuer_not_ready: ')), WAIT);
      await markReady(`${issuers}/org-external`);
      const request = await sentRequest('eso-external');
      expect(request.spec.issuerRef).toEqual({ name: 'org-external', kind: 'OrgIssuer', group: EXTERNAL_GROUP });
      expect((await problems(run)).filter((p) => p.startsWith('issuer_'))).toEqual([]);
    } finally {
      await run.adapter.stop();
    }
  }, 600_000);

  it('starts when its RBAC does not name the issuer (a misspelt resource), says so, and reads the issuer once a rule allows it', async () => {
    const eso = 'eso-forbidden';
    // Every right the adapter uses here, but none on cert-manager's issuers.
    const { kc, issuer } = await restrictedController(eso, 'org-forbidden', [
      { apiGroups: ['', 'events.k8s.io'], resources: ['*'], verbs: ['*'] },
      { apiGroups: ['cert-manager.io'], resources: ['certificaterequests'], verbs: ['*'] },
    ]);
    const run = await installation(eso, 'forbidden-a', issuer, { kubeConfig: kc });
    try {
      expect(await problems(run)).toContainEqual(
        expect.stringMatching(
          /^issuer_missing: issuer\/ClusterIssuer\/org-forbidden: ClusterIssuer org-forbidden cannot be read: the apiserver refused its list \(.*403.*\); check the controller's RBAC on it/,
        ),
      );

      // The rule the chart would have given: read on the one ClusterIssuer.
      await admin((c) =>
        grant(c, 'eso-forbidden-issuer', eso, [
          { apiGroups: ['cert-manager.io'], resources: ['clusterissuers'], resourceNames: ['org-forbidden'], verbs: ['get', 'list', 'watch'] },
        ]),
      );
      // The cache lists again after its backoff, and the issuer reads as Ready: no issuer problem stands.
      await eventually(async () => (await problems(run)).every((p) => !p.startsWith('issuer_')), WAIT);
      // Meanwhile its Secret rounds ran: the request was made, as with an issuer not Ready.
      expect((await sentRequest(eso)).spec.issuerRef).toEqual({ name: 'org-forbidden', kind: 'ClusterIssuer', group: 'cert-manager.io' });
    } finally {
      await run.adapter.stop();
    }
  }, 600_000);

  it('starts when its RBAC does not name the trust anchors, says anchors_unreadable quoting the apiserver, and reads them once a rule allows it', async () => {
    const eso = 'eso-anchors-denied';
    // Every right the adapter uses here but read on ConfigMaps, where the anchors are.
    const { kc, issuer } = await restrictedController(eso, 'org-anchors-denied', [
      { apiGroups: [''], resources: ['secrets', 'services', 'namespaces', 'events'], verbs: ['*'] },
      { apiGroups: ['events.k8s.io'], resources: ['*'], verbs: ['*'] },
      { apiGroups: ['cert-manager.io'], resources: ['certificaterequests', 'clusterissuers'], verbs: ['*'] },
    ]);
    const run = await installation(eso, 'anchors-denied-a', issuer, { kubeConfig: kc, anchorsIn: 'ConfigMap' });
    try {
      const denied = (await problems(run)).filter((p) => p.startsWith('anchors_unreadable: '));
      expect(denied).toEqual([
        expect.stringMatching(
          new RegExp(
            `^anchors_unreadable: .*ConfigMap ${eso}/org-roots cannot be read: .*403.*; check the controller's RBAC on it \\(its resourceNames\\), or fix --ca-trust-anchors$`,
          ),
        ),
      ]);
      // Nothing was issued meanwhile: the Secret rounds wait for an intermediate, which needs the anchors to be checked.
      expect(run.writes.filter((w) => w.kind === 'serverLeaf' || w.kind === 'clientLeaf')).toEqual([]);

      // The rule the chart gives: read on the one ConfigMap, by name.
      await admin((c) =>
        grant(c, 'eso-anchors-denied-roots', eso, [
          { apiGroups: [''], resources: ['configmaps'], resourceNames: ['org-roots'], verbs: ['get', 'list', 'watch'] },
        ]),
      );
      await eventually(async () => (await problems(run)).every((p) => !p.startsWith('anchors_')), WAIT, 'the anchors read once allowed');
      expect((await sentRequest(eso)).spec.issuerRef).toEqual({ name: 'org-anchors-denied', kind: 'ClusterIssuer', group: 'cert-manager.io' });
    } finally {
      await run.adapter.stop();
    }
  }, 600_000);
});
