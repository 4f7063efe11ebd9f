import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  AuthorizationV1Api,
  CoreV1Api,
  type KubeConfig,
  type KubernetesObject,
  PatchStrategy,
  RbacAuthorizationV1Api,
  type V1Namespace,
  type V1Service,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { DEFAULT_POLICY, PROVIDER_LABEL } from '@eso-mtls/core';
import { type ControlPlane, startControlPlane } from '../envtest/src/index.js';
import { applyAll, kustomizeBuild } from '@eso-mtls/test-kit/manifests';
import { type Answer, answer, rawAnswer, untilAnswer } from '@eso-mtls/test-kit/answers';

// Threat T3 through subresources (issue 23 item 7): a tenant owning its namespace (a Role with
// every verb on every resource there) must not gain either label through a subresource that
// stores metadata.labels (namespaces/status, namespaces/finalize, services/status). The
// subresources are those the apiserver's discovery lists at test time, not a list written here.
// Scale: one control plane, two namespaces, two Services; a few dozen requests.

const POLICY = 'deploy/overlays/provider-label-policy/policy';
const ESO_NS = DEFAULT_POLICY.esoNamespace;
const ALLOW_LABEL = 'eso-mtls.io/providers-allowed';
const TENANT = { name: 'tenant', groups: ['tenants'] };
// Who finalizes a deleted namespace (kube-controller-manager's namespace controller); not an admin.
const NAMESPACE_CONTROLLER = { name: 'system:kube-controller-manager' };
const TEAM = 'team-d';
const WRITE_VERBS = ['create', 'update', 'patch'] as const;
const HTTP_METHOD: Record<(typeof WRITE_VERBS)[number], string> = { create: 'POST', update: 'PUT', patch: 'PATCH' };

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** A subresource of services or namespaces and the write verbs discovery lists for it. */
interface Subresource {
  readonly resource: 'services' | 'namespaces';
  readonly name: string;
  readonly verbs: readonly (typeof WRITE_VERBS)[number][];
}

/** What one write through a subresource did. */
interface Attempt {
  readonly target: string;
  /** The same write with an unrelated label: whether it was stored (the subresource keeps labels, RBAC lets the tenant). */
  readonly unrelatedLabelStored: boolean;
  readonly answer: Answer;
  /** Whether our label is on the object afterwards. */
  readonly ourLabelStored: boolean;
}

async function discoverSubresources(admin: CoreV1Api): Promise<Subresource[]> {
  const { resources } = await admin.getAPIResources();
  return resources
    .filter((r) => /^(services|namespaces)\/./.test(r.name))
    .map((r) => {
      const [resource, name] = r.name.split('/') as [Subresource['resource'], string];
      return { resource, name, verbs: WRITE_VERBS.filter((v) => r.verbs.includes(v)) };
    })
    .filter((s) => s.verbs.length > 0);
}

