import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoreV1Api, type KubeConfig, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions } from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import type { RunningController } from '../src/index.js';
import type { StatusReport } from '../src/status/report.js';
import { rogueCa } from '@eso-mtls/test-kit/pki';
import { CA_SECRET, CLIENT_SECRET, ESO_NS, PROVIDER_SECRET, converged, createProviderNamespace, privateKeyForms } from '@eso-mtls/test-kit/cluster';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { type CliRun, bindClusterRole, runCli, startTestController } from '@eso-mtls/test-kit/cli-run';
import { applyAll, kustomizeBuild, kustomizeInstall } from '@eso-mtls/test-kit/manifests';

// `eso-mtls status` against a real apiserver: after the real controller has issued, under the
// admin, under a user bound only to the shipped eso-mtls-status ClusterRole, and under a user who
// may not read Secrets; then with things broken while the controller is stopped.
const NAMESPACES = new Map([
  ['team-a', ['vault']],
  ['team-b', ['aws', 'gcp']],
  ['team-c', ['files']],
]);

describe('eso-mtls status', () => {
  let plane: ControlPlane;
  let admin: KubeConfig;
  let core: CoreV1Api;
  let controller: RunningController | undefined;
  const outputs: string[] = [];
  const status = async (argv: string[], kubeconfig = plane.adminKubeconfigPath): Promise<CliRun> => {
    const run = await runCli('status', ['--kubeconfig', kubeconfig, ...argv]);
    outputs.push(run.stdout, run.stderr);
    return run;
  };
  const json = async (argv: string[] = [], kubeconfig?: string): Promise<{ run: CliRun; report: StatusReport }> => {
    const run = await status(['-o', 'json', ...argv], kubeconfig);
    return { run, report: JSON.parse(run.stdout) as StatusReport };
  };

  beforeAll(async () => {
    plane = await startControlPlane({ identities: [{ name: 'status-user' }, { name: 'no-secret-user' }, { name: 'nobody' }] });
    admin = plane.adminKubeConfig;
    core = admin.makeApiClient(CoreV1Api);
    await applyAll(admin, [...kustomizeInstall('deploy'), ...kustomizeBuild('deploy/cli-rbac')]);
    await bindClusterRole(admin, 'status-user', 'eso-mtls-status');
    await admin.makeApiClient(RbacAuthorizationV1Api).createClusterRole({
      body: { metadata: { name: 'services-only' }, rules: [{ apiGroups: [''], resources: ['services'], verbs: ['get', 'list'] }] },
    });
    await bindClusterRole(admin, 'no-secret-user', 'services-only');
    for (const [ns, services] of NAMESPACES) await createProviderNamespace(admin, ns, services);
    controller = await startTestController(plane.adminKubeconfigPath);
    await eventually(() => converged(admin, NAMESPACES), 60_000, 'the controller to issue every certificate');
  }, 180_000);
  afterAll(async () => {
    await controller?.stop();
    await plane?.stop();
  });

  it('exits 0 once the controller has issued, and shows the facts in text and JSON', async () => {
    const text = await eventually(async () => (await status([])).code === 0, 20_000, 'status to report healthy').then(() => status([]));
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`CA ${ESO_NS}/${CA_SECRET}  OK`);
    expect(text.stdout).toContain(`Client certificate ${ESO_NS}/${CLIENT_SECRET}  OK`);
    expect(text.stdout).toMatch(/Namespace team-b {2}OK\n {2}Services {9}aws, gcp\n {2}SANs {13}.*aws\.team-b\.svc\.cluster\.local/);
    expect(text.stdout).toContain('signed by the active CA: yes; chains to its ca.crt: yes; ca.crt current: yes');
    expect(text.stdout).toContain('ESO namespace external-secrets-system (default)');
    expect(text.stdout).toContain('Private keys were read only to check');
    expect(text.stdout).not.toContain('\u001b['); // piped: plain text

    const { run, report } = await json();
    expect(run.code).toBe(0);
    expect(report.summary).toEqual({ healthy: true, problems: 0, unchecked: 0, exitCode: 0 });
    expect(report.ca.certificates.map((c) => c.slot)).toEqual(['active']);
    expect(report.ca.certificates[0]!.daysLeft).toBeGreaterThan(300);
    expect(report.client.uris).toEqual(['spiffe://cluster.local/ns/external-secrets-system/sa/external-secrets']);
    const teamB = report.namespaces.find((n) => n.namespace === 'team-b')!;
    expect(teamB).toMatchObject({ services: ['aws', 'gcp'], signedByActiveCa: true, chainsToBundle: true, bundleCurrent: true, problems: [] });
    expect(teamB.dnsNames).toContain('gcp.team-b.svc');
    expect(teamB.nextRotation!.reason).toBe('expiring');
    expect(Date.parse(teamB.nextRotation!.at!)).toBeGreaterThan(Date.now() + 50 * 86_400_000);
    expect(report.namespaces.map((n) => n.namespace)).toEqual(['team-a', 'team-b', 'team-c']);

    const one = await json(['--namespace', 'team-a']);
    expect(one.report.namespaces.map((n) => n.namespace)).toEqual(['team-a']);
    const yaml = await status(['-o', 'yaml', '-n', 'team-a']);
    expect(yaml.code).toBe(0);
    expect(yaml.stdout).toMatch(/^kind: EsoMtlsStatus$/m);
  });

  it('says which policy it assumed, read from the controller flags and environment', async () => {
    const run = await runCli('status', ['--kubeconfig', plane.adminKubeconfigPath, '-o', 'json', '--reconcile-interval=5m'], {
      ESO_MTLS_CLUSTER_DOMAIN: 'example.internal',
    });
    const report = JSON.parse(run.stdout) as StatusReport;
    expect(report.policy).toMatchObject({ clusterDomain: 'example.internal', reconcileInterval: '5m' });
    expect(report.policy.sources).toMatchObject({ 'cluster-domain': 'env', 'reconcile-interval': 'flag', 'eso-namespace': 'default' });
    // Under another cluster domain every SAN and the client identity differ: status says so.
    expect(run.code).toBe(1);
    expect(report.namespaces[0]!.problems[0]!.message).toContain('dns_changed');
    const bad = await runCli('status', ['--kubeconfig', plane.adminKubeconfigPath, '--eso-namespace', 'Not_A_Namespace']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--eso-namespace (env ESO_MTLS_NAMESPACE)');
    expect((await runCli('status', ['-o', 'xml'])).code).toBe(2);
  });

  it('works for a user bound only to the shipped eso-mtls-status ClusterRole', async () => {
    const kubeconfig = plane.identity('status-user').kubeconfigPath;
    await eventually(async () => (await status([], kubeconfig)).code === 0, 20_000, 'the binding to take effect');
    const { report } = await json([], kubeconfig);
    expect(report.summary).toMatchObject({ healthy: true, unchecked: 0 });
    expect((await json(['-n', 'team-c'], kubeconfig)).run.code).toBe(0);
  });

  it('says what it could not check for a user who may not read Secrets, and exits 4', async () => {
    const kubeconfig = plane.identity('no-secret-user').kubeconfigPath;
    await eventually(async () => (await status([], kubeconfig)).code !== 3, 20_000, 'the binding to take effect');
    const text = await status([], kubeconfig);
    expect(text.code).toBe(4);
    expect(text.stdout).toContain(`CA ${ESO_NS}/${CA_SECRET}  NOT CHECKED`);
    expect(text.stdout).toContain(`Secret ${ESO_NS}/${CA_SECRET} not checked: HTTP 403 Forbidden; it needs get on secrets/${CA_SECRET} in ${ESO_NS}`);
    expect(text.stdout).toContain(`Secret team-a/${PROVIDER_SECRET} not checked: HTTP 403 Forbidden`);
    expect(text.stdout).toMatch(/Namespace team-b {2}NOT CHECKED\n {2}Services {9}aws, gcp/);
    expect(text.stdout).toContain(
      `Lease ${ESO_NS}/eso-mtls-controller not checked: HTTP 403 Forbidden; it needs get on leases/eso-mtls-controller in ${ESO_NS} (ClusterRole eso-mtls-status)`,
    );
    const { report } = await json([], kubeconfig);
    // The CA and client Secrets, the three provider namespaces, and the leader election Lease.
    expect(report.summary).toEqual({ healthy: false, problems: 0, unchecked: 6, exitCode: 4 });
    // A user who may not even list Services learns that, with exit code 3.
    const none = await status([], plane.identity('nobody').kubeconfigPath);
    expect(none.code).toBe(3);
    expect(none.stderr).toContain('cannot list the Services labelled external-secrets.io/provider=true in any namespace: the apiserver refused');
  });

  it('with --require-namespace-label, names the provider namespace that lacks the label (exit 1); without list on namespaces, NOT CHECKED (exit 4)', async () => {
    const label = 'eso-mtls.io/providers-allowed';
    for (const namespace of ['team-a', 'team-b']) {
      await core.patchNamespace(
        { name: namespace, body: { metadata: { labels: { [label]: 'true' } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    }
    await core.createNamespace({ body: { metadata: { name: 'labelled-no-service', labels: { [label]: 'true' } } } });
    const require = [`--require-namespace-label=${label}=true`];

    const text = await status(require);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(`provider namespaces served: only those labelled ${label}=true (flag)`);
    expect(text.stdout).toMatch(/Namespace team-c {2}1 PROBLEM\n {2}Services {9}files\n {2}problem \(not_allowed\): namespace team-c is not allowed/);
    expect(text.stdout).toContain(`kubectl label namespace team-c ${label}=true`);
    // The same from the controller's variable, and for a user bound only to the shipped role.
    const env = { ESO_MTLS_REQUIRE_NAMESPACE_LABEL: `${label}=true` };
    for (const kubeconfig of [plane.adminKubeconfigPath, plane.identity('status-user').kubeconfigPath]) {
      const run = await runCli('status', ['--kubeconfig', kubeconfig, '-o', 'json'], env);
      outputs.push(run.stdout, run.stderr);
      const report = JSON.parse(run.stdout) as StatusReport;
      expect(run.code).toBe(1);
      expect(report.policy).toMatchObject({ requireNamespaceLabel: `${label}=true`, sources: { 'require-namespace-label': 'env' } });
      expect(report.namespaces.map((n) => [n.namespace, n.checked, n.problems.map((p) => p.kind)])).toEqual([
        ['team-a', true, []],
        ['team-b', true, []],
        ['team-c', true, ['not_allowed']],
      ]);
      expect(report.summary).toEqual({ healthy: false, problems: 1, unchecked: 0, exitCode: 1 });
    }
    // A user who may list Services but not namespaces learns which right is missing.
    const refused = await json(require, plane.identity('no-secret-user').kubeconfigPath);
    expect(refused.run.code).toBe(4);
    expect(refused.report.namespaces.map((n) => n.checked)).toEqual([false, false, false]);
    expect(refused.report.namespaces[0]!.unchecked).toBe(
      `the namespaces labelled ${label}=true (--require-namespace-label) not checked: HTTP 403 Forbidden; it needs list on namespaces (ClusterRole eso-mtls-status)`,
    );
  });

  it('with --max-namespaces, shows the namespaces the cap leaves out as the controller run with it does (not_served, exit 1)', async () => {
    // Scale: 4 provider namespaces, a cap of 3; the controller is restarted with the cap.
    await controller!.stop();
    controller = await startTestController(plane.adminKubeconfigPath, ['--max-namespaces=3']);
    await createProviderNamespace(admin, 'team-d', ['azure']);
    await eventually(async () => controller!.adapter.status.namespacesNotServed().cap === 1, 30_000, 'the capped controller to leave team-d out');
    const cap = ['--max-namespaces=3'];
    const text = await status(cap);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain('provider namespaces served: at most 3, the newest beyond it left out (flag)');
    expect(text.stdout).toMatch(
      /Namespace team-d {2}1 PROBLEM\n {2}Services {9}azure\n {2}problem \(not_served\): namespace team-d is not served: at most 3 provider namespaces are/,
    );
    expect(text.stdout).toContain('Summary: 1 problem needs attention (exit code 1)');
    for (const argv of [cap, [...cap, '-n', 'team-d']]) {
      const run = await runCli('status', ['--kubeconfig', plane.identity('status-user').kubeconfigPath, '-o', 'json', ...argv.slice(1)], {
        ESO_MTLS_MAX_NAMESPACES: '3',
      });
      outputs.push(run.stdout, run.stderr);
      const report = JSON.parse(run.stdout) as StatusReport;
      expect(report.policy).toMatchObject({ maxNamespaces: 3, sources: { 'max-namespaces': 'env' } });
      const shown = argv.length > 1 ? ['team-d'] : ['team-a', 'team-b', 'team-c', 'team-d'];
      expect(report.namespaces.map((n) => n.namespace)).toEqual(shown);
      expect(report.namespaces.find((n) => n.namespace === 'team-d')).toMatchObject({ checked: true, dnsNames: [], problems: [{ kind: 'not_served' }] });
      expect(report.summary).toEqual({ healthy: false, problems: 1, unchecked: 0, exitCode: 1 });
    }
    // -n of a namespace the cap keeps: it is ranked among all of them, so it is served and healthy.
    expect((await json([...cap, '-n', 'team-a'])).run.code).toBe(0);
    // Without the controller's cap, status would expect team-d's Secret: the disagreement this flag removes.
    expect((await json()).report.namespaces.find((n) => n.namespace === 'team-d')!.problems.map((p) => p.kind)).toEqual(['missing']);
    await core.deleteNamespacedService({ namespace: 'team-d', name: 'azure' });
  });

  it('exits 1 naming each problem: a deleted Secret, a foreign Secret, a leaf signed by another CA, garbage', async () => {
    await controller!.stop();
    controller = undefined;
    await core.deleteNamespacedSecret({ namespace: 'team-b', name: PROVIDER_SECRET });
    await core.deleteNamespacedSecret({ namespace: 'team-c', name: PROVIDER_SECRET });
    await core.createNamespacedSecret({
      namespace: 'team-c',
      body: { metadata: { name: PROVIDER_SECRET }, type: 'Opaque', stringData: { note: 'someone else wrote this' } },
    });
    const rogue = await rogueCa(['vault.team-a.svc', 'vault.team-a.svc.cluster.local']);
    const mine = await core.readNamespacedSecret({ namespace: 'team-a', name: PROVIDER_SECRET });
    await core.replaceNamespacedSecret({
      namespace: 'team-a',
      name: PROVIDER_SECRET,
      body: {
        ...mine,
        data: {
          'tls.crt': Buffer.from(rogue.leaf.certificate.pem).toString('base64'),
          'tls.key': Buffer.from(rogue.leaf.privateKeyPem).toString('base64'),
          'ca.crt': Buffer.from(rogue.ca.certificate.pem).toString('base64'),
        },
      },
    });
    await core.patchNamespacedSecret(
      { namespace: ESO_NS, name: CLIENT_SECRET, body: { data: { 'tls.crt': Buffer.from('not a certificate').toString('base64') } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );

    const text = await status([]);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain('problem (invalid): the client certificate: garbage_pem');
    expect(text.stdout).toMatch(/Namespace team-a {2}\d PROBLEMS?/);
    expect(text.stdout).toContain('problem (untrusted): namespace team-a');
    expect(text.stdout).toContain('signed by the active CA: no; chains to its ca.crt: yes');
    expect(text.stdout).toContain('problem (missing): namespace team-b: the Secret does not exist');
    expect(text.stdout).toContain('problem (foreign): namespace team-c: Secret external-secrets-provider-tls exists but was not written by this installation');
    const { report } = await json();
    const problems = Object.fromEntries(report.namespaces.map((n) => [n.namespace, n.problems.map((p) => p.kind)]));
    expect(problems).toEqual({ 'team-a': ['untrusted'], 'team-b': ['missing'], 'team-c': ['foreign'] });
    expect(report.namespaces[0]!.nextRotation).toMatchObject({ reason: 'ca_mismatch' });
    expect(report.client.problems.map((p) => p.kind)).toEqual(['invalid']);
    expect(report.summary).toMatchObject({ healthy: false, problems: 4, exitCode: 1 });
  });

  it('never prints a private key', async () => {
    const forms = await privateKeyForms(admin);
    expect(forms.length).toBeGreaterThan(0);
    const all = outputs.join('\n');
    expect(all).not.toContain('PRIVATE KEY');
    for (const form of forms) expect(all).not.toContain(form);
  });
});
