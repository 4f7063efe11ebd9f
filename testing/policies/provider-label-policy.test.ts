import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import {
  CoreV1Api,
  type KubeConfig,
  PatchStrategy,
  RbacAuthorizationV1Api,
  type V1ConfigMap,
  type V1Service,
  type V1ValidatingAdmissionPolicyBinding,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../envtest/src/index.js';
import { type Manifest, applyAll, find, kustomizeBuild, kustomizeInstall, serviceAccountKubeConfig } from '@eso-mtls/test-kit/manifests';
import { repoRoot } from '@eso-mtls/test-kit/repo';
import { Helm, chartDir } from '@eso-mtls/test-kit/helm';
import { answer, untilAnswer } from '@eso-mtls/test-kit/answers';

// Threat T3, who may label a Service: the policies of deploy/overlays/provider-label-policy on a
// real apiserver, exercised by identities with static tokens and a real ServiceAccount token. RBAC
// lets every identity here write Services and Namespaces, so each refusal below is the policy's.

const OVERLAY = 'deploy/overlays/provider-label-policy';
const ESO_NS = 'external-secrets-system';
const PARAMS = 'eso-mtls-controller-provider-label';
const PROVIDER_LABEL = 'external-secrets.io/provider';
const ALLOW_LABEL = 'eso-mtls.io/providers-allowed';
const TENANT = { name: 'tenant', groups: ['tenants'] };
const PLATFORM_ADMIN = { name: 'platform-admin', groups: ['platform-admins'] };
const DEPLOYER = { name: 'deployer', groups: ['deployers', 'tenants'] };

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

function service(namespace: string, name: string, labels: Record<string, string> = { [PROVIDER_LABEL]: 'true' }): V1Service {
  return { metadata: { name, namespace, labels }, spec: { ports: [{ name: 'grpc', port: 8443 }] } };
}

/** Everyone in these groups may write Services and Namespaces: RBAC is not what refuses them. */
async function grantServiceAndNamespaceWrites(admin: KubeConfig, groups: readonly string[], serviceAccounts: readonly [string, string][]): Promise<void> {
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createClusterRole({
    body: {
      metadata: { name: 'test-service-and-namespace-writer' },
      rules: [
        { apiGroups: [''], resources: ['services'], verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'] },
        { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'create', 'update', 'patch'] },
      ],
    },
  });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: 'test-service-and-namespace-writer' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'test-service-and-namespace-writer' },
      subjects: [
        ...groups.map((name) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name })),
        ...serviceAccounts.map(([namespace, name]) => ({ kind: 'ServiceAccount', namespace, name })),
      ],
    },
  });
}

