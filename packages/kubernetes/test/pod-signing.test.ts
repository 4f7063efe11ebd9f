// The per-request pod signer (issue 25) on a real kube-apiserver v1.37.2 with the Node authorizer
// and NodeRestriction: fairness across namespaces, a request that arrives during a CA activation,
// and pod reads from the metadata-only cache. Orders and outcomes only, never times. Scale: one
// burst of 40 requests; every other case a few requests.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { type MaterializedCa, type Policy, ROTATE_ANNOTATION, hours, seconds } from '@eso-mtls/core';
import { CoreV1Api } from '@kubernetes/client-node';
import { type ControlPlane, nodeIdentity, startControlPlane } from '../../../testing/envtest/src/index.js';
import { type KubeletPod, type PodCertificatePodSpec, PodCertificateKubelet } from '../../../testing/kubelet/index.js';
import { KubeRestClient, ProviderCertificateAdapter, connectionFromKubeConfig, corePath } from '../src/index.js';
import { silentLogger } from '../src/runtime/logger.js';
import { PodReader } from '../src/pod-certificates/pod-cache.js';
import type { PodSigningLane } from '../src/pod-certificates/pod-signing-lane.js';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { certificates } from '@eso-mtls/test-kit/secrets';
import { CA_SECRET, ESO_NS } from '@eso-mtls/test-kit/cluster';

const SERVER_SIGNER = 'eso-mtls.io/provider-server';
const CLIENT_SIGNER = 'eso-mtls.io/eso-client';
const NODE = 'node-a';
const OTHER_NODE = 'node-b';
/** The next CA waits 30 s in the bundles; the test moves the adapter's clock past it instead of waiting. */
const PROPAGATION = seconds(30);
const POLICY: Partial<Policy> = { esoNamespace: ESO_NS, propagationDelay: PROPAGATION };

