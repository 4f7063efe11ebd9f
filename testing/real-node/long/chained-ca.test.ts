// `npm run test:real-node` (after faults.test.ts): the provider CA chained to the organisation's PKI
// on the real node, the parts npm test leaves out. The release is installed with a cert-manager CA
// ClusterIssuer as its CA source from the start (the real cert-manager, a host process against the
// cluster's apiserver, holding a test organisation root); then, one after another: the intermediate
// renewed under the same root, the organisation's root rotated (an anchor change through the
// overlap), a request denied (EsoCaUpstreamProblem fires on it) then sent again and approved, and
// the move back to the self-signed CA. Providers in Secret and pod-certificate mode and ESO's client
// pods call through Service DNS the whole time: no failed call. Secret and ClusterTrustBundle writes
// are counted from the apiserver's audit log, and the figures printed as one JSON line for
// docs/benchmarks.md. Short timings (a 30 s propagationDelay, the kubelet's sync at 10 s), as in npm
// test: what is measured is the work each change costs, not the production waits. The alert is
// judged by promtool on the leader's scrapes, each standing for a minute.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CA_REQUEST_ANNOTATION, CA_SOURCE_ANNOTATION, SELF_SIGNED_SOURCE } from '@eso-mtls/core';
import { METRIC_NAMES } from '@eso-mtls/metrics';
import { CA_SECRET, ESO_NS, SA_USER } from '@eso-mtls/test-kit/cluster';
import { WITHOUT_APPROVER } from '@eso-mtls/test-kit/cert-manager-process';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { ScrapeRecorder } from '@eso-mtls/test-kit/scrapes';
import { opensslVerifyChain } from '@eso-mtls/test-kit/upstream-pki';
import { auditedWrites } from '../support/audit.js';
import { type TestCluster, startTestCluster } from '../support/cluster.js';
import { ORG_ISSUER, OrganisationPki } from '../support/organisation-pki.js';
import { POD_PROVIDER, type SecretLeaf, World, pemCertificates, sampleValue } from '../support/world.js';

const PROPAGATION_DELAY = '30s';
const SOURCE = `issuer/ClusterIssuer/${ORG_ISSUER}`;

/** The audit log keeps the writes of Secrets and ClusterTrustBundles only (Metadata level: names and times, never the data). */
const WRITES_AUDIT = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete"]
  resources:
  - { group: "", resources: ["secrets"] }
  - { group: "certificates.k8s.io", resources: ["clustertrustbundles"] }
