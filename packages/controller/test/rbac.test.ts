import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  AdmissionregistrationV1Api,
  CoordinationV1Api,
  CoreV1Api,
  type KubeConfig,
  RbacAuthorizationV1Api,
  type V1Lease,
  type V1Secret,
  Watch,
} from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { answer } from '@eso-mtls/test-kit/answers';
import { applyAll, kustomizeBuild, kustomizeInstall, serviceAccountKubeConfig } from '@eso-mtls/test-kit/manifests';

// The shipped RBAC and admission policy on a real apiserver, exercised with a real token of the
// shipped ServiceAccount (TokenRequest): what the controller needs works, everything else is refused.
const ESO_NS = 'external-secrets-system';
const PROVIDER = 'external-secrets-provider-tls';
const LABELS = { 'app.kubernetes.io/managed-by': 'eso-mtls', 'app.kubernetes.io/component': 'provider-tls' };

function secret(namespace: string, name: string, extra: Partial<V1Secret> = {}): V1Secret {
  return { metadata: { name, namespace, labels: LABELS }, type: 'kubernetes.io/tls', data: { 'tls.crt': '', 'tls.key': '' }, ...extra };
}

function lease(name: string, extra: Partial<V1Lease['spec']> = {}): V1Lease {
  return { metadata: { name }, spec: { holderIdentity: 'x', leaseDurationSeconds: 15, ...extra } };
}

/**
 * Repeats `attempt` until it answers `code`: a new policy, binding or parameter takes a moment to
 * reach admission. `undo` removes what an attempt created in the meantime.
 */
async function untilAnswer(what: string, attempt: () => Promise<unknown>, code: number, undo: () => Promise<unknown> = async () => undefined): Promise<void> {
  const deadline = Date.now() + 20_000;
  let last = await answer(attempt());
  while (last.code !== code) {
    if (Date.now() > deadline) throw new Error(`${what}: still ${last.code} ${last.message} after 20 s, expected ${code}`);
    if (last.code === 200) await undo().catch(() => undefined);
    await new Promise((r) => setTimeout(r, 250));
    last = await answer(attempt());
  }
}

