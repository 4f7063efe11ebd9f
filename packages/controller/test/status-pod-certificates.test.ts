import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { KubeRestClient, connectionFromKubeConfig } from '@eso-mtls/kubernetes';
import { CoreV1Api, type KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { type ControlPlane, nodeIdentity, startControlPlane } from '../../../testing/envtest/src/index.js';
import { type KubeletPod, PodCertificateKubelet } from '../../../testing/kubelet/index.js';
import { rogueCa } from '@eso-mtls/test-kit/pki';
import { runStatusCommand } from '../src/cli/status.js';
import { type RunningController, createLogger, parseControllerConfig, startController } from '../src/index.js';
import type { StatusReport } from '../src/status/report.js';
import { ESO_NS } from '@eso-mtls/test-kit/cluster';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { bindClusterRole, runCli } from '@eso-mtls/test-kit/cli-run';
import { applyAll, kustomizeBuild, kustomizeInstall } from '@eso-mtls/test-kit/manifests';

// `eso-mtls status --modes=pod-certificate` against a real apiserver with the Node authorizer and
// NodeRestriction: the real controller signs in pod-certificate mode only, a kubelet stand-in asks
// as system:node:node-a for a provider pod (selected by a labelled Service), a pod no Service
// selects, ESO's pod and a pod of another ServiceAccount. Then, with the controller stopped: a
// request nobody decides, and trust bundles deleted, replaced and rewritten behind its back.
const SERVER_SIGNER = 'eso-mtls.io/provider-server';
const CLIENT_SIGNER = 'eso-mtls.io/eso-client';
const SERVER_BUNDLE = 'eso-mtls.io:provider-server:ca';
const CLIENT_BUNDLE = 'eso-mtls.io:eso-client:ca';
const CTB_PATH = '/apis/certificates.k8s.io/v1/clustertrustbundles';
const POD_MODE = ['--modes=pod-certificate'];
const MINUTE = 60_000;

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** A ClusterTrustBundle as the test rewrites it. */
interface Ctb {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string>; resourceVersion?: string };
  spec: { signerName: string; trustBundle: string };
}

