import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AdmissionregistrationV1Api, AppsV1Api, CoordinationV1Api, CoreV1Api, type KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../envtest/src/index.js';
import { Helm, type Values, chartDir, previousChart } from '@eso-mtls/test-kit/helm';
import { type PreviousSources, extractPreviousSources } from './support/previous-release.js';
import {
  type CertificateState,
  type Installation,
  convergedState,
  providerNamespace,
  resourceVersions,
  runInstalledController,
  serials,
} from './support/release.js';

// The CA is never lost: the packaged first chart (0.1.0) is installed and the controller of that
// version (today's main, built from git history) creates the CA and every certificate. Then the
// chart is upgraded to the working tree's with other values and the working tree's controller
// takes over; then the release is uninstalled and installed again. At each step the CA, the
// client certificate and every provider certificate must be the very same (same serial, and the
// Secrets not even written), and each controller must still issue for a namespace that is new.

const NS = 'secrets-ops';
const RELEASE = 'eso-mtls';
const DEPLOYMENT = 'eso-mtls-controller';
const SA_USER = `system:serviceaccount:${NS}:eso-mtls-controller`;
/** Values the upgrade changes; none of them changes what a certificate holds. */
const UPGRADED: Values = {
  replicaCount: 3,
  logLevel: 'debug',
  reconcileInterval: '5m',
  resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '2', memory: '384Mi' } },
  podDisruptionBudget: { enabled: true },
  priorityClassName: 'system-cluster-critical',
};