describe('the per-request pod signer on kube-apiserver v1.37.2', () => {
  let plane: ControlPlane;
  let core: CoreV1Api;
  let admin: KubeRestClient;
  let kubelet: PodCertificateKubelet;
  let otherKubelet: PodCertificateKubelet;
  let adapter: ProviderCertificateAdapter;
  let skew = 0;
  /** Requests as the signer took them up, by "namespace/request". */
  const dispatched: string[] = [];

  const start = async (): Promise<ProviderCertificateAdapter> => {
    const a = await ProviderCertificateAdapter.create({
      kubeConfig: plane.adminKubeConfig,
      secretMode: false,
      podCertificates: { serverSignerName: SERVER_SIGNER, clientSignerName: CLIENT_SIGNER, maxValidity: hours(24) },
      policy: POLICY,
      now: () => Date.now() + skew,
    });
    // Records the order in which the lane hands requests to the signer (and calls through).
    const signer = a.podSigner!;
    const decide = signer.decide.bind(signer);
    signer.decide = (role, request, signing, clock) => {
      dispatched.push(`${request.metadata?.namespace}/${request.metadata?.name}`);
      return decide(role, request, signing, clock);
    };
    await a.start();
    return a;
  };
  const lane = (a: ProviderCertificateAdapter): PodSigningLane => (a as unknown as { pods: { lane: PodSigningLane } }).pods.lane;

  const providerPod = (namespace: string, name: string): PodCertificatePodSpec => ({
    namespace,
    name,
    serviceAccountName: 'provider',
    labels: { app: 'provider' },
    podCertificate: { signerName: SERVER_SIGNER, keyType: 'ECDSAP256', maxExpirationSeconds: 86400 },
  });

  const labelledNamespace = async (namespace: string): Promise<void> => {
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    await core.createNamespacedService({
      namespace,
      body: {
        metadata: { name: 'provider', labels: { 'external-secrets.io/provider': 'true' } },
        spec: { selector: { app: 'provider' }, ports: [{ port: 8080 }] },
      },
    });
  };

  const activeCa = async (): Promise<X509Certificate> => {
    const secret = await core.readNamespacedSecret({ namespace: ESO_NS, name: CA_SECRET });
    return new X509Certificate(Buffer.from(secret.data?.['ca.crt'] ?? '', 'base64').toString('utf8'));
  };
  const bundled = async (signer: string): Promise<string[]> => {
    const bundle = await admin.get<{ spec: { trustBundle: string } }>(
      `/apis/certificates.k8s.io/v1/clustertrustbundles/${encodeURIComponent(`${signer.replaceAll('/', ':')}:ca`)}`,
    );
    return certificates(bundle.spec.trustBundle).map((c) => c.fingerprint256);
  };

  beforeAll(async () => {
    plane = await startControlPlane({ nodeAuthorization: true, identities: [nodeIdentity(NODE), nodeIdentity(OTHER_NODE)] });
    core = plane.adminKubeConfig.makeApiClient(CoreV1Api);
    admin = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig));
    kubelet = await PodCertificateKubelet.register({ admin: plane.adminKubeConfig, node: plane.kubeconfigFor(`system:node:${NODE}`), nodeName: NODE });
    otherKubelet = await PodCertificateKubelet.register({
      admin: plane.adminKubeConfig,
      node: plane.kubeconfigFor(`system:node:${OTHER_NODE}`),
      nodeName: OTHER_NODE,
    });
    await core.createNamespace({ body: { metadata: { name: ESO_NS } } });
    adapter = await start();
    await adapter.whenSettled();
  }, 180_000);

  afterAll(async () => {
    await adapter?.stop();
    await kubelet?.stop();
    await otherKubelet?.stop();
    admin?.close();
    await plane?.stop();
  });

  it('takes up a lone request of another namespace second, ahead of a burst of 40 queued before it in one namespace', async () => {
    await labelledNamespace('a-burst');
    await labelledNamespace('z-lone');
    const burst = await Promise.all(Array.from({ length: 4 }, (_, i) => kubelet.runPod(providerPod('a-burst', `burst-${i}`))));
    const lone = await kubelet.runPod(providerPod('z-lone', 'lone-0'));
    // No signer runs while the node asks: every request is queued before the first is taken up.
    await adapter.stop();
    const requests = [];
    for (const pod of burst) for (let i = 0; i < 10; i++) requests.push(await kubelet.requestCertificate(pod));
    const loneRequest = await kubelet.requestCertificate(lone);
    dispatched.length = 0;
    adapter = await start();
    const outcomes = await Promise.all([...requests, loneRequest].map((r) => kubelet.waitForOutcome(r)));
    expect(outcomes.map((o) => o.condition)).toEqual(outcomes.map(() => 'Issued'));
    await adapter.podSigningIdle();
    // The apiserver lists them by namespace, burst first; the queue serves the namespaces in turn.
    expect(new Set(dispatched).size).toBe(41);
    expect(dispatched.indexOf(`z-lone/${loneRequest.request.metadata.name}`)).toBe(1);
  });

  it('signs a request that arrives during a CA activation once, after it, by the new CA, which the trust bundles hold', async () => {
    const old = await activeCa();
    const secret = await core.readNamespacedSecret({ namespace: ESO_NS, name: CA_SECRET });
    secret.metadata!.annotations = { ...secret.metadata!.annotations, [ROTATE_ANNOTATION]: 'rotate-1' };
    await core.replaceNamespacedSecret({ namespace: ESO_NS, name: CA_SECRET, body: secret });
    // Prepared: the next CA is in both bundles.
    await eventually(async () => {
      await adapter.reconcileNow();
      expect((await bundled(SERVER_SIGNER)).length).toBe(2);
    });
    // The activation is held between its CA write and the hand-over to the lane, as a slow bundle
    // publish would hold it: the lane has given the old CA back, and the new one is not handed over yet.
    const l = lane(adapter);
    const use = l.use.bind(l);
    let held: MaterializedCa | undefined;
    l.use = (ca) => {
      if (held === undefined && ca.active && new X509Certificate(ca.active.certificate.pem).fingerprint256 !== old.fingerprint256) held = ca;
      else if (held === undefined) use(ca);
    };
    try {
      skew += PROPAGATION;
      await eventually(async () => {
        await adapter.reconcileNow();
        expect(held).toBeDefined();
      });
      const activated = await activeCa();
      expect(activated.fingerprint256).not.toBe(old.fingerprint256);
      const pod = await kubelet.runPod(providerPod('z-lone', 'during-activation-0'));
      const request = await kubelet.requestCertificate(pod);
      await eventually(() => expect(adapter.podSigner!.requests.get('server')!.get('z-lone', request.request.metadata.name!)).toBeDefined());
      await adapter.podSigningIdle();
      // Nothing signs it while no CA is handed over.
      const pending = await admin.get<{ status?: { conditions?: unknown[] } }>(
        `/apis/certificates.k8s.io/v1/namespaces/z-lone/podcertificaterequests/${request.request.metadata.name}`,
      );
      expect(pending.status?.conditions ?? []).toEqual([]);
      use(held!);
      const outcome = await kubelet.waitForOutcome(request);
      expect(outcome.condition).toBe('Issued');
      const leaf = certificates(outcome.condition === 'Issued' ? outcome.certificateChain : '')[0]!;
      expect([leaf.checkIssued(activated) && leaf.verify(activated.publicKey), leaf.checkIssued(old) && leaf.verify(old.publicKey)]).toEqual([true, false]);
      expect(await bundled(SERVER_SIGNER)).toContain(activated.fingerprint256);
    } finally {
      l.use = use;
      if (held) use(held);
    }
  });

  it('reads a pod from the cache when the UID matches, and with a GET when the cached one no longer does: a pod replaced on another node is issued', async () => {
    const pods = adapter.podSigner!.pods;
    // ESO's namespace (the client signer's), with no pod yet, and every namespace with a labelled Service.
    await eventually(() => expect([ESO_NS, 'a-burst', 'z-lone'].map((ns) => pods.cached(ns))).toEqual([true, true, true]));
    const before = { ...pods.stats };
    const first = await kubelet.runPod(providerPod('z-lone', 'moved-0'));
    await eventually(async () => {
      const read = await pods.read('z-lone', 'moved-0', first.pod.metadata!.uid!);
      expect(read.source).toBe('cache');
    });
    const staleRequest = await kubelet.requestCertificate(first);
    expect(await kubelet.waitForOutcome(staleRequest)).toMatchObject({ condition: 'Issued' });
    expect(pods.stats.cache).toBeGreaterThan(before.cache);
    // The cache stops following the namespace's watch but keeps what it holds: the pod it holds goes stale.
    await (pods as unknown as { followed: Map<string, { stop(): Promise<void> }> }).followed.get('z-lone')!.stop();
    await admin.request('DELETE', corePath('pods', 'z-lone', 'moved-0'), { query: { gracePeriodSeconds: 0 } });
    await eventually(() =>
      core.readNamespacedPod({ namespace: 'z-lone', name: 'moved-0' }).then(
        () => false,
        () => true,
      ),
    );
    const moved: KubeletPod = await otherKubelet.runPod(providerPod('z-lone', 'moved-0'));
    expect(moved.pod.metadata!.uid).not.toBe(first.pod.metadata!.uid);
    expect((await pods.read('z-lone', 'moved-0', first.pod.metadata!.uid!)).source).toBe('cache');
    const gets = pods.stats.api;
    const request = await otherKubelet.requestCertificate(moved);
    expect(await otherKubelet.waitForOutcome(request)).toMatchObject({ condition: 'Issued' });
    expect(pods.stats.api).toBe(gets + 1);
  });

  it('caches no namespace whose pods would take the cache past its bound, and reads those pods with GETs', async () => {
    // Bound 5: z-lone's 3 pods fit; a-burst's 4 would make 7, so it is not listed whole, nor cached.
    const lines: { message: string; fields: Record<string, unknown> }[] = [];
    const record = (fields: Record<string, unknown>, message: string): void => void lines.push({ message, fields });
    const reader = new PodReader({
      api: admin,
      informerOptions: { watch: admin, counter: admin.counter },
      logger: { debug: record, info: record, warn: record, error: record },
      maxPods: 5,
    });
    try {
      reader.follow('z-lone');
      await eventually(() => expect(reader.cached('z-lone')).toBe(true));
      expect(reader.size).toBe(3);
      reader.follow('a-burst');
      await eventually(() => expect(lines.map((l) => l.fields)).toContainEqual({ namespace: 'a-burst', pods: 4, maxPods: 5 }));
      expect([reader.cached('a-burst'), reader.size]).toEqual([false, 3]);
      const pod = await core.readNamespacedPod({ namespace: 'a-burst', name: 'burst-0' });
      expect(await reader.read('a-burst', 'burst-0', pod.metadata!.uid!)).toMatchObject({ source: 'api', pod: { uid: pod.metadata!.uid } });
    } finally {
      await reader.stop();
    }
  });

  it('follows no more namespaces than its bound, each one watch: the pods of the others are read with GETs', async () => {
    const reader = new PodReader({ api: admin, informerOptions: { watch: admin, counter: admin.counter }, logger: silentLogger, maxNamespaces: 1 });
    try {
      reader.follow('z-lone');
      reader.follow('a-burst');
      await eventually(() => expect(reader.cached('z-lone')).toBe(true));
      expect(reader.cached('a-burst')).toBe(false);
      const pod = await core.readNamespacedPod({ namespace: 'a-burst', name: 'burst-0' });
      expect((await reader.read('a-burst', 'burst-0', pod.metadata!.uid!)).source).toBe('api');
      // Once a followed namespace goes, another one takes its place.
      reader.retain(new Set(['a-burst']));
      await eventually(() => expect([reader.cached('z-lone'), reader.cached('a-burst')]).toEqual([false, true]));
      expect((await reader.read('a-burst', 'burst-0', pod.metadata!.uid!)).source).toBe('cache');
    } finally {
      await reader.stop();
    }
  });
});