describe('eso-mtls status in pod-certificate mode', () => {
  let plane: ControlPlane;
  let admin: KubeConfig;
  let api: KubeRestClient;
  let kubelet: PodCertificateKubelet;
  let controller: RunningController | undefined;
  let provider: KubeletPod;
  /** The controller's log lines (warn and above), as JSON text. */
  const logLines: string[] = [];

  /** Runs status in-process as from a pipe, optionally at another instant (the apiserver's clock is not moved). */
  const status = async (argv: readonly string[], options: { kubeconfig?: string; shift?: number } = {}): Promise<Run> => {
    let stdout = '';
    let stderr = '';
    const streams = { stdout: { write: (s: string) => (stdout += s), isTTY: false }, stderr: { write: (s: string) => (stderr += s) } };
    const now = (): number => Date.now() + (options.shift ?? 0);
    const code = await runStatusCommand(['--kubeconfig', options.kubeconfig ?? plane.adminKubeconfigPath, ...argv], {}, streams, now);
    return { code, stdout, stderr };
  };
  const json = async (argv: readonly string[], options?: { kubeconfig?: string; shift?: number }): Promise<{ run: Run; report: StatusReport }> => {
    const run = await status(['-o', 'json', ...argv], options);
    return { run, report: JSON.parse(run.stdout) as StatusReport };
  };
  /** The real controller in pod-certificate mode only, in-process with the admin's kubeconfig. */
  const startPodController = async (): Promise<void> => {
    const parsed = parseControllerConfig(
      ['--kubeconfig', plane.adminKubeconfigPath, ...POD_MODE, '--metrics-bind-address=0', '--health-probe-bind-address=0', '--log-level=silent'],
      {},
    );
    if (parsed.kind !== 'config') throw new Error(`controller flags: ${JSON.stringify(parsed)}`);
    const logger = createLogger('warn', { destination: { write: (line: string) => void logLines.push(line) } });
    controller = await startController(parsed.config, { logger, identity: 'status-pod-test' });
    await controller.synced;
  };
  const outcome = async (pod: KubeletPod, signerName?: string) =>
    kubelet.waitForOutcome(await kubelet.requestCertificate(pod, signerName ? { signerName } : {}));

  beforeAll(async () => {
    plane = await startControlPlane({ nodeAuthorization: true, identities: [nodeIdentity('node-a'), { name: 'status-user' }, { name: 'secret-mode-user' }] });
    admin = plane.adminKubeConfig;
    api = new KubeRestClient(await connectionFromKubeConfig(admin));
    await applyAll(admin, [...kustomizeInstall('deploy'), ...kustomizeBuild('deploy/cli-rbac')]);
    await bindClusterRole(admin, 'status-user', 'eso-mtls-status');
    // The status role as it was before pod-certificate mode: Services and our Secrets only.
    await admin.makeApiClient(RbacAuthorizationV1Api).createClusterRole({
      body: {
        metadata: { name: 'status-secret-mode-only' },
        rules: [
          { apiGroups: [''], resources: ['services'], verbs: ['get', 'list'] },
          { apiGroups: [''], resources: ['secrets'], resourceNames: ['eso-provider-ca-internal', 'eso-provider-client-tls'], verbs: ['get', 'list'] },
        ],
      },
    });
    await bindClusterRole(admin, 'secret-mode-user', 'status-secret-mode-only');

    const core = admin.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: 'team-a' } } });
    await core.createNamespacedService({
      namespace: 'team-a',
      body: {
        metadata: { name: 'vault', labels: { 'external-secrets.io/provider': 'true' } },
        spec: { selector: { app: 'provider' }, ports: [{ name: 'grpc', port: 8443 }] },
      },
    });
    await startPodController();

    kubelet = await PodCertificateKubelet.register({ admin, node: plane.kubeconfigFor('system:node:node-a'), nodeName: 'node-a' });
    const trust = (signerName: string) => ({ signerName, labelSelector: { matchLabels: { 'eso-mtls.io/trust-bundle': 'true' } } });
    provider = await kubelet.runPod({
      namespace: 'team-a',
      name: 'vault-0',
      serviceAccountName: 'vault',
      labels: { app: 'provider' },
      podCertificate: { signerName: SERVER_SIGNER, keyType: 'ECDSAP256' },
      clusterTrustBundle: trust(CLIENT_SIGNER),
    });
    const stray = await kubelet.runPod({
      namespace: 'team-b',
      name: 'stray',
      serviceAccountName: 'stray',
      labels: { app: 'provider' },
      podCertificate: { signerName: SERVER_SIGNER, keyType: 'ECDSAP256' },
    });
    const eso = await kubelet.runPod({
      namespace: ESO_NS,
      name: 'external-secrets-0',
      serviceAccountName: 'external-secrets',
      podCertificate: { signerName: CLIENT_SIGNER, keyType: 'ECDSAP256' },
      clusterTrustBundle: trust(SERVER_SIGNER),
    });
    const impostor = await kubelet.runPod({
      namespace: ESO_NS,
      name: 'impostor',
      serviceAccountName: 'impostor',
      podCertificate: { signerName: CLIENT_SIGNER, keyType: 'ECDSAP256' },
    });
    const outcomes = await Promise.all([outcome(provider), outcome(stray), outcome(stray), outcome(eso), outcome(impostor)]);
    expect(outcomes.map((o) => o.condition)).toEqual(['Issued', 'Denied', 'Denied', 'Issued', 'Denied']);
  }, 180_000);

  afterAll(async () => {
    await controller?.stop();
    await kubelet?.stop();
    api?.close();
    await plane?.stop();
  });

  it('exits 0 on a healthy pod-certificate cluster: both trust bundles current, requests counted with their Denied reasons, no provider Secret expected', async () => {
    await eventually(async () => (await status(POD_MODE)).code === 0, 20_000, 'status to report healthy');
    const { run, report } = await json(POD_MODE);
    expect(run.code).toBe(0);
    expect(report.summary).toEqual({ healthy: true, problems: 0, unchecked: 0, exitCode: 0 });
    expect(report.policy).toMatchObject({
      modes: ['pod-certificate'],
      serverSignerName: SERVER_SIGNER,
      clientSignerName: CLIENT_SIGNER,
      podCertificateMaxValidity: '1d',
    });
    expect(report.policy.sources).toMatchObject({ modes: 'flag', 'server-signer-name': 'default' });
    // team-a has a labelled Service and no Secret: in pod-certificate mode only, that is how it should be.
    expect(report.namespaces).toEqual([]);
    const pods = report.podCertificates!;
    expect(pods.pendingThreshold).toBe('15m');
    const active = report.ca.certificates.find((c) => c.slot === 'active')!;
    for (const [name, signerName] of [
      [SERVER_BUNDLE, SERVER_SIGNER],
      [CLIENT_BUNDLE, CLIENT_SIGNER],
    ]) {
      const bundle = pods.trustBundles.find((b) => b.name === name)!;
      expect(bundle).toMatchObject({ signerName, checked: true, exists: true, ours: true, current: true, problems: [] });
      expect(bundle.certificates!.map((c) => c.serialNumber)).toEqual([active.serialNumber]);
    }
    const [server, client] = pods.signers;
    expect(server).toMatchObject({ signerName: SERVER_SIGNER, checked: true, issued: 1, denied: 2, failed: 0, pending: 0, truncated: false, problems: [] });
    expect(server!.deniedReasons).toEqual([{ reason: 'NoProviderService', count: 2 }]);
    expect(client).toMatchObject({ signerName: CLIENT_SIGNER, issued: 1, denied: 1, failed: 0, pending: 0, problems: [] });
    expect(client!.deniedReasons).toEqual([{ reason: 'UnauthorizedServiceAccount', count: 1 }]);

    const text = await status(POD_MODE);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('modes pod-certificate (flag); signers eso-mtls.io/provider-server (default) and eso-mtls.io/eso-client (default)');
    expect(text.stdout).toContain(`Trust bundle ${SERVER_BUNDLE}  OK`);
    expect(text.stdout).toContain("holds the CA Secret's bundle: yes");
    expect(text.stdout).toContain(`Requests ${SERVER_SIGNER}  OK\n  issued 1, denied 2 (NoProviderService 2), failed 0, pending 0`);
    expect(text.stdout).toContain('no provider Secret is expected');
    const yaml = await status(['-o', 'yaml', ...POD_MODE]);
    expect(yaml.stdout).toMatch(/^podCertificates:$/m);

    // -n reads that namespace's requests only; a namespace without a labelled Service is named, as in the Secret mode.
    const teamA = await json([...POD_MODE, '-n', 'team-a']);
    expect(teamA.run.code).toBe(0);
    expect(teamA.report.namespaces).toEqual([]);
    expect(teamA.report.podCertificates!.signers.map((r) => [r.issued, r.denied])).toEqual([
      [1, 0],
      [0, 0],
    ]);
    const teamB = await json([...POD_MODE, '-n', 'team-b']);
    expect(teamB.run.code).toBe(1);
    expect(teamB.report.namespaces.map((n) => [n.namespace, n.problems.map((p) => p.kind)])).toEqual([['team-b', ['missing']]]);
    expect(teamB.report.podCertificates!.signers[0]).toMatchObject({ issued: 0, denied: 2 });

    // The same cluster judged as the Secret mode: team-a lacks its Secret, and nothing pod-related is read.
    const secretMode = await json([]);
    expect(secretMode.run.code).toBe(1);
    expect(secretMode.report.namespaces.map((n) => [n.namespace, n.problems.map((p) => p.kind)])).toEqual([['team-a', ['missing']]]);
    expect(secretMode.report.podCertificates).toBeUndefined();
  });

  it('works for a user bound to the shipped eso-mtls-status ClusterRole; without its new rules the pod checks are NOT CHECKED (exit 4)', async () => {
    const kubeconfig = plane.identity('status-user').kubeconfigPath;
    await eventually(async () => (await status(POD_MODE, { kubeconfig })).code !== 3, 20_000, 'the binding to take effect');
    const { run, report } = await json(POD_MODE, { kubeconfig });
    expect(run.code).toBe(0);
    expect(report.summary).toMatchObject({ healthy: true, unchecked: 0 });

    const old = plane.identity('secret-mode-user').kubeconfigPath;
    await eventually(async () => (await status(POD_MODE, { kubeconfig: old })).code !== 3, 20_000, 'the binding to take effect');
    const text = await status(POD_MODE, { kubeconfig: old });
    expect(text.code).toBe(4);
    expect(text.stdout).toContain(`Trust bundle ${SERVER_BUNDLE}  NOT CHECKED`);
    expect(text.stdout).toContain(
      `ClusterTrustBundle ${SERVER_BUNDLE} not checked: HTTP 403 Forbidden; it needs get on clustertrustbundles (ClusterRole eso-mtls-status)`,
    );
    expect(text.stdout).toContain(`PodCertificateRequests of ${CLIENT_SIGNER} not checked: HTTP 403 Forbidden; it needs list on podcertificaterequests`);
    expect(text.stdout).toContain(
      'the ClusterTrustBundles labelled eso-mtls.io/trust-bundle=true not checked: HTTP 403 Forbidden; it needs list on clustertrustbundles',
    );
    // The five pod checks, and the leader election Lease (a rule of the role since then too).
    expect((await json(POD_MODE, { kubeconfig: old })).report.summary).toEqual({ healthy: false, problems: 0, unchecked: 6, exitCode: 4 });
  });

  it('names a request nobody has decided once it is pending longer than twice the reconcile interval (at most 15 minutes)', async () => {
    await controller!.stop();
    controller = undefined;
    const { request } = await kubelet.requestCertificate(provider);
    const name = `team-a/${request.metadata.name}`;

    // Just created: pending, and normal.
    const fresh = await json(POD_MODE);
    expect(fresh.run.code).toBe(0);
    expect(fresh.report.podCertificates!.signers[0]).toMatchObject({ pending: 1, longPending: [], problems: [] });
    // Seen 14 minutes on with the default 10m interval: still under the 15-minute cap.
    expect((await status(POD_MODE, { shift: 14 * MINUTE })).code).toBe(0);

    const late = await json(POD_MODE, { shift: 16 * MINUTE });
    expect(late.run.code).toBe(1);
    const server = late.report.podCertificates!.signers[0]!;
    expect(server.longPending).toEqual([{ request: name, pod: 'vault-0', createdAt: expect.any(String) }]);
    expect(server.problems).toEqual([
      {
        kind: 'pending',
        message: expect.stringContaining(`1 PodCertificateRequest for ${SERVER_SIGNER} pending for longer than 15m (oldest ${name} for pod vault-0`),
      },
    ]);
    expect(late.report.summary).toMatchObject({ problems: 1, exitCode: 1 });
    const text = await status(POD_MODE, { shift: 16 * MINUTE });
    expect(text.stdout).toContain(`Requests ${SERVER_SIGNER}  1 PROBLEM`);
    expect(text.stdout).toMatch(new RegExp(`pending since \\S+: ${name} \\(pod vault-0\\)`));

    // Twice a 5-minute interval: 9 minutes is fine, 11 minutes is not.
    expect((await status([...POD_MODE, '--reconcile-interval=5m'], { shift: 9 * MINUTE })).code).toBe(0);
    const shorter = await json([...POD_MODE, '--reconcile-interval=5m'], { shift: 11 * MINUTE });
    expect(shorter.run.code).toBe(1);
    expect(shorter.report.podCertificates!.pendingThreshold).toBe('10m');
  });

  it('exits 1 naming a stale, an unlabelled, a foreign and a missing trust bundle', async () => {
    expect(controller).toBeUndefined(); // stopped above: nothing repairs what this test breaks
    const rogue = await rogueCa(['vault.team-a.svc']);
    const server = await api.get<Ctb>(`${CTB_PATH}/${SERVER_BUNDLE}`);
    const client = await api.get<Ctb>(`${CTB_PATH}/${CLIENT_BUNDLE}`);
    const ours = server.spec.trustBundle;
    // Stale: ours, but holding another CA. Unlabelled: ours, but no projection selects it.
    await api.replace(`${CTB_PATH}/${SERVER_BUNDLE}`, { ...server, spec: { ...server.spec, trustBundle: rogue.ca.certificate.pem } });
    const { 'eso-mtls.io/trust-bundle': _dropped, ...labels } = client.metadata.labels!;
    await api.replace(`${CTB_PATH}/${CLIENT_BUNDLE}`, { ...client, metadata: { ...client.metadata, labels } });

    const broken = await json(POD_MODE);
    expect(broken.run.code).toBe(1);
    const [serverReport, clientReport] = broken.report.podCertificates!.trustBundles;
    expect(serverReport).toMatchObject({ ours: true, current: false });
    expect(serverReport!.certificates!.map((c) => c.serialNumber)).toEqual([rogue.ca.certificate.serialNumber]);
    expect(serverReport!.problems).toEqual([
      { kind: 'pending', message: expect.stringContaining(`ClusterTrustBundle ${SERVER_BUNDLE} does not hold the CA Secret's bundle`) },
    ]);
    expect(clientReport).toMatchObject({ ours: true, current: true });
    expect(clientReport!.problems).toEqual([{ kind: 'invalid', message: expect.stringContaining('lacks the label eso-mtls.io/trust-bundle=true') }]);
    const text = await status(POD_MODE);
    expect(text.stdout).toContain("holds the CA Secret's bundle: no");

    // Foreign: a bundle by our name that this installation did not write. Missing: deleted.
    await api.request('DELETE', `${CTB_PATH}/${SERVER_BUNDLE}`);
    await api.create(CTB_PATH, {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'ClusterTrustBundle',
      metadata: { name: SERVER_BUNDLE, labels: { 'eso-mtls.io/trust-bundle': 'true' } },
      spec: { signerName: SERVER_SIGNER, trustBundle: ours },
    });
    await api.request('DELETE', `${CTB_PATH}/${CLIENT_BUNDLE}`);
    const gone = await json(POD_MODE);
    expect(gone.run.code).toBe(1);
    const kinds = gone.report.podCertificates!.trustBundles.map((b) => [b.name, b.exists, b.problems.map((p) => p.kind)]);
    expect(kinds).toEqual([
      [SERVER_BUNDLE, true, ['foreign']],
      [CLIENT_BUNDLE, false, ['missing']],
    ]);
    expect(gone.report.podCertificates!.trustBundles[0]!.problems[0]!.message).toContain('was not written by this installation');
    const goneText = await status(POD_MODE);
    expect(goneText.stdout).toContain(`Trust bundle ${CLIENT_BUNDLE}  1 PROBLEM`);
    expect(goneText.stdout).toContain(`problem (missing): ClusterTrustBundle ${CLIENT_BUNDLE} does not exist`);
  });

  it('agrees once the controller is back: it republishes, and during an overlap rotation both bundles hold the active and the next CA', async () => {
    await api.request('DELETE', `${CTB_PATH}/${SERVER_BUNDLE}`); // the foreign one: the controller never touches it
    await startPodController();
    await eventually(async () => (await status(POD_MODE)).code === 0, 30_000, 'the controller to republish and decide the pending request');
    expect((await runCli('renew', ['--kubeconfig', plane.adminKubeconfigPath, '--ca'])).code).toBe(0);
    // The next CA is published first and signs only after propagationDelay (5 minutes): the overlap lasts the whole check.
    const overlap = async (): Promise<StatusReport | undefined> => {
      const { run, report } = await json(POD_MODE);
      const published = report.podCertificates!.trustBundles.every((b) => b.certificates?.length === 2);
      return run.code === 0 && report.ca.certificates.some((c) => c.slot === 'next') && published ? report : undefined;
    };
    let report: StatusReport | undefined;
    await eventually(async () => (report = await overlap()) !== undefined, 30_000, 'the next CA in the CA Secret and both trust bundles');
    const serial = (slot: string) => report!.ca.certificates.find((c) => c.slot === slot)!.serialNumber;
    for (const bundle of report!.podCertificates!.trustBundles) {
      expect(bundle).toMatchObject({ ours: true, current: true, problems: [] });
      expect(bundle.certificates!.map((c) => c.serialNumber)).toEqual([serial('active'), serial('next')]);
    }
    expect(report!.podCertificates!.signers[0]).toMatchObject({ issued: 2, pending: 0, problems: [] });
  }, 120_000);

  it('reports a bundle of our signer and label under another name, which the projections select: the controller once (Warning Event Conflict, metric, log line), status as a conflict (exit 1)', async () => {
    // The controller runs again (previous test). Making such a bundle needs attest on the signer name: the admin has it.
    const planted = `${CLIENT_SIGNER.replaceAll('/', ':')}:planted`;
    const rogue = await rogueCa(['planted']);
    const failures = async (): Promise<number> =>
      (await controller!.metrics.registry.getSingleMetric('eso_ca_certificate_rotation_failures_total')!.get()).values[0]?.value ?? 0;
    const before = await failures();
    const linesBefore = logLines.length;
    await api.create(CTB_PATH, {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'ClusterTrustBundle',
      metadata: { name: planted, labels: { 'eso-mtls.io/trust-bundle': 'true' } },
      spec: { signerName: CLIENT_SIGNER, trustBundle: rogue.ca.certificate.pem },
    });
    // The shipped projection selects it beside ours: a provider pod would trust the rogue CA.
    const projected = await kubelet.trustBundles(CLIENT_SIGNER, { matchLabels: { 'eso-mtls.io/trust-bundle': 'true' } });
    expect(projected.map((b) => b.metadata.name).sort()).toEqual([CLIENT_BUNDLE, planted]);

    const core = admin.makeApiClient(CoreV1Api);
    const conflicts = async (): Promise<number> => {
      const events = await core.listNamespacedEvent({
        namespace: ESO_NS,
        fieldSelector: 'involvedObject.kind=Secret,involvedObject.name=eso-provider-ca-internal',
      });
      return events.items
        .filter((e) => e.type === 'Warning' && e.reason === 'Conflict' && e.message?.includes(planted))
        .reduce((n, e) => n + (e.count ?? 1), 0);
    };
    await eventually(async () => (await conflicts()) > 0, 30_000, 'the controller to report the planted bundle');
    // More reconciles within the interval report nothing more: once per reconcile interval, like every standing conflict.
    for (let i = 0; i < 3; i++) await controller!.adapter.reconcileNow();
    expect(await conflicts()).toBe(1);
    expect(await failures()).toBe(before + 1);
    const logged = logLines.slice(linesBefore).filter((l) => l.includes(planted));
    expect(logged).toHaveLength(1);
    expect(JSON.parse(logged[0]!)).toMatchObject({ trustBundle: planted, msg: expect.stringContaining('trust bundle conflict: ClusterTrustBundle') });

    const { run, report } = await json(POD_MODE);
    expect(run.code).toBe(1);
    expect(report.podCertificates!.strays).toEqual({
      checked: true,
      names: [planted],
      problems: [{ kind: 'conflict', message: expect.stringContaining(`ClusterTrustBundle ${planted} of signer ${CLIENT_SIGNER} carries the label`) }],
    });
    expect(report.summary).toMatchObject({ problems: 1, exitCode: 1 });
    const text = await status(POD_MODE, { kubeconfig: plane.identity('status-user').kubeconfigPath });
    expect(text.code).toBe(1);
    expect(text.stdout).toContain('Other trust bundles selected by the projections of our signers  1 PROBLEM');
    // Left alone: not ours to rewrite or delete.
    expect((await api.get<Ctb>(`${CTB_PATH}/${planted}`)).spec.trustBundle).toBe(rogue.ca.certificate.pem);
    await api.request('DELETE', `${CTB_PATH}/${planted}`);
    expect((await json(POD_MODE)).report.podCertificates!.strays).toEqual({ checked: true, names: [], problems: [] });
  });
});