describe('provider-label policy (deploy/overlays/provider-label-policy) on a real apiserver', () => {
  let plane: ControlPlane;
  let admin: CoreV1Api;
  let tenant: CoreV1Api;
  let rbacAlone: { code: number };

  /** Sets parameters of the shipped ConfigMap, as a cluster admin would edit it. */
  const setParams = (data: Record<string, string>) => admin.patchNamespacedConfigMap({ namespace: ESO_NS, name: PARAMS, body: { data } }, merge);
  const labelNamespace = (api: CoreV1Api, name: string, value: string | null) =>
    api.patchNamespace({ name, body: { metadata: { labels: { [ALLOW_LABEL]: value } } } }, merge);

  beforeAll(async () => {
    plane = await startControlPlane({ identities: [TENANT, PLATFORM_ADMIN, DEPLOYER] });
    admin = plane.adminKubeConfig.makeApiClient(CoreV1Api);
    tenant = plane.kubeconfigFor(TENANT.name).makeApiClient(CoreV1Api);
    await admin.createNamespace({ body: { metadata: { name: 'ci' } } });
    await admin.createNamespacedServiceAccount({ namespace: 'ci', body: { metadata: { name: 'deployer' } } });
    await grantServiceAndNamespaceWrites(plane.adminKubeConfig, ['tenants', 'platform-admins', 'deployers'], [['ci', 'deployer']]);
    await admin.createNamespace({ body: { metadata: { name: 'team-closed' } } });
    await admin.createNamespace({ body: { metadata: { name: 'team-open', labels: { [ALLOW_LABEL]: 'true' } } } });

    // Before the policy: RBAC alone lets the tenant label a Service anywhere.
    rbacAlone = await answer(tenant.createNamespacedService({ namespace: 'team-closed', body: service('team-closed', 'before-policy') }));
    await admin.deleteNamespacedService({ namespace: 'team-closed', name: 'before-policy' }).catch(() => undefined);

    await applyAll(plane.adminKubeConfig, kustomizeInstall(OVERLAY));
    await untilAnswer(
      'a labelled Service in a namespace not allowed',
      () => tenant.createNamespacedService({ namespace: 'team-closed', body: service('team-closed', 'probe') }),
      403,
      () => admin.deleteNamespacedService({ namespace: 'team-closed', name: 'probe' }),
    );
    await untilAnswer(
      'the tenant labelling its namespace',
      () => labelNamespace(tenant, 'team-closed', 'true'),
      403,
      () => labelNamespace(admin, 'team-closed', null),
    );
  }, 180_000);
  afterAll(async () => {
    await plane?.stop();
  });

  it('is what refuses: before it, RBAC alone let the tenant label a Service in any namespace', () => {
    expect(rbacAlone.code).toBe(200);
  });

  it('refuses a tenant a labelled Service in a namespace no admin has allowed, on create', async () => {
    const created = await answer(tenant.createNamespacedService({ namespace: 'team-closed', body: service('team-closed', 'vault') }));
    expect(created.code).toBe(403);
    expect(created.message).toContain("ValidatingAdmissionPolicy 'eso-mtls-controller-provider-services'");
    expect(created.message).toContain(
      `a Service may carry ${PROVIDER_LABEL} only in a namespace a cluster admin has labelled ${ALLOW_LABEL}=true; namespace team-closed is not`,
    );
    expect((await answer(admin.readNamespacedService({ namespace: 'team-closed', name: 'vault' }))).code).toBe(404);
    // A cluster admin is held to the same rule: the namespace label is the one gate.
    expect((await answer(admin.createNamespacedService({ namespace: 'team-closed', body: service('team-closed', 'vault') }))).code).toBe(403);
  });

  it('refuses adding the label to an existing Service later, by patch and by update', async () => {
    expect((await answer(tenant.createNamespacedService({ namespace: 'team-closed', body: service('team-closed', 'later', {}) }))).code).toBe(200);
    const patched = await answer(
      tenant.patchNamespacedService({ namespace: 'team-closed', name: 'later', body: { metadata: { labels: { [PROVIDER_LABEL]: 'true' } } } }, merge),
    );
    expect(patched.code).toBe(403);
    expect(patched.message).toContain('namespace team-closed is not');
    const current = await tenant.readNamespacedService({ namespace: 'team-closed', name: 'later' });
    const replaced = await answer(
      tenant.replaceNamespacedService({
        namespace: 'team-closed',
        name: 'later',
        body: { ...current, metadata: { ...current.metadata, labels: { [PROVIDER_LABEL]: 'true' } } },
      }),
    );
    expect(replaced.code).toBe(403);
    expect((await admin.readNamespacedService({ namespace: 'team-closed', name: 'later' })).metadata!.labels).toBeUndefined();
    // Unlabelled Services are none of the policy's business.
    expect(
      (await answer(tenant.patchNamespacedService({ namespace: 'team-closed', name: 'later', body: { metadata: { labels: { tier: 'backend' } } } }, merge)))
        .code,
    ).toBe(200);
  });

  it('allows the path an admin opened: labelled on create, and labelled later, in an allowed namespace', async () => {
    expect((await answer(tenant.createNamespacedService({ namespace: 'team-open', body: service('team-open', 'vault') }))).code).toBe(200);
    expect((await answer(tenant.createNamespacedService({ namespace: 'team-open', body: service('team-open', 'aws', {}) }))).code).toBe(200);
    const labelled = await answer(
      tenant.patchNamespacedService({ namespace: 'team-open', name: 'aws', body: { metadata: { labels: { [PROVIDER_LABEL]: 'true' } } } }, merge),
    );
    expect(labelled.code).toBe(200);
    expect((await admin.readNamespacedService({ namespace: 'team-open', name: 'aws' })).metadata!.labels).toEqual({ [PROVIDER_LABEL]: 'true' });
  });

  it('after an admin revokes a namespace, lets its labelled Services be edited and unlabelled, but not relabelled', async () => {
    await admin.createNamespace({ body: { metadata: { name: 'team-revoked', labels: { [ALLOW_LABEL]: 'true' } } } });
    expect((await answer(tenant.createNamespacedService({ namespace: 'team-revoked', body: service('team-revoked', 'gcp') }))).code).toBe(200);
    await labelNamespace(admin, 'team-revoked', null);
    const edit = (labels: Record<string, string | null>, annotations: Record<string, string> = {}) =>
      answer(tenant.patchNamespacedService({ namespace: 'team-revoked', name: 'gcp', body: { metadata: { labels, annotations } } }, merge));
    // An edit that keeps the label as it was is not judged: finalizers and annotations still work.
    expect((await edit({}, { 'example.com/owner': 'team' })).code).toBe(200);
    expect((await edit({ [PROVIDER_LABEL]: 'yes' })).code).toBe(403);
    expect((await edit({ [PROVIDER_LABEL]: null })).code).toBe(200);
    expect((await edit({ [PROVIDER_LABEL]: 'true' })).code).toBe(403);
  });

  it('refuses a tenant the namespace label: granting it, creating a namespace with it, changing or removing an admin-set one', async () => {
    const granted = await answer(labelNamespace(tenant, 'team-closed', 'true'));
    expect(granted.code).toBe(403);
    expect(granted.message).toContain("ValidatingAdmissionPolicy 'eso-mtls-controller-provider-namespaces'");
    expect(granted.message).toContain(
      `only the users [] and the groups [system:masters] may set, change or remove the namespace label ${ALLOW_LABEL}, not tenant`,
    );
    expect((await admin.readNamespace({ name: 'team-closed' })).metadata!.labels![ALLOW_LABEL]).toBeUndefined();
    expect((await answer(tenant.createNamespace({ body: { metadata: { name: 'team-new', labels: { [ALLOW_LABEL]: 'true' } } } }))).code).toBe(403);
    expect((await answer(labelNamespace(tenant, 'team-open', 'false'))).code).toBe(403);
    expect((await answer(labelNamespace(tenant, 'team-open', null))).code).toBe(403);
    expect((await admin.readNamespace({ name: 'team-open' })).metadata!.labels![ALLOW_LABEL]).toBe('true');
    // Other labels of the namespace stay the tenant's (as far as RBAC lets it), and so does a namespace without ours.
    expect((await answer(tenant.patchNamespace({ name: 'team-open', body: { metadata: { labels: { tier: 'gold' } } } }, merge))).code).toBe(200);
    expect((await answer(tenant.createNamespace({ body: { metadata: { name: 'team-plain' } } }))).code).toBe(200);
    // The default admin group may.
    expect((await answer(labelNamespace(admin, 'team-plain', 'true'))).code).toBe(200);
  });

  it('lets the admin groups and users listed in its parameters set the namespace label, and no one else', async () => {
    const platformAdmin = plane.kubeconfigFor(PLATFORM_ADMIN.name).makeApiClient(CoreV1Api);
    expect((await answer(labelNamespace(platformAdmin, 'team-closed', 'true'))).code).toBe(403);
    await setParams({ namespaceLabelGroups: 'system:masters, platform-admins' });
    await untilAnswer('the platform admin labelling a namespace', () => labelNamespace(platformAdmin, 'team-closed', 'true'), 200);
    expect((await answer(labelNamespace(platformAdmin, 'team-closed', null))).code).toBe(200);
    expect((await answer(labelNamespace(tenant, 'team-closed', 'true'))).code).toBe(403);
    await setParams({ namespaceLabelUsers: 'tenant' });
    await untilAnswer('the tenant, listed as a user, labelling a namespace', () => labelNamespace(tenant, 'team-closed', 'true'), 200);
    await labelNamespace(admin, 'team-closed', null);
    await setParams({ namespaceLabelGroups: 'system:masters', namespaceLabelUsers: '' });
    await untilAnswer(
      'the tenant, no longer listed',
      () => labelNamespace(tenant, 'team-closed', 'true'),
      403,
      () => labelNamespace(admin, 'team-closed', null),
    );
  });

  it('with requester lists, lets only the listed groups and ServiceAccounts label a Service, in an allowed namespace only', async () => {
    await setParams({ serviceLabelGroups: 'deployers', serviceLabelUsers: 'system:serviceaccount:ci:deployer' });
    const refused = await untilAnswer(
      'the tenant, not listed, labelling a Service',
      () => tenant.createNamespacedService({ namespace: 'team-open', body: service('team-open', 'unlisted') }),
      403,
      () => admin.deleteNamespacedService({ namespace: 'team-open', name: 'unlisted' }),
    );
    expect(refused.message).toContain(
      `only the users [system:serviceaccount:ci:deployer] and the groups [deployers] may give a Service the label ${PROVIDER_LABEL}, not tenant`,
    );
    const deployer = plane.kubeconfigFor(DEPLOYER.name).makeApiClient(CoreV1Api);
    expect((await answer(deployer.createNamespacedService({ namespace: 'team-open', body: service('team-open', 'by-group') }))).code).toBe(200);
    const { kc } = await serviceAccountKubeConfig(plane.adminKubeConfig, plane.url, plane.caPem, 'ci', 'deployer');
    const ci = kc.makeApiClient(CoreV1Api);
    expect((await answer(ci.createNamespacedService({ namespace: 'team-open', body: service('team-open', 'by-service-account') }))).code).toBe(200);
    // Being listed does not open a namespace an admin has not.
    const closed = await answer(ci.createNamespacedService({ namespace: 'team-closed', body: service('team-closed', 'by-service-account') }));
    expect(closed).toEqual({ code: 403, message: expect.stringContaining('namespace team-closed is not') });
  });

  it('contains a broken parameter ConfigMap: a missing list refuses only labelling, a missing label name stands the policy aside', async () => {
    const deployer = plane.kubeconfigFor(DEPLOYER.name).makeApiClient(CoreV1Api);
    await setParams({ serviceLabelGroups: null as unknown as string });
    const broken = await untilAnswer(
      'a listed deployer labelling a Service, its list gone',
      () => deployer.createNamespacedService({ namespace: 'team-open', body: service('team-open', 'broken') }),
      422,
      () => admin.deleteNamespacedService({ namespace: 'team-open', name: 'broken' }),
    );
    expect(broken.message).toContain('no such key: serviceLabelGroups');
    // Everything the policy does not guard goes on as before.
    expect((await answer(tenant.createNamespacedService({ namespace: 'team-closed', body: service('team-closed', 'plain', {}) }))).code).toBe(200);
    expect(
      (await answer(tenant.patchNamespacedService({ namespace: 'team-open', name: 'vault', body: { metadata: { annotations: { a: 'b' } } } }, merge))).code,
    ).toBe(200);
    await setParams({ serviceLabel: null as unknown as string });
    await untilAnswer(
      'a labelled Service in a namespace not allowed, the label name gone',
      () => tenant.createNamespacedService({ namespace: 'team-closed', body: service('team-closed', 'unguarded') }),
      200,
    );
  });
});