describe('shipped RBAC and admission policy, as the controller ServiceAccount', () => {
  let plane: ControlPlane;
  let admin: CoreV1Api;
  let sa: CoreV1Api;
  let saKc: KubeConfig;

  beforeAll(async () => {
    plane = await startControlPlane();
    await applyAll(plane.adminKubeConfig, kustomizeInstall('deploy'));
    admin = plane.adminKubeConfig.makeApiClient(CoreV1Api);
    for (const ns of ['team-a', 'team-b', 'kube-system-like']) await admin.createNamespace({ body: { metadata: { name: ns } } });
    await admin.createNamespacedSecret({ namespace: 'team-a', body: { metadata: { name: 'database-password' }, stringData: { password: 'x' } } });
    await admin.createNamespacedSecret({ namespace: 'team-a', body: secret('team-a', PROVIDER) });
    await admin.createNamespacedSecret({ namespace: ESO_NS, body: { metadata: { name: 'eso-core-credentials' }, stringData: { k: 'v' } } });
    saKc = (await serviceAccountKubeConfig(plane.adminKubeConfig, plane.url, plane.caPem, ESO_NS, 'eso-mtls-controller')).kc;
    sa = saKc.makeApiClient(CoreV1Api);
    await untilAnswer(
      'a Secret of another name',
      () => sa.createNamespacedSecret({ namespace: 'team-b', body: secret('team-b', 'probe') }),
      403,
      () => admin.deleteNamespacedSecret({ name: 'probe', namespace: 'team-b' }),
    );
    const adminLeases = plane.adminKubeConfig.makeApiClient(CoordinationV1Api);
    await untilAnswer(
      'a Lease of another name',
      () => saKc.makeApiClient(CoordinationV1Api).createNamespacedLease({ namespace: ESO_NS, body: lease('probe') }),
      403,
      () => adminLeases.deleteNamespacedLease({ name: 'probe', namespace: ESO_NS }),
    );
  }, 120_000);
  afterAll(async () => {
    await plane?.stop();
  });

  it('allows what the controller does: list/watch Services, and the provider Secret by name everywhere', async () => {
    expect((await answer(sa.listServiceForAllNamespaces({ labelSelector: 'external-secrets.io/provider=true' }))).code).toBe(200);
    expect((await answer(sa.listSecretForAllNamespaces({ fieldSelector: `metadata.name=${PROVIDER}` }))).code).toBe(200);
    expect((await answer(sa.readNamespacedSecret({ name: PROVIDER, namespace: 'team-a' }))).code).toBe(200);
    expect((await answer(sa.readNamespacedSecret({ name: PROVIDER, namespace: 'team-b' }))).code).toBe(404);
    expect((await answer(sa.listNamespacedSecret({ namespace: ESO_NS, fieldSelector: 'metadata.name=eso-provider-ca-internal' }))).code).toBe(200);
    const created = await answer(sa.createNamespacedSecret({ namespace: 'team-b', body: secret('team-b', PROVIDER) }));
    expect(created.code).toBe(200);
    const current = await sa.readNamespacedSecret({ name: PROVIDER, namespace: 'team-b' });
    expect(
      (await answer(sa.replaceNamespacedSecret({ name: PROVIDER, namespace: 'team-b', body: { ...current, data: { 'tls.crt': 'eA==', 'tls.key': 'eA==' } } })))
        .code,
    ).toBe(200);
    const ca = {
      metadata: { name: 'eso-provider-ca-internal', namespace: ESO_NS, labels: { ...LABELS, 'app.kubernetes.io/component': 'ca' } },
      type: 'Opaque',
    };
    expect((await answer(sa.createNamespacedSecret({ namespace: ESO_NS, body: ca }))).code).toBe(200);
    expect((await answer(sa.readNamespacedSecret({ name: 'eso-provider-ca-internal', namespace: ESO_NS }))).code).toBe(200);
    const events = await answer(
      sa.createNamespacedEvent({
        namespace: 'team-b',
        body: {
          metadata: { generateName: 'eso-mtls-' },
          involvedObject: { kind: 'Service', namespace: 'team-b', name: 'p' },
          reason: 'Issued',
          message: 'm',
          type: 'Normal',
        },
      }),
    );
    expect(events.code).toBe(200);
  });

  it('refuses get of any other Secret, in any namespace', async () => {
    for (const [namespace, name] of [
      ['team-a', 'database-password'],
      [ESO_NS, 'eso-core-credentials'],
      ['team-a', 'eso-provider-ca-internal'],
      ['team-b', 'no-such-secret'],
    ]) {
      const r = await answer(sa.readNamespacedSecret({ name: name!, namespace: namespace! }));
      expect({ namespace, name, code: r.code }).toEqual({ namespace, name, code: 403 });
    }
  });

  it('refuses delete of any Secret, ours included', async () => {
    for (const [namespace, name] of [
      ['team-a', PROVIDER],
      [ESO_NS, 'eso-provider-ca-internal'],
      ['team-a', 'database-password'],
    ]) {
      expect((await answer(sa.deleteNamespacedSecret({ name: name!, namespace: namespace! }))).code).toBe(403);
    }
    expect((await answer(sa.deleteCollectionNamespacedSecret({ namespace: 'team-a' }))).code).toBe(403);
  });

  it('refuses list and watch of Secrets without the name field selector', async () => {
    expect((await answer(sa.listSecretForAllNamespaces())).code).toBe(403);
    expect((await answer(sa.listNamespacedSecret({ namespace: 'team-a' }))).code).toBe(403);
    expect((await answer(sa.listNamespacedSecret({ namespace: ESO_NS }))).code).toBe(403);
    expect((await answer(sa.listSecretForAllNamespaces({ fieldSelector: 'metadata.name=database-password' }))).code).toBe(403);
    expect((await answer(sa.listSecretForAllNamespaces({ labelSelector: 'app.kubernetes.io/managed-by=eso-mtls' }))).code).toBe(403);
    // client-node's Watch hands a non-200 answer to its done callback with the HTTP status attached.
    const codeOf = (e: unknown): number => (e as { statusCode?: number } | undefined)?.statusCode ?? -1;
    const watchCode = await new Promise<number>((resolve) => {
      void new Watch(saKc)
        .watch(
          '/api/v1/secrets',
          {},
          () => resolve(200),
          (err: unknown) => resolve(codeOf(err)),
        )
        .then(
          (req) => setTimeout(() => req.abort(), 2000),
          (e: unknown) => resolve(codeOf(e)),
        );
    });
    expect(watchCode).toBe(403);
  });

  it('denies, by admission policy, creating a Secret of another name', async () => {
    const r = await answer(sa.createNamespacedSecret({ namespace: 'team-a', body: secret('team-a', 'my-own-secret') }));
    expect(r.code).toBe(403);
    expect(r.message).toContain("ValidatingAdmissionPolicy 'eso-mtls-controller-secret-writes'");
    expect(r.message).toContain(
      'may write only the Secrets external-secrets-provider-tls, eso-provider-ca-internal and eso-provider-client-tls, not my-own-secret',
    );
  });

  it('denies the service-account-token escalation: our name, type kubernetes.io/service-account-token', async () => {
    await admin.createNamespacedServiceAccount({ namespace: 'kube-system-like', body: { metadata: { name: 'powerful' } } });
    const r = await answer(
      sa.createNamespacedSecret({
        namespace: 'kube-system-like',
        body: {
          metadata: { name: PROVIDER, namespace: 'kube-system-like', labels: LABELS, annotations: { 'kubernetes.io/service-account.name': 'powerful' } },
          type: 'kubernetes.io/service-account-token',
        },
      }),
    );
    expect(r.code).toBe(403);
    expect(r.message).toContain('may write Secrets of type kubernetes.io/tls or Opaque only, not kubernetes.io/service-account-token');
    expect((await answer(admin.readNamespacedSecret({ name: PROVIDER, namespace: 'kube-system-like' }))).code).toBe(404);
  });

  it('denies our names without our labels, and the CA or client names outside the ESO namespace', async () => {
    const unlabelled = await answer(sa.createNamespacedSecret({ namespace: 'kube-system-like', body: { metadata: { name: PROVIDER }, type: 'Opaque' } }));
    expect(unlabelled.code).toBe(403);
    expect(unlabelled.message).toContain('must label the Secrets it writes app.kubernetes.io/managed-by=eso-mtls and app.kubernetes.io/component=provider-tls');
    const wrongComponent = await answer(
      sa.createNamespacedSecret({
        namespace: 'kube-system-like',
        body: secret('kube-system-like', PROVIDER, {
          metadata: { name: PROVIDER, labels: { ...LABELS, 'app.kubernetes.io/component': 'ca' } },
        }),
      }),
    );
    expect(wrongComponent.code).toBe(403);
    const caElsewhere = await answer(
      sa.createNamespacedSecret({
        namespace: 'team-a',
        body: secret('team-a', 'eso-provider-ca-internal', {
          metadata: { name: 'eso-provider-ca-internal', labels: { ...LABELS, 'app.kubernetes.io/component': 'ca' } },
        }),
      }),
    );
    expect(caElsewhere.code).toBe(403);
    expect(caElsewhere.message).toContain('may write eso-provider-ca-internal only in namespace external-secrets-system, not team-a');
    // An update that strips our labels is denied too; the Secret keeps them.
    const current = await sa.readNamespacedSecret({ name: PROVIDER, namespace: 'team-a' });
    const stripped = await answer(
      sa.replaceNamespacedSecret({ name: PROVIDER, namespace: 'team-a', body: { ...current, metadata: { ...current.metadata, labels: {} } } }),
    );
    expect(stripped.code).toBe(403);
  });

  it('applies the policy to the controller only: an admin may still create any Secret', async () => {
    expect((await answer(admin.createNamespacedSecret({ namespace: 'team-b', body: { metadata: { name: 'admins-own' }, stringData: { a: 'b' } } }))).code).toBe(
      200,
    );
  });

  it('allows leader election on the one Lease only', async () => {
    const coordination = saKc.makeApiClient(CoordinationV1Api);
    const lease = { metadata: { name: 'eso-mtls-controller', namespace: ESO_NS }, spec: { holderIdentity: 'x', leaseDurationSeconds: 15 } };
    expect((await answer(coordination.createNamespacedLease({ namespace: ESO_NS, body: lease }))).code).toBe(200);
    const read = await coordination.readNamespacedLease({ name: 'eso-mtls-controller', namespace: ESO_NS });
    expect((await answer(coordination.replaceNamespacedLease({ name: 'eso-mtls-controller', namespace: ESO_NS, body: read }))).code).toBe(200);
    expect((await answer(coordination.readNamespacedLease({ name: 'kube-controller-manager', namespace: ESO_NS }))).code).toBe(403);
    expect((await answer(coordination.createNamespacedLease({ namespace: 'team-a', body: { metadata: { name: 'eso-mtls-controller' } } }))).code).toBe(403);
    expect((await answer(coordination.deleteNamespacedLease({ name: 'eso-mtls-controller', namespace: ESO_NS }))).code).toBe(403);
  });

  it("denies, by admission policy, creating any other Lease in the leader-election namespace, ESO's own included", async () => {
    const coordination = saKc.makeApiClient(CoordinationV1Api);
    // ESO's leader-election Lease, taken over for 68 years: without the policy the Role's create allows it.
    const hijack = lease('external-secrets-controller', { holderIdentity: 'eso-mtls-controller', leaseDurationSeconds: 2_147_483_647 });
    const r = await answer(coordination.createNamespacedLease({ namespace: ESO_NS, body: hijack }));
    expect(r.code).toBe(403);
    expect(r.message).toContain("ValidatingAdmissionPolicy 'eso-mtls-controller-lease-creates'");
    expect(r.message).toContain(
      'eso-mtls-controller may create only its own leader-election Lease eso-mtls-controller (--leader-election-id), not external-secrets-controller',
    );
    const adminLeases = plane.adminKubeConfig.makeApiClient(CoordinationV1Api);
    expect((await answer(adminLeases.readNamespacedLease({ name: 'external-secrets-controller', namespace: ESO_NS }))).code).toBe(404);
    // Elsewhere RBAC refuses first; the policy's namespace rule is exercised with other parameters below.
    expect((await answer(coordination.createNamespacedLease({ namespace: 'team-a', body: lease('eso-mtls-controller') }))).code).toBe(403);
    // Others are not judged: an admin creates ESO's Lease as before.
    expect((await answer(adminLeases.createNamespacedLease({ namespace: ESO_NS, body: lease('external-secrets-controller') }))).code).toBe(200);
  });

  it('takes the identity, namespaces and names from its parameters: a second binding with other ones holds another controller', async () => {
    // Another installation: ServiceAccount ops/other-controller, its Lease other-lease in ops, its CA other-ca.
    const ns = 'ops';
    const kc = plane.adminKubeConfig;
    await admin.createNamespace({ body: { metadata: { name: ns } } });
    await admin.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'other-controller' } } });
    await admin.createNamespacedConfigMap({
      namespace: ns,
      body: {
        metadata: { name: 'other-params' },
        data: {
          serviceAccountNamespace: ns,
          serviceAccountName: 'other-controller',
          esoNamespace: ns,
          caSecretName: 'other-ca',
          clientSecretName: 'other-client',
          providerSecretName: PROVIDER,
          leaseNamespace: ns,
          leaseName: 'other-lease',
        },
      },
    });
    // RBAC as loose as the shipped Roles' create rules, in ops and in ESO's namespace, so only the policy stands in the way.
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    for (const namespace of [ns, ESO_NS]) {
      await rbac.createNamespacedRole({
        namespace,
        body: {
          metadata: { name: 'other-controller' },
          rules: [
            { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
            { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
          ],
        },
      });
      await rbac.createNamespacedRoleBinding({
        namespace,
        body: {
          metadata: { name: 'other-controller' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'other-controller' },
          subjects: [{ kind: 'ServiceAccount', name: 'other-controller', namespace: ns }],
        },
      });
    }
    const policies = kc.makeApiClient(AdmissionregistrationV1Api);
    for (const policyName of ['eso-mtls-controller-lease-creates', 'eso-mtls-controller-secret-writes']) {
      await policies.createValidatingAdmissionPolicyBinding({
        body: {
          metadata: { name: `other-${policyName}` },
          spec: { policyName, validationActions: ['Deny'], paramRef: { name: 'other-params', namespace: ns, parameterNotFoundAction: 'Allow' } },
        },
      });
    }
    const other = (await serviceAccountKubeConfig(kc, plane.url, plane.caPem, ns, 'other-controller')).kc;
    const leases = other.makeApiClient(CoordinationV1Api);
    const adminLeases = kc.makeApiClient(CoordinationV1Api);
    await untilAnswer(
      "the other controller's Lease of another name",
      () => leases.createNamespacedLease({ namespace: ns, body: lease('probe') }),
      403,
      () => adminLeases.deleteNamespacedLease({ name: 'probe', namespace: ns }),
    );

    expect((await answer(leases.createNamespacedLease({ namespace: ns, body: lease('other-lease') }))).code).toBe(200);
    const ours = await answer(leases.createNamespacedLease({ namespace: ns, body: lease('eso-mtls-controller') }));
    expect(ours).toEqual({
      code: 403,
      message: expect.stringContaining('may create only its own leader-election Lease other-lease (--leader-election-id), not eso-mtls-controller'),
    });
    const elsewhere = await answer(leases.createNamespacedLease({ namespace: ESO_NS, body: lease('other-lease') }));
    expect(elsewhere).toEqual({
      code: 403,
      message: expect.stringContaining(`may create Leases only in namespace ${ns} (--leader-election-namespace), not ${ESO_NS}`),
    });

    const secrets = other.makeApiClient(CoreV1Api);
    const caLabels = { ...LABELS, 'app.kubernetes.io/component': 'ca' };
    const ca = (name: string): V1Secret => ({ metadata: { name, labels: caLabels }, type: 'Opaque' });
    // Each binding takes effect on its own: the Secret one is waited for too, not only the Lease one.
    await untilAnswer(
      "the other controller's Secret of the shipped name",
      () => secrets.createNamespacedSecret({ namespace: ns, body: ca('eso-provider-ca-internal') }),
      403,
      () => admin.deleteNamespacedSecret({ name: 'eso-provider-ca-internal', namespace: ns }),
    );
    expect((await answer(secrets.createNamespacedSecret({ namespace: ns, body: ca('other-ca') }))).code).toBe(200);
    const shippedName = await answer(secrets.createNamespacedSecret({ namespace: ns, body: ca('eso-provider-ca-internal') }));
    expect(shippedName).toEqual({
      code: 403,
      message: expect.stringContaining(`may write only the Secrets ${PROVIDER}, other-ca and other-client, not eso-provider-ca-internal`),
    });
    const caElsewhere = await answer(secrets.createNamespacedSecret({ namespace: ESO_NS, body: ca('other-ca') }));
    expect(caElsewhere).toEqual({ code: 403, message: expect.stringContaining(`may write other-ca only in namespace ${ns}, not ${ESO_NS}`) });

    // The shipped parameters still hold our controller, whose identity the other binding does not match.
    expect((await answer(saKc.makeApiClient(CoordinationV1Api).createNamespacedLease({ namespace: ESO_NS, body: lease('other-lease') }))).code).toBe(403);

    // Without its parameters a binding stands aside (parameterNotFoundAction: Allow): the cluster's
    // other Secret writes never depend on one ConfigMap, and RBAC alone judges the controller again.
    await admin.deleteNamespacedConfigMap({ name: 'other-params', namespace: ns });
    try {
      await untilAnswer(
        "the other controller's Lease of another name, once its parameters are gone",
        () => leases.createNamespacedLease({ namespace: ns, body: lease('after-params') }),
        200,
      );
      expect(
        (await answer(admin.createNamespacedSecret({ namespace: 'team-b', body: { metadata: { name: 'while-params-missing' }, stringData: { a: 'b' } } })))
          .code,
      ).toBe(200);
    } finally {
      for (const policyName of ['eso-mtls-controller-lease-creates', 'eso-mtls-controller-secret-writes']) {
        await policies.deleteValidatingAdmissionPolicyBinding({ name: `other-${policyName}` });
      }
    }
    await untilAnswer(
      "an admin's Secret once the bindings are gone",
      () => admin.createNamespacedSecret({ namespace: 'team-b', body: { metadata: { name: 'after-unbinding' }, stringData: { a: 'b' } } }),
      200,
    );
  });

  it('applies everything of the opt-in overlay but the PrometheusRule, whose CRD this cluster lacks', async () => {
    const extra = kustomizeBuild('deploy/overlays/prometheus-rule').filter((m) => m.kind === 'PrometheusRule');
    expect(extra).toHaveLength(1);
    await expect(applyAll(plane.adminKubeConfig, extra)).rejects.toThrow(
      'applying PrometheusRule external-secrets-system/eso-mtls-controller: Failed to fetch resource metadata for monitoring.coreos.com/v1/PrometheusRule: HTTP-Code: 404',
    );
  });
});