- level: None
`;

/** What one change of the CA cost: from the request until every Secret-mode leaf had moved. */
interface ChangeCost {
  readonly seconds: number;
  /** The controller's Secret writes in that span (the CA Secret's, each leaf's, the client's). */
  readonly secretWrites: number;
  readonly bundleWrites: number;
  readonly failedCalls: number;
}

const fingerprints = (pem: string): string[] => pemCertificates(pem).map((c) => c.fingerprint256);
const intermediateOf = (leaf: SecretLeaf): string | undefined => fingerprints(leaf.tlsCrt)[1];

describe("the provider CA chained to the organisation's PKI on the real node: renewal, a new root, a denial, and back to self-signed", () => {
  let tc: TestCluster;
  let w: World;
  let org: OrganisationPki;
  const measured: Record<string, ChangeCost> = {};

  beforeAll(async () => {
    tc = await startTestCluster({ syncFrequency: '10s', audit: { policyYaml: WRITES_AUDIT } });
    w = new World(tc);
    // The anchors Secret lives in ESO's namespace, which the platform team makes before the release.
    await w.core.createNamespace({ body: { metadata: { name: ESO_NS } } });
    org = await OrganisationPki.start(w);
  }, 20 * 60_000);
  afterAll(async () => {
    await w?.saveLogs('real-node-chained').catch(() => undefined);
    if (Object.keys(measured).length > 0) process.stderr.write(`real-node chained figures: ${JSON.stringify(measured)}\n`);
    await org?.stop();
    w?.helm.remove();
    await tc?.cluster.stop();
  }, 120_000);

  /** The controller's writes since `from`: Secrets (any namespace) and ClusterTrustBundles. */
  const writesSince = (from: number): { secrets: number; bundles: number } => {
    const events = tc.auditEvents();
    const since = (resource: string): number => auditedWrites(events, resource).filter((x) => x.user === SA_USER && x.at >= from).length;
    return { secrets: since('secrets'), bundles: since('clustertrustbundles') };
  };

  /** Every Secret-mode leaf chained under the current root alone, for its purpose. */
  const expectChained = async (): Promise<SecretLeaf[]> => {
    const leaves = await w.secretLeaves();
    for (const leaf of leaves) {
      expect([leaf.namespace, pemCertificates(leaf.tlsCrt).length]).toEqual([leaf.namespace, 2]);
      expect([leaf.namespace, org.verify(leaf.tlsCrt, leaf.purpose)]).toEqual([leaf.namespace, expect.objectContaining({ ok: true })]);
    }
    expect(new Set(leaves.map(intermediateOf)).size).toBe(1);
    return leaves;
  };

  /** What a change begun at `from` has cost until now. */
  const costSince = async (from: number): Promise<ChangeCost> => {
    const seconds = (Date.now() - from) / 1000;
    const writes = writesSince(from);
    return { seconds, secretWrites: writes.secrets, bundleWrites: writes.bundles, failedCalls: (await w.failedCalls()).length };
  };

  /** Waits until no Secret-mode leaf carries one of `old` intermediates, and what that cost since `from`. */
  const leavesMoved = async (old: ReadonlySet<string | undefined>, from: number, what: string): Promise<ChangeCost> => {
    await eventually(async () => (await w.secretLeaves()).every((l) => !old.has(intermediateOf(l))), 300_000, what);
    return costSince(from);
  };

  it('installs with the ClusterIssuer as the CA source: every leaf, pod certificates too, chains through the intermediate to the organisation root alone', async () => {
    await w.install({ modes: ['secret', 'pod-certificate'], propagationDelay: PROPAGATION_DELAY, ...org.chartValues() });
    await w.deployProviders();
    await w.startCallers(20);
    const leaves = await expectChained();
    // ca.crt and every bundle: the organisation root alone, no intermediate and no root of the controller's.
    for (const leaf of leaves) expect([leaf.namespace, fingerprints(leaf.caCrt)]).toEqual([leaf.namespace, fingerprints(org.root.cert)]);
    for (const b of await w.trustBundles()) expect(fingerprints(b.spec.trustBundle)).toEqual(fingerprints(org.root.cert));
    const ca = await w.core.readNamespacedSecret({ namespace: ESO_NS, name: CA_SECRET });
    expect(ca.metadata?.annotations?.[CA_SOURCE_ANNOTATION]).toBe(SOURCE);
    // The pod-certificate provider's key was made by the kubelet; its chain is the leaf, then the intermediate.
    const chain = (await w.newestPodCertificateChain(POD_PROVIDER)) ?? '';
    expect(fingerprints(chain)).toEqual([expect.any(String), intermediateOf(leaves[0]!)]);
    expect(org.verify(chain, 'sslserver')).toMatchObject({ ok: true });
    expect(await w.failedCalls()).toEqual([]);
  }, 900_000);

  it('renews the intermediate under the same root: every leaf moves with no trust-bundle write and no failed call', async () => {
    const before = await w.callers();
    const leaves = await expectChained();
    const started = Date.now();
    await w.requestRotation({ secret: CA_SECRET }, ESO_NS);
    measured.sameAnchor = await leavesMoved(new Set(leaves.map(intermediateOf)), started, 'every leaf under the renewed intermediate');
    const renewed = await expectChained();
    for (const leaf of renewed) expect([leaf.namespace, leaf.caCrt]).toEqual([leaf.namespace, leaves.find((l) => l.namespace === leaf.namespace)!.caCrt]);
    expect(measured.sameAnchor.bundleWrites).toBe(0);
    await w.callersProgressed(before, 20, 180_000);
    expect(await w.failedCalls()).toEqual([]);
  }, 600_000);

  it('moves through the overlap when the organisation rotates its root: the new root published beside the old, then the leaves move, with no failed call', async () => {
    const before = await w.callers();
    const leaves = await expectChained();
    const oldRoot = org.root;
    // The platform team publishes the new root in the anchors input, then its issuer signs with it; a rotation request asks now.
    await org.rotateRoot();
    const started = Date.now();
    await w.requestRotation({ secret: CA_SECRET }, ESO_NS);
    measured.anchorChange = await leavesMoved(new Set(leaves.map(intermediateOf)), started, 'every leaf under an intermediate of the new root');
    const moved = await expectChained();
    // Anchors only, both while the old root retires: leaves under either verify everywhere.
    const both = [...fingerprints(oldRoot.cert), ...fingerprints(org.root.cert)].sort();
    for (const leaf of moved) expect([leaf.namespace, fingerprints(leaf.caCrt).sort()]).toEqual([leaf.namespace, both]);
    for (const b of await w.trustBundles()) expect(fingerprints(b.spec.trustBundle).sort()).toEqual(both);
    expect(opensslVerifyChain(oldRoot.cert, moved[0]!.tlsCrt).ok).toBe(false);
    expect(measured.anchorChange.bundleWrites).toBeGreaterThan(0);
    await w.callersProgressed(before, 20, 180_000);
    expect(await w.failedCalls()).toEqual([]);
  }, 600_000);

  it(
    'denied, then approved: keeps signing with the intermediate it has while EsoCaUpstreamProblem fires on the denial; the refused request deleted, it is sent again and issued',
    async () => {
      const before = await w.callers();
      const leaves = await expectChained();
      await org.restartCertManager({ controllers: WITHOUT_APPROVER });
      const leader = async (): Promise<number> =>
        sampleValue(await w.scrapeLeader(), METRIC_NAMES.caUpstreamProblem, { source: SOURCE, reason: 'request_denied' }) ?? 0;
      const scrapes = new ScrapeRecorder({ metrics: () => w.scrapeLeader() });
      for (let i = 0; i < 3; i++) await scrapes.scrape();
      await w.requestRotation({ secret: CA_SECRET }, ESO_NS);
      const request = await eventually(
        async () => {
          const ca = await w.core.readNamespacedSecret({ namespace: ESO_NS, name: CA_SECRET });
          return ca.metadata?.annotations?.[CA_REQUEST_ANNOTATION] || false;
        },
        120_000,
        'the CA request named on the CA Secret',
      );
      await eventually(() => org.requestExists(ESO_NS, request), 120_000, `CertificateRequest ${request}`);
      await org.decide(ESO_NS, request, 'Denied', 'intermediates need a second approval here');
      await eventually(async () => (await leader()) === 1, 120_000, 'the denial reported');
      // One scrape a minute: the alert waits 15 minutes (`for: 15m`). Meanwhile the intermediate it has keeps signing.
      for (let minute = 0; minute <= 15; minute++) await scrapes.scrape();
      const fired = scrapes.expectFiring('EsoCaUpstreamProblem', [{ source: SOURCE, reason: 'request_denied' }]);
      expect([fired.status, fired.stdout + fired.stderr]).toEqual([0, expect.stringContaining('SUCCESS')]);
      expect((await w.secretLeaves()).map((l) => l.tlsCrt)).toEqual(leaves.map((l) => l.tlsCrt));

      // The runbook's way to ask again at once, the policy fixed: delete the refused request. The
      // pending key's request is sent again under the same name, and approved this time.
      const started = Date.now();
      await org.deleteRequest(ESO_NS, request);
      await eventually(() => org.requestPending(ESO_NS, request), 120_000, `CertificateRequest ${request} sent again`);
      await org.decide(ESO_NS, request, 'Approved', 'approved on the second look');
      measured.deniedThenApproved = await leavesMoved(new Set(leaves.map(intermediateOf)), started, 'every leaf under the approved intermediate');
      await expectChained();
      await eventually(async () => (await leader()) === 0, 120_000, 'the denial no longer reported');
      await w.callersProgressed(before, 20, 180_000);
      expect(await w.failedCalls()).toEqual([]);
    },
    40 * 60_000,
  );

  it('moves back to the self-signed CA by a Helm upgrade through the overlap, with no failed call', async () => {
    const before = await w.callers();
    const chained = await w.caCertificates();
    const started = Date.now();
    await w.upgrade({ ca: { source: 'selfSigned' } });
    await eventually(() => w.secretLeavesMovedFrom(chained), 300_000, 'every leaf issued by the self-signed root');
    measured.backToSelfSigned = await costSince(started);
    const ca = await w.core.readNamespacedSecret({ namespace: ESO_NS, name: CA_SECRET });
    expect(ca.metadata?.annotations?.[CA_SOURCE_ANNOTATION]).toBe(SELF_SIGNED_SOURCE);
    const [root] = await w.caCertificates();
    for (const leaf of await w.secretLeaves()) {
      // A leaf alone under a root of the controller's; ca.crt still holds the organisation's roots while they retire.
      expect([leaf.namespace, pemCertificates(leaf.tlsCrt).length]).toEqual([leaf.namespace, 1]);
      expect([leaf.namespace, opensslVerifyChain(root!.toString(), leaf.tlsCrt, leaf.purpose)]).toEqual([
        leaf.namespace,
        expect.objectContaining({ ok: true }),
      ]);
      expect(fingerprints(leaf.caCrt)).toEqual(expect.arrayContaining([root!.fingerprint256, ...fingerprints(org.root.cert)]));
    }
    await w.callersProgressed(before, 20, 180_000);
    expect(await w.failedCalls()).toEqual([]);
  }, 900_000);
});