describe('provider-label policy in the Helm chart (providerLabelPolicy)', () => {
  const helm = new Helm();
  afterAll(() => helm.remove());
  const RELEASE_NS = 'platform-secrets';

  it('renders nothing of it by default', () => {
    const kinds = helm.template(chartDir, 'eso-mtls', ESO_NS).map((m) => `${m.kind}/${m.metadata!.name}`);
    expect(kinds.filter((k) => k.includes('provider-'))).toEqual([]);
  });

  it("renders the overlay's policies word for word, with the release's names and parameters from the values", () => {
    const base = kustomizeBuild(OVERLAY);
    const chart = helm.template(chartDir, 'platform', RELEASE_NS, {
      fullnameOverride: 'platform-eso-mtls',
      providerLabelPolicy: { enabled: true, serviceLabelGroups: ['deployers'], namespaceLabelGroups: ['system:masters', 'platform-admins'] },
    });
    for (const suffix of ['provider-services', 'provider-namespaces']) {
      const ours = find(chart, 'ValidatingAdmissionPolicy', `platform-eso-mtls-${suffix}`);
      expect(ours.spec).toEqual(find(base, 'ValidatingAdmissionPolicy', `eso-mtls-controller-${suffix}`).spec);
      const binding = find<V1ValidatingAdmissionPolicyBinding>(chart, 'ValidatingAdmissionPolicyBinding', `platform-eso-mtls-${suffix}`);
      expect(binding.spec).toEqual({
        policyName: `platform-eso-mtls-${suffix}`,
        paramRef: { name: 'platform-eso-mtls-provider-label', namespace: RELEASE_NS, parameterNotFoundAction: 'Allow' },
        validationActions: ['Deny'],
      });
    }
    const params = find<V1ConfigMap>(chart, 'ConfigMap', 'platform-eso-mtls-provider-label');
    expect(params.metadata!.namespace).toBe(RELEASE_NS);
    expect(params.data).toEqual({
      ...find<V1ConfigMap>(base, 'ConfigMap', PARAMS).data,
      serviceLabelGroups: 'deployers',
      namespaceLabelGroups: 'system:masters,platform-admins',
    });
  });

  it('gives, with default values, the parameters the overlay ships', () => {
    const chart = helm.template(chartDir, 'eso-mtls', ESO_NS, { providerLabelPolicy: { enabled: true } });
    const data = (ms: Manifest[]) => find<V1ConfigMap>(ms, 'ConfigMap', PARAMS).data;
    expect(data(chart)).toEqual(data(kustomizeBuild(OVERLAY)));
  });
});

describe('provider-label policy under an overlay namespace (kustomize)', () => {
  it.each([OVERLAY, `${OVERLAY}/policy`])("%s: moves the parameter ConfigMap and both bindings' paramRef together", (folder) => {
    const dir = mkdtempSync(join(tmpdir(), 'eso-mtls-label-ns-'));
    try {
      writeFileSync(join(dir, 'kustomization.yaml'), `namespace: platform-secrets\nresources:\n- ${relative(dir, resolve(repoRoot, folder))}\n`);
      const moved = kustomizeBuild(dir);
      expect(find<V1ConfigMap>(moved, 'ConfigMap', PARAMS).metadata!.namespace).toBe('platform-secrets');
      for (const suffix of ['provider-services', 'provider-namespaces']) {
        const binding = find<V1ValidatingAdmissionPolicyBinding>(moved, 'ValidatingAdmissionPolicyBinding', `eso-mtls-controller-${suffix}`);
        expect(binding.spec!.paramRef).toEqual({ name: PARAMS, namespace: 'platform-secrets', parameterNotFoundAction: 'Allow' });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
