// The product as users run it, on a real node: containerd, runc and the kubelet run the pods,
// kube-controller-manager, kube-scheduler, kube-proxy and CoreDNS make Deployments, ServiceAccounts,
// ClusterIPs and `svc` names real. The chart installs the locally built controller image (2
// replicas, modes secret and pod-certificate); the shipped examples deploy three file providers
// whose Secret the kubelet mounts and one whose key the kubelet generates (a pod certificate, with
// trust from a ClusterTrustBundle projection); ESO's client (the Go reloading client, its own
// image) calls each through Service DNS the whole time, through an overlap CA rotation.
// Every assertion comes from outside the controller: the apiserver, pod logs, the metrics scraped
// from the controller and provider pods through the apiserver (replayed through promtool and the
// shipped alert rules: each alert fires on a series its real cause moved), and the host's own
// network state. Then the organisation's PKI: the release upgraded from its self-signed CA to an
// intermediate from a cert-manager CA ClusterIssuer (the real cert-manager, a host process against
// the cluster's apiserver) through the overlap, and that intermediate renewed under the same root;
// every leaf verified by openssl with the organisation root alone trusted.
// Scale: one node, 2 controller replicas, 4 providers (2 more namespaces with a labelled Service
// and no pod), 2 ESO client pods (6 callers). The rest of
// the faults, with production timings, run under `npm run test:real-node` (testing/real-node/long).
import { existsSync, readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { CA_SOURCE_ANNOTATION, MAX_ROTATE_REQUEST_BYTES, ROTATE_ANNOTATION } from '@eso-mtls/core';
import { METRIC_NAMES } from '@eso-mtls/metrics';
import { CA_SECRET, ESO_NS, PROVIDER_SECRET } from '@eso-mtls/test-kit/cluster';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { ScrapeRecorder } from '@eso-mtls/test-kit/scrapes';
import type { PromtoolResult } from '@eso-mtls/test-kit/promtool';
import { type TestCluster, inside, startTestCluster } from './support/cluster.js';
import { type Burst, type ProbeAnswer, probeFromNode, requestBurst } from './support/burst.js';
import { holdPidNamespaces, hostNetworkState, processesInPidNamespace } from './support/host-state.js';
import { ORG_ISSUER, OrganisationPki } from './support/organisation-pki.js';
import { ALLOWED_NAMESPACE_LABELS, type FailedCall } from './support/workloads.js';
import { POD_PROVIDER, PROVIDERS, type SecretLeaf, World, pemCertificates, sampleValue } from './support/world.js';

/** Short enough for npm test, above the kubelet's 10 s sync here (the chart's default is 5m; docs/pod-certificates.md). */
const PROPAGATION_DELAY = '30s';
/** Where the alert check makes its faults: a Service whose request is refused, a namespace whose writes and reload fail. */
const REFUSED = 'provider-b';
const FAULTED = 'provider-c';
const SERVICE = 'file-provider';
const SERVED = { service: SERVICE };
const REFUSED_SERVICE = { namespace: REFUSED, service: SERVICE };
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** Requests of the liveness check's burst: more than the 1,500 from one namespace that made both replicas miss their probe. */
const BURST = 3000;

/** The span in which one provider's callers may fail: its only pod replaced. */
interface ListedWindow {
  readonly provider: string;
  readonly deletedAt: number;
  readonly readyAt: number;
}

/** The failed calls outside every listed window (a window ends 5 s after the replacement was Ready). */
function unlisted(failures: readonly FailedCall[], windows: readonly ListedWindow[]): FailedCall[] {
  const listed = (f: FailedCall): boolean => windows.some((w) => f.provider.endsWith(`/${w.provider}`) && f.at >= w.deletedAt && f.at <= w.readyAt + 5000);
  return failures.filter((f) => !listed(f));
}

const fingerprints = (pem: string): string[] => pemCertificates(pem).map((c) => c.fingerprint256);
/** The intermediate a Secret-mode leaf's tls.crt carries after the leaf. */
const intermediateOf = (leaf: SecretLeaf): string | undefined => fingerprints(leaf.tlsCrt)[1];

/** promtool's answer when the alert fired with exactly the expected labels. */
function expectFires(r: PromtoolResult): void {
  expect([r.status, r.stdout + r.stderr]).toEqual([0, expect.stringContaining('SUCCESS')]);
}

describe('the chart, the images and the example providers on a real node', () => {
  const hostBefore = hostNetworkState();
  let tc: TestCluster;
  let w: World;
  // Scrapes of the leader and of the faulted provider, from before the alert check's causes.
  let counters: ScrapeRecorder;
  let reloads: ScrapeRecorder;
  // The organisation's PKI, once the release moves to it.
  let org: OrganisationPki | undefined;
  // Where a provider's callers were allowed to fail (its only pod replaced).
  const windows: ListedWindow[] = [];

  /** The pods' logs, for reading after the node is gone; nothing once it is. */
  const saveLogs = async (): Promise<void> => {
    await w?.saveLogs('real-node').catch(() => undefined);
  };

  beforeAll(async () => {
    tc = await startTestCluster({ syncFrequency: '10s' });
    w = new World(tc);
  }, 15 * 60_000);
  afterAll(async () => {
    await saveLogs(); // after a failure before the last test
    await org?.stop();
    w?.helm.remove();
    await tc?.cluster.stop();
  }, 120_000);

  it('runs the whole cluster inside namespaces of its own: the host keeps its routes, rules and kernel settings', () => {
    expect(inside(tc.cluster, ['ip', '-4', '-br', 'addr', 'show', 'eth0'])).toContain('10.200.0.2/24');
    expect(inside(tc.cluster, ['cat', '/proc/sys/net/ipv4/ip_forward']).trim()).toBe('1');
    expect(inside(tc.cluster, ['iptables-save', '-t', 'nat'])).toContain('KUBE-SERVICES');
    expect(hostNetworkState()).toEqual(hostBefore);
  });

  it('resolves a Service name through CoreDNS and reaches the apiserver through its ClusterIP, from a pod', async () => {
    const script = [
      "const dns = require('node:dns').promises; const tls = require('node:tls');",
      "dns.lookup('kubernetes.default.svc.cluster.local').then(({ address }) => {",
      "  const s = tls.connect({ host: 'kubernetes.default.svc', port: 443, rejectUnauthorized: false }, () => { console.log(JSON.stringify({ address, tls: s.getProtocol() })); s.end(); });",
      "  s.on('error', (e) => { console.error(e.message); process.exit(1); });",
      '}, (e) => { console.error(e.message); process.exit(1); });',
    ].join('\n');
    await w.core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name: 'dns-probe' },
        spec: {
          restartPolicy: 'Never',
          containers: [{ name: 'probe', image: tc.images.byRole.controller.name, imagePullPolicy: 'Never', command: ['/nodejs/bin/node', '-e', script] }],
        },
      },
    });
    await eventually(
      async () => (await w.core.readNamespacedPod({ namespace: 'default', name: 'dns-probe' })).status?.phase === 'Succeeded',
      120_000,
      'the DNS probe pod to succeed',
    );
    const log = await w.core.readNamespacedPodLog({ namespace: 'default', name: 'dns-probe' });
    expect(JSON.parse(log.trim())).toEqual({ address: '10.96.0.1', tls: 'TLSv1.3' });
  }, 180_000);

  it('installs with Helm from the local image: both replicas Ready, one leader holding the Lease', async () => {
    await w.install({
      modes: ['secret', 'pod-certificate'],
      propagationDelay: PROPAGATION_DELAY,
      floodControl: { maxNamespaces: PROVIDERS.length },
      providerLabelPolicy: { controllerCheck: true },
    });
    const pods = (await w.core.listNamespacedPod({ namespace: ESO_NS, labelSelector: 'app.kubernetes.io/name=eso-mtls-controller' })).items;
    expect(pods.map((p) => p.metadata!.name)).toContain(await w.leaseHolder());
  }, 300_000);

  it('serves four providers, Secret and pod-certificate mode, which ESO reaches through Service DNS with no failed call', async () => {
    await w.deployProviders();
    // The pod-certificate provider serves a key the kubelet made: its request was Issued. (In the
    // migration mode the controller also writes its namespace's Secret, which that pod does not mount.)
    expect((await w.podCertificateRequests(POD_PROVIDER)).some((r) => (r.status?.certificateChain ?? '') !== '')).toBe(true);
    await w.startCallers(20);
    expect(await w.failedCalls()).toEqual([]);
  }, 420_000);

  it("exports every gauge the controller's metrics source feeds, from the controller pod's /metrics", async () => {
    const metrics = await w.scrapeLeader();
    // The gauges the controller's metrics source feeds (ControllerMetrics), each with at least one series.
    for (const name of [
      METRIC_NAMES.providerCertificateExpiry,
      METRIC_NAMES.clientCertificateExpiry,
      METRIC_NAMES.caCertificateExpiry,
      METRIC_NAMES.namespacesNotServed,
    ]) {
      expect(metrics).toMatch(new RegExp(`^${name}[{ ]`, 'm'));
    }
    for (const reason of ['cap', 'not_allowed']) expect(sampleValue(metrics, METRIC_NAMES.namespacesNotServed, { reason })).toBe(0);
    // The counters before any cause below (a counter's alert fires on its increase from these).
    counters = new ScrapeRecorder({ metrics: () => w.scrapeLeader() });
    const pod = `${await w.onlyPod(FAULTED)}:8081`;
    reloads = new ScrapeRecorder({ metrics: () => w.scrapePod(FAULTED, pod) }, { job: 'file-provider', instance: pod });
    for (let i = 0; i < 3; i++) await Promise.all([counters.scrape(), reloads.scrape()]);
  }, 60_000);

  it('does not start a pod no labelled Service selects: the kubelet asks, and its request is Denied NoProviderService', async () => {
    await w.core.createNamespacedPod({
      namespace: 'provider-a',
      body: {
        metadata: { name: 'unselected', labels: { app: 'not-a-provider' } },
        spec: {
          automountServiceAccountToken: false,
          // The example's namespace enforces the restricted Pod Security Standard.
          securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'c',
              image: tc.images.byRole.pause.name,
              imagePullPolicy: 'Never',
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
              volumeMounts: [{ name: 'credentials', mountPath: '/certs' }],
            },
          ],
          volumes: [
            {
              name: 'credentials',
              projected: {
                sources: [{ podCertificate: { signerName: 'eso-mtls.io/provider-server', keyType: 'ECDSAP256', credentialBundlePath: 'credentials.pem' } }],
              },
            },
          ],
        },
      },
    });
    const denied = async (): Promise<string | undefined> => {
      const requests = await w.podCertificateRequests('provider-a');
      const conditions = requests.filter((r) => r.spec?.podName === 'unselected').flatMap((r) => r.status?.conditions ?? []);
      return conditions.find((c) => c.type === 'Denied')?.reason;
    };
    await eventually(async () => (await denied()) !== undefined, 120_000, "the unselected pod's request to be decided");
    expect(await denied()).toBe('NoProviderService');
    const pod = await w.core.readNamespacedPod({ namespace: 'provider-a', name: 'unselected' });
    expect(pod.status?.containerStatuses?.some((c) => c.state?.running) ?? false).toBe(false);
    await w.core.deleteNamespacedPod({ namespace: 'provider-a', name: 'unselected' });
  }, 180_000);

  it('fires each alert on a series its cause moved: refused, not served, not allowed, rotation failed, reload failed, pod certificate denied', async () => {
    const before = await w.callers();
    // Not served and not allowed: one more namespace an admin allowed, past the cap (4), and one no admin allowed.
    await w.labelledNamespace('provider-d', ALLOWED_NAMESPACE_LABELS);
    await w.labelledNamespace('provider-e', {});
    // Refused: a rotation request longer than the controller reads.
    const annotate = (value: string | null) =>
      w.core.patchNamespacedService({ namespace: REFUSED, name: SERVICE, body: { metadata: { annotations: { [ROTATE_ANNOTATION]: value } } } }, mergePatch);
    await annotate('x'.repeat(MAX_ROTATE_REQUEST_BYTES + 1));
    // Rotation failed and reload failed: someone replaced the key in provider-c's Secret, and a policy
    // refuses the controller the write that would repair it. The provider keeps serving its last good pair.
    const leader = async (name: string, labels: Record<string, string>): Promise<number> => sampleValue(await w.scrapeLeader(), name, labels) ?? 0;
    const provider = async (name: string): Promise<number> =>
      sampleValue(await w.scrapePod(FAULTED, reloads.target.instance), name, { namespace: FAULTED, ...SERVED }) ?? 0;
    const lift = await w.refuseControllerWrites(FAULTED, PROVIDER_SECRET);
    let swapped: number;
    try {
      await w.replaceProviderKey(FAULTED);
      await eventually(async () => (await leader(METRIC_NAMES.namespacesNotServed, { reason: 'cap' })) === 1, 120_000, 'the cap to leave provider-d out');
      await eventually(async () => (await leader(METRIC_NAMES.namespacesNotServed, { reason: 'not_allowed' })) === 1, 120_000, 'provider-e not allowed');
      await eventually(
        async () => (await leader(METRIC_NAMES.providerServicesRefused, { ...REFUSED_SERVICE, reason: 'rotate_request_too_large' })) === 1,
        120_000,
        `${REFUSED}'s rotation request refused`,
      );
      await eventually(
        async () => (await leader(METRIC_NAMES.providerCertificateRotationFailures, { namespace: FAULTED, ...SERVED })) >= 1,
        120_000,
        `the controller's refused repair of ${FAULTED}'s Secret counted`,
      );
      await eventually(
        async () => (await provider(METRIC_NAMES.providerHotReloadFailures)) >= 1,
        120_000,
        `${FAULTED}'s provider to refuse the mismatched pair`,
      );

      for (let i = 0; i < 3; i++) await Promise.all([counters.scrape(), reloads.scrape()]);
      // One scrape a minute: the namespaces' alerts wait 15 minutes (`for: 15m`), the refusal's 10.
      const gauges = new ScrapeRecorder({ metrics: () => w.scrapeLeader() });
      for (let minute = 0; minute <= 15; minute++) await gauges.scrape();
      expectFires(gauges.expectFiring('EsoProviderNamespacesNotServed', [{}]));
      expectFires(gauges.expectFiring('EsoProviderNamespacesNotAllowed', [{}]));
      expectFires(gauges.expectFiring('EsoProviderServiceRefused', [{ ...REFUSED_SERVICE, reason: 'rotate_request_too_large' }]));
      expectFires(counters.expectFiring('EsoProviderCertificateRotationFailed', [{ namespace: FAULTED, ...SERVED }]));
      expectFires(counters.expectFiring('EsoPodCertificateRequestsRefused', [{ signer: 'server', result: 'denied', reason: 'NoProviderService' }]));
      expectFires(reloads.expectFiring('EsoProviderCertificateHotReloadFailed', [{ ...reloads.target, namespace: FAULTED, ...SERVED }]));
      swapped = await provider(METRIC_NAMES.providerHotReloads);
    } finally {
      await lift(); // also after a failure above: the tests after this one need the controller's writes
    }

    // Lifted, the controller repairs the Secret, the provider swaps the new pair in, and no call failed.
    await annotate(null);
    await eventually(() => w.providerPairMatches(FAULTED), 180_000, `the controller to repair ${FAULTED}'s Secret`);
    await eventually(async () => (await provider(METRIC_NAMES.providerHotReloads)) > swapped, 120_000, `${FAULTED}'s provider to swap the repaired pair in`);
    await eventually(
      async () => (await leader(METRIC_NAMES.providerServicesRefused, { ...REFUSED_SERVICE, reason: 'rotate_request_too_large' })) === 0,
      120_000,
      `${REFUSED}'s refusal to clear`,
    );
    await w.callersProgressed(before, 20, 120_000);
    expect(await w.failedCalls()).toEqual([]);
  }, 600_000);

  it('rotates the CA with overlap in both modes once a refused write is lifted, with no failed call: Secret-mode leaves move to the new CA, every bundle holds both', async () => {
    const before = await w.callers();
    const oldCas = await w.caCertificates();
    // First a policy refuses the controller's writes to the CA Secret: the rotation waits, counted and alerted.
    const caFailures = new ScrapeRecorder({ metrics: () => w.scrapeLeader() });
    for (let i = 0; i < 3; i++) await caFailures.scrape();
    const lift = await w.refuseControllerWrites(ESO_NS, CA_SECRET);
    try {
      await w.requestRotation({ secret: CA_SECRET }, ESO_NS);
      await eventually(
        async () => (sampleValue(await w.scrapeLeader(), METRIC_NAMES.caCertificateRotationFailures) ?? 0) >= 1,
        120_000,
        "the controller's refused CA write counted",
      );
      for (let i = 0; i < 3; i++) await caFailures.scrape();
      expectFires(caFailures.expectFiring('EsoCaCertificateRotationFailed', [{}]));
      expect((await w.caCertificates()).map((c) => c.fingerprint256)).toEqual(oldCas.map((c) => c.fingerprint256));
    } finally {
      await lift();
    }
    // Past propagationDelay (30 s) the next CA signs; every Secret-mode leaf and ESO's client move to it.
    await eventually(() => w.secretLeavesMovedFrom(oldCas), 300_000, 'every Secret-mode leaf issued by the new CA');
    const bundles = await w.trustBundles();
    expect(bundles.length).toBeGreaterThan(0);
    for (const b of bundles) expect(pemCertificates(b.spec.trustBundle).length).toBeGreaterThanOrEqual(2);
    await w.callersProgressed(before, 40, 180_000);
    expect(await w.failedCalls()).toEqual([]);
  }, 600_000);

  it("moves to the organisation's PKI by a Helm upgrade (a cert-manager CA ClusterIssuer) through the overlap with no failed call: every leaf chains through the intermediate to the organisation root alone", async () => {
    const before = await w.callers();
    const selfSigned = await w.caCertificates();
    org = await OrganisationPki.start(w);
    const rootFingerprint = fingerprints(org.root.cert)[0];
    const started = Date.now();
    await w.upgrade(org.chartValues());
    // The controller asks cert-manager, publishes the root beside the old one, waits propagationDelay, then moves every leaf.
    await eventually(() => w.secretLeavesMovedFrom(selfSigned), 300_000, 'every Secret-mode leaf issued under the intermediate');
    process.stderr.write(
      `real-node: self-signed to cert-manager: every Secret-mode leaf moved ${((Date.now() - started) / 1000).toFixed(1)} s after helm upgrade\n`,
    );
    const leaves = await w.secretLeaves();
    for (const leaf of leaves) {
      const other = leaf.purpose === 'sslserver' ? 'sslclient' : 'sslserver';
      // The leaf, then the intermediate: a peer holding the root alone verifies it, for its purpose only.
      expect([leaf.namespace, pemCertificates(leaf.tlsCrt).length]).toEqual([leaf.namespace, 2]);
      expect([leaf.namespace, org.verify(leaf.tlsCrt, leaf.purpose)]).toEqual([leaf.namespace, expect.objectContaining({ ok: true })]);
      expect([leaf.namespace, org.verify(leaf.tlsCrt, other).ok]).toEqual([leaf.namespace, false]);
      // ca.crt holds anchors only: the organisation root beside the self-signed roots still retiring.
      expect(fingerprints(leaf.caCrt)).toContain(rootFingerprint);
    }
    expect(new Set(leaves.map(intermediateOf)).size).toBe(1);
    for (const b of await w.trustBundles()) expect(fingerprints(b.spec.trustBundle)).toContain(rootFingerprint);
    const ca = await w.core.readNamespacedSecret({ namespace: ESO_NS, name: CA_SECRET });
    expect(ca.metadata?.annotations?.[CA_SOURCE_ANNOTATION]).toBe(`issuer/ClusterIssuer/${ORG_ISSUER}`);

    // The pod-certificate provider's next certificate (its Deployment restarted) is the leaf, then the intermediate.
    windows.push({ provider: POD_PROVIDER, ...(await w.restartProvider(POD_PROVIDER)) });
    const chain = (await w.newestPodCertificateChain(POD_PROVIDER)) ?? '';
    expect(fingerprints(chain)).toHaveLength(2);
    expect(fingerprints(chain)[1]).toBe(intermediateOf(leaves[0]!));
    expect(org.verify(chain, 'sslserver')).toMatchObject({ ok: true });
    await w.callersProgressed(before, 20, 180_000);
    expect(unlisted(await w.failedCalls(), windows)).toEqual([]);
  }, 900_000);

  it('renews the intermediate under the same root: every Secret-mode leaf moves onto the new one with no trust-bundle or ca.crt write and no failed call', async () => {
    const before = await w.callers();
    const leaves = await w.secretLeaves();
    const old = new Set(leaves.map(intermediateOf));
    expect(old.size).toBe(1);
    const bundles = (await w.trustBundles()).map((b) => [b.metadata!.name, b.metadata!.resourceVersion]);
    const started = Date.now();
    await w.requestRotation({ secret: CA_SECRET }, ESO_NS);
    await eventually(
      async () => (await w.secretLeaves()).every((l) => !old.has(intermediateOf(l))),
      300_000,
      'every Secret-mode leaf under the renewed intermediate',
    );
    const seconds = (Date.now() - started) / 1000;
    const renewed = await w.secretLeaves();
    expect(new Set(renewed.map(intermediateOf)).size).toBe(1);
    for (const leaf of renewed) {
      expect([leaf.namespace, org!.verify(leaf.tlsCrt, leaf.purpose)]).toEqual([leaf.namespace, expect.objectContaining({ ok: true })]);
      expect([leaf.namespace, leaf.caCrt]).toEqual([leaf.namespace, leaves.find((l) => l.namespace === leaf.namespace)!.caCrt]);
    }
    // Not one ClusterTrustBundle written: the anchor is the same, so no overlap and no propagationDelay wait.
    expect((await w.trustBundles()).map((b) => [b.metadata!.name, b.metadata!.resourceVersion])).toEqual(bundles);
    process.stderr.write(`real-node: same-anchor renewal: ${renewed.length} Secret-mode leaves moved in ${seconds.toFixed(1)} s, 0 trust-bundle writes\n`);
    await w.callersProgressed(before, 20, 180_000);
    expect(unlisted(await w.failedCalls(), windows)).toEqual([]);
  }, 600_000);

  it('keeps serving when a provider pod is deleted: its replacement mounts the same Secret and the callers recover', async () => {
    const before = await w.callers();
    windows.push({ provider: 'provider-a', ...(await w.replaceProviderPod('provider-a')) });
    await w.callersProgressed(before, 20, 120_000);
    // Only the callers of provider-a may fail, and only while its only pod was replaced.
    expect(unlisted(await w.failedCalls(), windows)).toEqual([]);
  }, 360_000);

  it(`answers the leader's /healthz within the liveness probe's timeout while a burst of ${BURST} requests is signed, and restarts no controller`, async () => {
    // The bound is the probe's timeout as the chart ships it, read from the running Deployment.
    const deployment = await w.apps.readNamespacedDeployment({ namespace: ESO_NS, name: 'eso-mtls-controller' });
    const container = deployment.spec!.template.spec!.containers.find((c) => c.name === 'controller')!;
    const liveness = container.livenessProbe!;
    const port = container.ports!.find((p) => p.name === liveness.httpGet!.port)!.containerPort;
    const leader = await w.core.readNamespacedPod({ namespace: ESO_NS, name: (await w.leaseHolder())! });
    const prober = probeFromNode(tc.cluster, `http://${leader.status!.podIP}:${port}${liveness.httpGet!.path}`);
    let answers: ProbeAnswer[];
    let burst: Burst | undefined;
    try {
      // One namespace's pod asks again and again, as 1,500 requests from one namespace did on the node.
      burst = await requestBurst(tc.cluster, w.admin, POD_PROVIDER, await w.onlyPod(POD_PROVIDER), BURST, 420_000);
      expect(await burst.decided).toEqual({ Issued: BURST });
    } finally {
      answers = await prober.stop();
      await burst?.stop();
    }
    const slowest = Math.max(...answers.map((a) => a.ms));
    process.stderr.write(`real-node: /healthz of the leader during the burst: ${answers.length} answers, slowest ${slowest.toFixed(0)} ms\n`);
    expect(answers.length).toBeGreaterThan(0);
    expect(answers.filter((a) => a.status !== 200 || a.ms >= liveness.timeoutSeconds! * 1000)).toEqual([]);
    const controllers = await w.core.listNamespacedPod({ namespace: ESO_NS, labelSelector: 'app.kubernetes.io/name=eso-mtls-controller' });
    const restarts = controllers.items.map((p) => ({ pod: p.metadata!.name, restarts: p.status!.containerStatuses!.map((c) => c.restartCount) }));
    expect(restarts).toEqual(controllers.items.map((p) => ({ pod: p.metadata!.name, restarts: [0] })));
  }, 600_000);

  it('stops leaving nothing: no process of its namespaces, no cgroup of its run, the host as it was', async () => {
    const held = holdPidNamespaces([tc.cluster.sandboxPid]);
    try {
      await saveLogs();
      await tc.cluster.stop();
      expect(processesInPidNamespace(held.namespaces[0]!)).toEqual([]);
    } finally {
      held.release();
    }
    expect(readdirSync('/sys/fs/cgroup').filter((h) => existsSync(`/sys/fs/cgroup/${h}${tc.cluster.cgroupRoot}`))).toEqual([]);
    expect(hostNetworkState()).toEqual(hostBefore);
  }, 120_000);
});