describe('provider-label policy: subresources of Services and Namespaces, as a namespace owner', () => {
  let plane: ControlPlane;
  let admin: CoreV1Api;
  let tenantKc: KubeConfig;
  let subresources: Subresource[];
  const extraGrants: string[] = [];

  const read = (s: Subresource): Promise<KubernetesObject> =>
    s.resource === 'namespaces' ? admin.readNamespace({ name: TEAM }) : admin.readNamespacedService({ namespace: TEAM, name: 'owned' });
  const path = (s: Subresource) =>
    s.resource === 'namespaces' ? `/api/v1/namespaces/${TEAM}/${s.name}` : `/api/v1/namespaces/${TEAM}/services/owned/${s.name}`;
  const ourLabel = (s: Subresource) => (s.resource === 'namespaces' ? ALLOW_LABEL : PROVIDER_LABEL);

  /** Adds `labels` through subresource `s` with `verb`, as the tenant: a merge patch, or the whole object for create and update. */
  async function write(s: Subresource, verb: Subresource['verbs'][number], labels: Record<string, string>): Promise<Answer> {
    if (verb === 'patch') return rawAnswer(tenantKc, 'PATCH', path(s), { metadata: { labels } }, 'application/merge-patch+json');
    const current = await read(s);
    const body = { ...current, metadata: { ...current.metadata, labels: { ...current.metadata!.labels, ...labels } } };
    return rawAnswer(tenantKc, HTTP_METHOD[verb], path(s), body);
  }

  /** Grants the tenant `verb` on subresource `s` of its own objects if its namespace Role does not already. */
  async function grantIfMissing(s: Subresource, verb: string): Promise<void> {
    const review = await tenantKc.makeApiClient(AuthorizationV1Api).createSelfSubjectAccessReview({
      body: {
        spec: { resourceAttributes: { verb, resource: s.resource, subresource: s.name, namespace: TEAM, name: s.resource === 'namespaces' ? TEAM : 'owned' } },
      },
    });
    if (review.status!.allowed) return;
    const name = `tenant-${s.resource}-${s.name}-${verb}`;
    const rbac = plane.adminKubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createClusterRole({
      body: { metadata: { name }, rules: [{ apiGroups: [''], resources: [`${s.resource}/${s.name}`], resourceNames: [TEAM, 'owned'], verbs: [verb] }] },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: TENANT.name }],
      },
    });
    extraGrants.push(`${s.resource}/${s.name} ${verb}`);
  }

  beforeAll(async () => {
    plane = await startControlPlane({ identities: [TENANT, NAMESPACE_CONTROLLER] });
    admin = plane.adminKubeConfig.makeApiClient(CoreV1Api);
    tenantKc = plane.kubeconfigFor(TENANT.name);
    const rbac = plane.adminKubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await admin.createNamespace({ body: { metadata: { name: ESO_NS } } });
    await admin.createNamespace({ body: { metadata: { name: TEAM } } });
    // The common "namespace owner" Role: every verb on every resource (and subresource) in its namespace.
    await rbac.createNamespacedRole({
      namespace: TEAM,
      body: { metadata: { name: 'namespace-owner' }, rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }] },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: TEAM,
      body: {
        metadata: { name: 'namespace-owner' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'namespace-owner' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: TENANT.name }],
      },
    });
    const tenant = tenantKc.makeApiClient(CoreV1Api);
    await tenant.createNamespacedService({ namespace: TEAM, body: { metadata: { name: 'owned' }, spec: { ports: [{ port: 8443 }] } } });

    subresources = await discoverSubresources(admin);
    for (const s of subresources) for (const verb of s.verbs) await grantIfMissing(s, verb);

    await applyAll(plane.adminKubeConfig, kustomizeBuild(POLICY));
    // The main resources are refused first: then the policies have reached admission.
    await untilAnswer(
      'the tenant labelling its namespace',
      () => tenant.patchNamespace({ name: TEAM, body: { metadata: { labels: { [ALLOW_LABEL]: 'true' } } } }, merge),
      403,
      () => admin.patchNamespace({ name: TEAM, body: { metadata: { labels: { [ALLOW_LABEL]: null } } } }, merge),
    );
    await untilAnswer(
      'the tenant labelling its Service',
      () => tenant.patchNamespacedService({ namespace: TEAM, name: 'owned', body: { metadata: { labels: { [PROVIDER_LABEL]: 'true' } } } }, merge),
      403,
      () => admin.patchNamespacedService({ namespace: TEAM, name: 'owned', body: { metadata: { labels: { [PROVIDER_LABEL]: null } } } }, merge),
    );
  }, 180_000);
  afterAll(async () => {
    await plane?.stop();
  });

  it('finds the subresources that store labels in discovery', () => {
    const names = subresources.map((s) => `${s.resource}/${s.name}`);
    // Not the list the test walks (that is discovery's), only a floor: the three of the report.
    expect(names).toEqual(expect.arrayContaining(['namespaces/status', 'namespaces/finalize', 'services/status']));
  });

  it('refuses the tenant either label through every subresource and write verb, which pass other label changes', async () => {
    const attempts: Attempt[] = [];
    for (const s of subresources) {
      for (const verb of s.verbs) {
        const unrelated = `probe.example.com/${s.name}-${verb}`;
        await write(s, verb, { [unrelated]: 'x' });
        const unrelatedLabelStored = (await read(s)).metadata!.labels?.[unrelated] === 'x';
        const attempt = await write(s, verb, { [ourLabel(s)]: 'true' });
        const ourLabelStored = (await read(s)).metadata!.labels?.[ourLabel(s)] !== undefined;
        attempts.push({ target: `${s.resource}/${s.name} ${verb}`, unrelatedLabelStored, answer: attempt, ourLabelStored });
      }
    }
    expect(attempts.filter((a) => a.ourLabelStored)).toEqual([]);
    // Where the subresource keeps labels the tenant may write, the refusal is the policy's.
    const judged = attempts.filter((a) => a.unrelatedLabelStored);
    expect(judged.map((a) => a.target)).toEqual(expect.arrayContaining(['namespaces/status patch', 'namespaces/finalize update', 'services/status patch']));
    for (const a of judged) {
      expect({ target: a.target, code: a.answer.code }).toEqual({ target: a.target, code: 403 });
      expect(a.answer.message).toMatch(/ValidatingAdmissionPolicy 'eso-mtls-controller-provider-(namespaces|services)'/);
    }
    // For the report: which verbs the namespace Role lacked and the test granted.
    console.info(`subresource writes granted beyond the namespace-owner Role: ${extraGrants.join(', ') || 'none'}`);
  });

  it('leaves status writes and namespace finalization alone when they keep our labels as they were', async () => {
    // A labelled Service in a namespace an admin labelled, then revoked: a status writer (a load
    // balancer controller) keeps working though the policy would refuse the label there now.
    await admin.createNamespace({ body: { metadata: { name: 'team-gone', labels: { [ALLOW_LABEL]: 'true' } } } });
    const svc: V1Service = { metadata: { name: 'vault', labels: { [PROVIDER_LABEL]: 'true' } }, spec: { type: 'LoadBalancer', ports: [{ port: 8443 }] } };
    await admin.createNamespacedService({ namespace: 'team-gone', body: svc });
    await admin.patchNamespace({ name: 'team-gone', body: { metadata: { labels: { [ALLOW_LABEL]: null } } } }, merge);
    const statusWrite = await answer(
      admin.patchNamespacedServiceStatus(
        { namespace: 'team-gone', name: 'vault', body: { status: { loadBalancer: { ingress: [{ ip: '192.0.2.1' }] } } } },
        merge,
      ),
    );
    expect(statusWrite).toEqual({ code: 200, message: '' });

    // Deleting a namespace that carries our label: the namespace controller (not a listed admin)
    // finalizes it through namespaces/finalize, and it is gone.
    await admin.patchNamespace({ name: 'team-gone', body: { metadata: { labels: { [ALLOW_LABEL]: 'true' } } } }, merge);
    const rbac = plane.adminKubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createClusterRole({
      body: {
        metadata: { name: 'test-namespace-finalizer' },
        rules: [
          { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'delete'] },
          { apiGroups: [''], resources: ['namespaces/finalize'], verbs: ['update'] },
        ],
      },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: 'test-namespace-finalizer' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'test-namespace-finalizer' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: NAMESPACE_CONTROLLER.name }],
      },
    });
    const controllerKc = plane.kubeconfigFor(NAMESPACE_CONTROLLER.name);
    const controller = controllerKc.makeApiClient(CoreV1Api);
    await admin.deleteNamespacedService({ namespace: 'team-gone', name: 'vault' });
    await controller.deleteNamespace({ name: 'team-gone' });
    const terminating: V1Namespace = await controller.readNamespace({ name: 'team-gone' });
    expect(terminating.status!.phase).toBe('Terminating');
    const finalized = await rawAnswer(controllerKc, 'PUT', '/api/v1/namespaces/team-gone/finalize', { ...terminating, spec: { finalizers: [] } });
    expect(finalized).toEqual({ code: 200, message: '' });
    expect((await answer(admin.readNamespace({ name: 'team-gone' }))).code).toBe(404);
  });
});