describe('eso-mtls Helm chart: upgrade from the packaged 0.1.0, uninstall and reinstall keep the CA', () => {
  let plane: ControlPlane;
  let admin: KubeConfig;
  let helm: Helm;
  let previous: PreviousSources;
  const providers = new Map<string, readonly string[]>();
  const installation = (): Installation => ({
    namespace: NS,
    caSecretName: 'eso-provider-ca-internal',
    clientSecretName: 'eso-provider-client-tls',
    clusterDomain: 'cluster.local',
    providers,
  });
  let first: CertificateState;

  beforeAll(async () => {
    previous = extractPreviousSources();
    plane = await startControlPlane({ audit: true });
    admin = plane.adminKubeConfig;
    helm = new Helm(plane.adminKubeconfigPath);
  }, 120_000);
  afterAll(async () => {
    helm?.remove();
    previous?.remove();
    await plane?.stop();
  });

  /**
   * Runs the controller of `root` (the working tree by default) as the release's ServiceAccount
   * with the installed Deployment's args until `namespace` (new, one Service) converges too, then
   * stops it with SIGTERM. Returns the state and the audit mark of its start.
   */
  async function runController(name: string, namespace: string, root?: string): Promise<{ state: CertificateState; mark: number }> {
    await providerNamespace(admin, namespace, ['provider']);
    providers.set(namespace, ['provider']);
    const mark = auditMark();
    const { state } = await runInstalledController(plane, {
      name,
      namespace: NS,
      deployment: DEPLOYMENT,
      serviceAccount: 'eso-mtls-controller',
      installation: installation(),
      ...(root === undefined ? {} : { root }),
    });
    return { state, mark };
  }

  /** How many audit events there are so far (the log is written before each response: blocking mode). */
  const auditMark = (): number => plane.auditEvents().length;

  /** Writes by the controller's ServiceAccount, after audit event `mark`, to the Secrets in `state`. */
  function writesTo(state: CertificateState, mark: number): string[] {
    const secrets = new Set(Object.keys(serials(state)));
    return plane
      .auditEvents()
      .slice(mark)
      .filter((e) => e.user.username === SA_USER && ['create', 'update', 'patch', 'delete'].includes(e.verb) && e.objectRef?.resource === 'secrets')
      .filter((e) => secrets.has(`${e.objectRef!.namespace}/${e.objectRef!.name}`))
      .map((e) => `${e.verb} ${e.objectRef!.namespace}/${e.objectRef!.name}`);
  }

  /** Asserts the state `later` holds exactly the certificates of `first`, in Secrets the controller did not write after audit event `mark`. */
  function expectUnchanged(later: CertificateState, mark: number): void {
    const before = { serials: serials(first), resourceVersions: resourceVersions(first) };
    const now = { serials: serials(later), resourceVersions: resourceVersions(later) };
    for (const k of Object.keys(now.serials)) if (!(k in before.serials)) delete now.serials[k];
    for (const k of Object.keys(now.resourceVersions)) if (!(k in before.resourceVersions)) delete now.resourceVersions[k];
    expect(now).toEqual(before);
    expect(writesTo(first, mark)).toEqual([]);
  }

  it(`installs the packaged chart 0.1.0; the controller of v0.1.0 (2df582f) creates the CA and every certificate`, async () => {
    helm.install(previousChart, RELEASE, NS);
    await providerNamespace(admin, 'team-a', ['vault']);
    await providerNamespace(admin, 'team-b', ['aws', 'gcp']);
    providers.set('team-a', ['vault']).set('team-b', ['aws', 'gcp']);
    first = (await runController('controller-v0.1.0', 'team-c', previous.root)).state;
    expect(first.providers.size).toBe(3);
  }, 150_000);

  it('upgrades to the working-tree chart with other values: nothing the controller wrote is touched, and its controller re-issues nothing', async () => {
    const before = auditMark();
    helm.upgrade(chartDir, RELEASE, NS, UPGRADED);
    const history = JSON.parse(helm.run(['history', RELEASE, '--namespace', NS, '--output', 'json'])) as { chart: string; status: string }[];
    expect(history.map((h) => [h.chart, h.status])).toEqual([
      ['eso-mtls-0.1.0', 'superseded'],
      [`eso-mtls-${chartVersion(helm)}`, 'deployed'],
    ]);
    const deployment = await admin.makeApiClient(AppsV1Api).readNamespacedDeployment({ namespace: NS, name: DEPLOYMENT });
    expect(deployment.spec!.replicas).toBe(3);
    expect(deployment.spec!.template.spec!.containers[0]!.args).toEqual(expect.arrayContaining(['--log-level=debug', '--reconcile-interval=5m']));
    expect(deployment.spec!.template.spec!.priorityClassName).toBe('system-cluster-critical');
    const afterHelm = await convergedState(admin, installation());
    expect(afterHelm).toBeDefined();
    expectUnchanged(afterHelm!, before);

    const { state, mark } = await runController('controller-working-tree', 'team-d');
    expectUnchanged(state, mark);
  }, 150_000);

  it('uninstalls: every object of the chart goes, the CA, client and provider Secrets stay; a reinstall finds them and re-issues nothing', async () => {
    const before = auditMark();
    helm.uninstall(RELEASE, NS);
    const gone = async (read: () => Promise<unknown>): Promise<boolean> =>
      read().then(
        () => false,
        (e: { code?: number }) => e.code === 404,
      );
    const apps = admin.makeApiClient(AppsV1Api);
    const core = admin.makeApiClient(CoreV1Api);
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    const admission = admin.makeApiClient(AdmissionregistrationV1Api);
    expect({
      deployment: await gone(() => apps.readNamespacedDeployment({ namespace: NS, name: DEPLOYMENT })),
      serviceAccount: await gone(() => core.readNamespacedServiceAccount({ namespace: NS, name: 'eso-mtls-controller' })),
      params: await gone(() => core.readNamespacedConfigMap({ namespace: NS, name: 'eso-mtls-controller-admission' })),
      clusterRole: await gone(() => rbac.readClusterRole({ name: 'eso-mtls-controller' })),
      policy: await gone(() => admission.readValidatingAdmissionPolicy({ name: 'eso-mtls-controller-secret-writes' })),
    }).toEqual({ deployment: true, serviceAccount: true, params: true, clusterRole: true, policy: true });
    const left = await convergedState(admin, installation());
    expect(left).toBeDefined();
    expectUnchanged(left!, before);
    // The Lease stays too (the controller wrote it), released by the last SIGTERM.
    const lease = await admin.makeApiClient(CoordinationV1Api).readNamespacedLease({ namespace: NS, name: 'eso-mtls-controller' });
    expect(lease.spec!.holderIdentity ?? '').toBe('');

    helm.install(chartDir, RELEASE, NS, UPGRADED);
    const { state, mark } = await runController('controller-reinstalled', 'team-e');
    expectUnchanged(state, mark);
    expect(
      plane
        .auditEvents()
        .filter((e) => e.user.username === SA_USER && e.responseStatus?.code === 403)
        .map((e) => `${e.verb} ${e.requestURI}`),
    ).toEqual([]);
  }, 150_000);
});

/** The working tree chart's version (0.2.0 when this test was written; the fixture is 0.1.0). */
function chartVersion(helm: Helm): string {
  return helm.run(['show', 'chart', chartDir]).match(/^version: (\S+)$/m)![1]!;
}
