// The pod-certificate signer on a real kube-apiserver v1.37.2 with the Node authorizer and
// NodeRestriction (issue 15, "Tests on a real control plane"): the adapter runs as the
// controller's ServiceAccount under the RBAC of deploy/overlays/pod-certificates (pod-certificate
// mode only), a kubelet stand-in asks for certificates as its node, and a provider and ESO's
// client talk mTLS from the folders it writes.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { type Policy, ROTATE_ANNOTATION, hours, parseCertificate, seconds } from '@eso-mtls/core';
import { CoreV1Api, type KubeConfig, RbacAuthorizationV1Api, type V1ClusterRole } from '@kubernetes/client-node';
import {
  CertificateWatcher,
  createSecretStoreProviderClient,
  ProviderChannel,
  type ProviderServer,
  type SecretStoreProvider,
  startProviderServer,
} from '../../grpc/src/index.js';
import { probe } from '@eso-mtls/test-kit/tls-probe';
import { applyAll, find, kustomizeBuild, kustomizeInstall, serviceAccountKubeConfig } from '@eso-mtls/test-kit/manifests';
import { type ControlPlane, nodeIdentity, startControlPlane } from '../../../testing/envtest/src/index.js';
import {
  KUBELET_KEY_TYPES,
  type KubeletPod,
  type PodCertificatePodSpec,
  PodCertificateKubelet,
  PodCertificateVolume,
  type PodCertificateRequest,
  podCertificateRequestPath,
  podCertificateRequestsPath,
  weakExponentRsaKey,
} from '../../../testing/kubelet/index.js';
import {
  type AdapterOptions,
  connectionFromKubeConfig,
  corePath,
  KubeApiError,
  type ListPage,
  ProviderCertificateAdapter,
  KubeRestClient,
} from '../src/index.js';
import { certificates } from '@eso-mtls/test-kit/secrets';
import { eventually } from '@eso-mtls/test-kit/eventually';

const ESO_NS = 'external-secrets-system';
const CONTROLLER_SA = 'eso-mtls-controller';
const ESO_SA = 'external-secrets';
const CA_SECRET = 'eso-provider-ca-internal';
const SERVER_SIGNER = 'eso-mtls.io/provider-server';
const CLIENT_SIGNER = 'eso-mtls.io/eso-client';
const TRUST_BUNDLE = 'eso-mtls.io/trust-bundle';
const TRUST_LABEL = { [TRUST_BUNDLE]: 'true' };
const PROVIDERS = 'pods-providers';
const NODE = 'node-a';
/**
 * A rotation whose waits are seconds, so the adapter's clock stays near the apiserver's (a leaf's
 * notBefore must be within 5 minutes of it): the next CA waits 30 s in the bundles before it signs.
 */
const PROPAGATION = seconds(30);
const POLICY: Partial<Policy> = { esoNamespace: ESO_NS, propagationDelay: PROPAGATION, maxConnectionAge: seconds(2) };
const BUNDLE_WRITTEN_AT = 'eso-mtls.io/bundle-written-at';
const ACTIVE_SINCE = 'eso-mtls.io/active-since';

interface ClusterTrustBundle {
  readonly metadata: {
    readonly name: string;
    readonly resourceVersion?: string;
    readonly labels?: Record<string, string>;
    readonly annotations?: Record<string, string>;
  };
  readonly spec: { readonly signerName: string; readonly trustBundle: string };
}

const leafOf = (volume: PodCertificateVolume): X509Certificate => certificates(volume.credentials!.issued.certificateChain)[0]!;
const serial = (c: X509Certificate): string => c.serialNumber.toLowerCase();
const fingerprints = (pem: string): string[] => certificates(pem).map((c) => c.fingerprint256);
/** Node's own check (issuer name, AKI/SKI, signature), not ours. */
const signedBy = (leaf: X509Certificate, ca: X509Certificate): boolean => leaf.checkIssued(ca) && leaf.verify(ca.publicKey);

describe('pod-certificate mode on kube-apiserver v1.37.2, as the controller ServiceAccount with the pod-only RBAC', () => {
  let plane: ControlPlane;
  let core: CoreV1Api;
  let admin: KubeRestClient;
  let saKc: KubeConfig;
  let sa: KubeRestClient;
  let kubelet: PodCertificateKubelet;
  let adapter: ProviderCertificateAdapter;
  /** The adapter's clock: the wall clock plus `skew`, which the rotation test moves forward by seconds. */
  let skew = 0;
  const decided: { signer: string; result: string; reason: string; namespace: string }[] = [];
  const folders: string[] = [];
  const closers: (() => unknown)[] = [];
  /** The provider pod of test 1, its volume, and ESO's, reused by the later tests. */
  let providerVolume: PodCertificateVolume;
  let esoVolume: PodCertificateVolume;
  let server: ProviderServer;
  let client: CertificateWatcher;
  let channel: ProviderChannel;

  const adapterOptions = (): AdapterOptions => ({
    kubeConfig: saKc,
    secretMode: false,
    podCertificates: { serverSignerName: SERVER_SIGNER, clientSignerName: CLIENT_SIGNER, maxValidity: hours(24) },
    policy: POLICY,
    now: () => Date.now() + skew,
    debounceMs: 20,
    hooks: { onPodCertificateRequest: (signer, result, reason, namespace) => decided.push({ signer, result, reason, namespace }) },
  });

  const startSigner = async (): Promise<ProviderCertificateAdapter> => {
    const a = await ProviderCertificateAdapter.create(adapterOptions());
    await a.start();
    return a;
  };

  const folder = (): string => {
    const dir = mkdtempSync(join(tmpdir(), 'eso-mtls-pod-certificates-'));
    folders.push(dir);
    return join(dir, 'volume');
  };

  /** A Service labelled external-secrets.io/provider=true selecting `selector`. */
  const labelledService = (namespace: string, name: string, selector: Record<string, string>) =>
    core.createNamespacedService({
      namespace,
      body: { metadata: { name, labels: { 'external-secrets.io/provider': 'true' } }, spec: { selector, ports: [{ port: 8080, name: 'grpc' }] } },
    });

  const providerPod = (name: string, labels: Record<string, string>): PodCertificatePodSpec => ({
    namespace: PROVIDERS,
    name,
    serviceAccountName: 'provider',
    labels,
    podCertificate: { signerName: SERVER_SIGNER, keyType: 'ECDSAP256', maxExpirationSeconds: 86400 },
    clusterTrustBundle: { signerName: CLIENT_SIGNER, labelSelector: { matchLabels: TRUST_LABEL } },
  });

  const esoPod = (namespace: string, name: string, serviceAccountName: string): PodCertificatePodSpec => ({
    namespace,
    name,
    serviceAccountName,
    labels: { app: name },
    podCertificate: { signerName: CLIENT_SIGNER, keyType: 'ECDSAP256', maxExpirationSeconds: 86400 },
    clusterTrustBundle: { signerName: SERVER_SIGNER, labelSelector: { matchLabels: TRUST_LABEL } },
  });

  const volumeFor = async (spec: PodCertificatePodSpec): Promise<{ pod: KubeletPod; volume: PodCertificateVolume }> => {
    const pod = await kubelet.runPod(spec);
    return { pod, volume: new PodCertificateVolume(kubelet, pod, folder()) };
  };

  const caSecretText = async (key: string): Promise<string> => {
    const secret = await core.readNamespacedSecret({ namespace: ESO_NS, name: CA_SECRET });
    return Buffer.from(secret.data?.[key] ?? '', 'base64').toString('utf8');
  };
  const activeCa = async (): Promise<X509Certificate> => new X509Certificate(await caSecretText('ca.crt'));
  const trustBundle = (signer: string): Promise<ClusterTrustBundle> =>
    admin.get<ClusterTrustBundle>(`/apis/certificates.k8s.io/v1/clustertrustbundles/${encodeURIComponent(signer.replaceAll('/', ':') + ':ca')}`);

  /** One getSecret over the test's channel; the provider answers with the client certificate's serial. */
  const call = async (key: string): Promise<string> =>
    (await createSecretStoreProviderClient(channel, { retry: false }).getSecret({ remoteRef: { key } })).toString();

  /** The serial the provider presents now to ESO's client, over a raw TLS probe with the client's folder. */
  const servedSerial = async (): Promise<string | undefined> => {
    const esoDir = esoVolume.directory;
    const bundle = readFileSync(join(esoDir, 'credentials.pem'), 'utf8');
    const outcome = await probe(server.port, {
      ca: readFileSync(join(esoDir, 'ca.crt'), 'utf8'),
      key: bundle,
      cert: bundle,
      servername: `provider.${PROVIDERS}.svc`,
    });
    return outcome.accepted ? outcome.serverSerial : undefined;
  };

  beforeAll(async () => {
    plane = await startControlPlane({ nodeAuthorization: true, identities: [nodeIdentity(NODE)] });
    core = plane.adminKubeConfig.makeApiClient(CoreV1Api);
    admin = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig));
    await applyAll(plane.adminKubeConfig, kustomizeInstall('deploy/overlays/pod-certificates'));
    saKc = (await serviceAccountKubeConfig(plane.adminKubeConfig, plane.url, plane.caPem, ESO_NS, CONTROLLER_SA)).kc;
    sa = new KubeRestClient(await connectionFromKubeConfig(saKc));
    // The ClusterRoleBinding reaches the authorizer's cache a moment after it is created.
    await eventually(() => sa.get('/apis/certificates.k8s.io/v1/podcertificaterequests'), 30_000);
    kubelet = await PodCertificateKubelet.register({ admin: plane.adminKubeConfig, node: plane.kubeconfigFor(`system:node:${NODE}`), nodeName: NODE });
    await core.createNamespace({ body: { metadata: { name: PROVIDERS } } });
    adapter = await startSigner();
  }, 180_000);

  afterAll(async () => {
    for (const close of closers.reverse()) await close();
    await adapter?.stop();
    await kubelet?.stop();
    sa?.close();
    admin?.close();
    await plane?.stop();
    for (const dir of folders) rmSync(dir, { recursive: true, force: true });
  });

  it('issues a selected provider pod its four DNS names and ESO its client certificate, publishes the CA in labelled ClusterTrustBundles, and they talk mTLS', async () => {
    expect((await admin.get<{ gitVersion: string }>('/version')).gitVersion).toBe('v1.37.2');
    await labelledService(PROVIDERS, 'provider', { app: 'provider' });
    await eventually(() => expect(adapter.informers.services.get(PROVIDERS, 'provider')).toBeDefined());
    ({ volume: providerVolume } = await volumeFor(providerPod('provider-0', { app: 'provider' })));
    expect(await providerVolume.mount()).toMatchObject({ condition: 'Issued' });
    const leaf = leafOf(providerVolume);
    const names = parseCertificate(leaf.toString()).dnsNames;
    expect([...names].sort()).toEqual(['provider', `provider.${PROVIDERS}`, `provider.${PROVIDERS}.svc`, `provider.${PROVIDERS}.svc.cluster.local`].sort());
    expect(parseCertificate(leaf.toString()).extendedKeyUsage).toEqual(['serverAuth']);

    // One bundle per signer, named <signer with / replaced by :>:ca, labelled, holding the CA that signs.
    const ca = await activeCa();
    expect(signedBy(leaf, ca)).toBe(true);
    for (const signer of [SERVER_SIGNER, CLIENT_SIGNER]) {
      const bundle = await trustBundle(signer);
      expect(bundle.metadata.name).toBe(`${signer.replaceAll('/', ':')}:ca`);
      expect(bundle.spec.signerName).toBe(signer);
      expect(bundle.metadata.labels).toMatchObject({
        ...TRUST_LABEL,
        'app.kubernetes.io/managed-by': 'eso-mtls',
        'app.kubernetes.io/component': 'trust-bundle',
      });
      expect(bundle.metadata.annotations).toMatchObject({ 'eso-mtls.io/installation': `${ESO_NS}/${CA_SECRET}` });
      expect(fingerprints(bundle.spec.trustBundle)).toEqual([ca.fingerprint256]);
    }
    // The kubelet projected the client signer's bundle into the provider's folder.
    expect(fingerprints(readFileSync(join(providerVolume.directory, 'ca.crt'), 'utf8'))).toEqual([ca.fingerprint256]);

    ({ volume: esoVolume } = await volumeFor(esoPod(ESO_NS, 'external-secrets-0', ESO_SA)));
    expect(await esoVolume.mount()).toMatchObject({ condition: 'Issued' });
    const clientLeaf = parseCertificate(leafOf(esoVolume).toString());
    const spiffeId = `spiffe://cluster.local/ns/${ESO_NS}/sa/${ESO_SA}`;
    expect([clientLeaf.subjectCommonName, clientLeaf.extendedKeyUsage, clientLeaf.dnsNames, clientLeaf.uris]).toEqual([
      'external-secrets-core',
      ['clientAuth'],
      [],
      [spiffeId],
    ]);

    const implementation: SecretStoreProvider = {
      getSecret: (request, context) => ({ value: Buffer.from(`${request.remoteRef?.key} for ${context.client.serialNumber}`) }),
    };
    server = await startProviderServer({
      implementation,
      certDir: providerVolume.directory,
      certLayout: 'pod-certificate',
      // The identity the provider side checks: ESO's CN and, here too, its SPIFFE ID.
      requireClientIdentity: { spiffeId },
      host: '127.0.0.1',
      port: 0,
      healthPort: 0,
      log: false,
    });
    closers.push(() => server.close());
    client = new CertificateWatcher({ directory: esoVolume.directory, layout: 'pod-certificate', purpose: 'clientAuth' });
    closers.push(() => client.close());
    await client.start();
    channel = new ProviderChannel({
      address: `provider.${PROVIDERS}.svc:8080`,
      connectTo: `127.0.0.1:${server.port}`,
      material: client,
      channelOptions: { 'grpc.use_local_subchannel_pool': 1 },
    });
    closers.push(() => channel.close());
    expect(await call('db-password')).toBe(`db-password for ${serial(leafOf(esoVolume))}`);
    expect(await servedSerial()).toBe(serial(leaf));
    // Nothing went into a Secret outside ESO's namespace.
    expect((await core.listSecretForAllNamespaces()).items.filter((s) => s.metadata?.namespace !== ESO_NS)).toEqual([]);
  });

  it('denies a pod no labelled Service selects with NoProviderService, and issues its next request once its Service is labelled', async () => {
    // A Service selects the pod, but nobody labelled it external-secrets.io/provider=true yet.
    await core.createNamespacedService({
      namespace: PROVIDERS,
      body: { metadata: { name: 'lonely' }, spec: { selector: { app: 'lonely' }, ports: [{ port: 8080 }] } },
    });
    const { volume } = await volumeFor(providerPod('lonely-0', { app: 'lonely' }));
    const denied = await volume.mount();
    expect(denied).toMatchObject({ condition: 'Denied', reason: 'NoProviderService' });
    expect(denied.condition === 'Denied' && denied.message).toContain('lonely-0');
    expect(volume.credentials).toBeUndefined();
    // The hook runs when the status write returns, which the kubelet's watch may beat.
    await eventually(() => expect(decided).toContainEqual({ signer: 'server', result: 'denied', reason: 'NoProviderService', namespace: PROVIDERS }));
    await eventually(async () => {
      const events = await core.listNamespacedEvent({ namespace: PROVIDERS, fieldSelector: 'involvedObject.name=lonely-0' });
      expect(events.items.map((e) => [e.involvedObject.kind, e.type, e.reason])).toContainEqual(['Pod', 'Warning', 'PodCertificateDenied']);
    });

    const service = await core.readNamespacedService({ namespace: PROVIDERS, name: 'lonely' });
    service.metadata!.labels = { ...service.metadata!.labels, 'external-secrets.io/provider': 'true' };
    await core.replaceNamespacedService({ namespace: PROVIDERS, name: 'lonely', body: service });
    await eventually(() => expect(adapter.informers.services.get(PROVIDERS, 'lonely')).toBeDefined());
    const issuedHere = (): number => decided.filter((d) => d.result === 'issued' && d.namespace === PROVIDERS).length;
    const issuedBefore = issuedHere();
    expect(await volume.mount()).toMatchObject({ condition: 'Issued' });
    expect([...parseCertificate(leafOf(volume).toString()).dnsNames].sort()).toEqual(
      ['lonely', `lonely.${PROVIDERS}`, `lonely.${PROVIDERS}.svc`, `lonely.${PROVIDERS}.svc.cluster.local`].sort(),
    );
    // Its Event is still being coalesced when the hook runs; podEventsSent resolves once it is written (issue 25).
    await eventually(() => expect(issuedHere()).toBe(issuedBefore + 1));
    await adapter.podEventsSent();
    const events = await core.listNamespacedEvent({ namespace: PROVIDERS, fieldSelector: 'involvedObject.name=lonely' });
    // Ours only: the apiserver may record its own on the Service (ClusterIPNotAllocated while it repairs).
    const ours = events.items.filter((e) => e.reportingComponent === 'eso-mtls');
    expect(ours.map((e) => [e.involvedObject.kind, e.type, e.reason, e.message])).toEqual([
      ['Service', 'Normal', 'PodCertificateIssued', expect.stringContaining('to pod lonely-0 from eso-mtls.io/provider-server')],
    ]);
  });

  it('denies an RSA-3072 key with public exponent 3, which the apiserver accepts, as UnsupportedKeyType naming the exponent', async () => {
    const { pod } = await volumeFor({ ...providerPod('weak-key-0', { app: 'provider' }), podCertificate: { signerName: SERVER_SIGNER, keyType: 'RSA3072' } });
    const request = await kubelet.requestCertificate(pod, { key: await weakExponentRsaKey('RSA3072', 3) });
    const denied = await kubelet.waitForOutcome(request);
    expect(denied).toMatchObject({ condition: 'Denied', reason: 'UnsupportedKeyType' });
    expect(denied.condition === 'Denied' && denied.message).toContain(
      `pod ${PROVIDERS}/weak-key-0 asks for an RSA key of 3072 bits with public exponent 3; only 65537 is accepted`,
    );
    await eventually(() => expect(decided).toContainEqual({ signer: 'server', result: 'denied', reason: 'UnsupportedKeyType', namespace: PROVIDERS }));
  });

  it('denies a pod that only a labelled ExternalName Service selects (ExternalNameService), and leaves that Service out beside one that selects the pod', async () => {
    // The apiserver stores a selector on an ExternalName Service, and Kubernetes ignores it: the names alias another host.
    await core.createNamespacedService({
      namespace: PROVIDERS,
      body: {
        metadata: { name: 'alias', labels: { 'external-secrets.io/provider': 'true' } },
        spec: { type: 'ExternalName', externalName: 'provider.example.com', selector: { app: 'aliased' } },
      },
    });
    await eventually(() => expect(adapter.informers.services.get(PROVIDERS, 'alias')).toBeDefined());
    const { volume } = await volumeFor(providerPod('aliased-0', { app: 'aliased' }));
    const denied = await volume.mount();
    expect(denied).toMatchObject({ condition: 'Denied', reason: 'ExternalNameService' });
    expect(denied.condition === 'Denied' && denied.message).toContain(`Service ${PROVIDERS}/alias selects pod aliased-0 but is of type ExternalName`);
    expect(volume.credentials).toBeUndefined();
    await eventually(() => expect(decided).toContainEqual({ signer: 'server', result: 'denied', reason: 'ExternalNameService', namespace: PROVIDERS }));

    await labelledService(PROVIDERS, 'aliased', { app: 'aliased' });
    await eventually(() => expect(adapter.informers.services.get(PROVIDERS, 'aliased')).toBeDefined());
    expect(await volume.mount()).toMatchObject({ condition: 'Issued' });
    expect([...parseCertificate(leafOf(volume).toString()).dnsNames].sort()).toEqual(
      ['aliased', `aliased.${PROVIDERS}`, `aliased.${PROVIDERS}.svc`, `aliased.${PROVIDERS}.svc.cluster.local`].sort(),
    );
  });

  it.each(KUBELET_KEY_TYPES)('issues for a %s key the kubelet generated, and a provider serves it over mTLS', async (keyType) => {
    const { volume } = await volumeFor({
      ...providerPod(`key-${keyType.toLowerCase()}`, { app: 'provider' }),
      podCertificate: { signerName: SERVER_SIGNER, keyType, maxExpirationSeconds: 86400 },
    });
    expect(await volume.mount()).toMatchObject({ condition: 'Issued' });
    const leaf = leafOf(volume);
    expect(leaf.publicKey.equals(volume.credentials!.key.publicKey)).toBe(true);
    expect(signedBy(leaf, await activeCa())).toBe(true);
    const served = await startProviderServer({
      implementation: { getSecret: (request) => ({ value: Buffer.from(`${keyType} ${request.remoteRef?.key}`) }) },
      certDir: volume.directory,
      certLayout: 'pod-certificate',
      host: '127.0.0.1',
      port: 0,
      healthPort: 0,
      log: false,
    });
    const keyChannel = new ProviderChannel({ address: `provider.${PROVIDERS}.svc:8080`, connectTo: `127.0.0.1:${served.port}`, material: client });
    try {
      expect((await createSecretStoreProviderClient(keyChannel, { retry: false }).getSecret({ remoteRef: { key: 'k' } })).toString()).toBe(`${keyType} k`);
    } finally {
      await keyChannel.close();
      await served.close();
    }
  });

  it('decides a burst of requests made at once, each once, with no status write lost', async () => {
    // Once the signing lane is idle, every earlier decision has reached the hook.
    await adapter.podSigningIdle();
    const issuedBefore = decided.filter((d) => d.namespace === PROVIDERS && d.result === 'issued').length;
    const pods = await Promise.all(Array.from({ length: 20 }, (_, i) => volumeFor(providerPod(`burst-${i}`, { app: 'provider' }))));
    const outcomes = await Promise.all(pods.map(({ volume }) => volume.mount()));
    expect(outcomes.map((o) => o.condition)).toEqual(pods.map(() => 'Issued'));
    expect(new Set(pods.map(({ volume }) => serial(leafOf(volume)))).size).toBe(pods.length);
    await adapter.podSigningIdle();
    expect(decided.filter((d) => d.namespace === PROVIDERS && d.result === 'issued').length - issuedBefore).toBe(pods.length);
    const requests = (await admin.get<ListPage<PodCertificateRequest>>(podCertificateRequestsPath(PROVIDERS))).items.filter((r) =>
      r.spec.podName.startsWith('burst-'),
    );
    expect(requests.map((r) => r.status?.conditions?.map((c) => c.type))).toEqual(pods.map(() => ['Issued']));
    // What the signer holds of a request ends with its decision, not with the request's 30 minutes in the API.
    expect(heldRequests(adapter)).toBe(0);
    expect(decided.filter((d) => d.reason === 'StatusWriteFailed')).toEqual([]);
  });

  it.each([
    [604_800, hours(24)],
    [3_600, hours(1)],
  ])('clamps a request for maxExpirationSeconds %i to a lifetime the apiserver accepts within the 24-hour maximum', async (maxExpirationSeconds, lifetime) => {
    const { volume } = await volumeFor({
      ...providerPod(`lifetime-${maxExpirationSeconds}`, { app: 'provider' }),
      podCertificate: { signerName: SERVER_SIGNER, keyType: 'ECDSAP256', maxExpirationSeconds },
    });
    expect(await volume.mount()).toMatchObject({ condition: 'Issued' });
    const { notBefore, notAfter, beginRefreshAt } = volume.credentials!.issued;
    expect(notAfter.getTime() - notBefore.getTime()).toBe(lifetime);
    const leaf = leafOf(volume);
    expect([new Date(leaf.validFrom).getTime(), new Date(leaf.validTo).getTime()]).toEqual([notBefore.getTime(), notAfter.getTime()]);
    expect(beginRefreshAt.getTime()).toBeGreaterThanOrEqual(notBefore.getTime() + seconds(600));
    expect(beginRefreshAt.getTime()).toBeLessThanOrEqual(notAfter.getTime() - seconds(600));
  });

  it('denies a client certificate to any ServiceAccount but ESO’s in ESO’s namespace (UnauthorizedServiceAccount)', async () => {
    for (const [namespace, account] of [
      [ESO_NS, 'intruder'],
      [PROVIDERS, ESO_SA],
    ] as const) {
      const { volume } = await volumeFor(esoPod(namespace, `client-as-${account}`, account));
      const outcome = await volume.mount();
      expect({ namespace, account, outcome }).toMatchObject({ namespace, account, outcome: { condition: 'Denied', reason: 'UnauthorizedServiceAccount' } });
      expect(volume.credentials).toBeUndefined();
    }
  });

  it('refreshes at beginRefreshAt: a new key and certificate from the same CA, which the provider serves to the next connection', async () => {
    const before = providerVolume.credentials!;
    const old = leafOf(providerVolume);
    expect(await providerVolume.refreshIfDue(new Date(before.issued.beginRefreshAt.getTime() - 1000))).toBeUndefined();
    expect(await providerVolume.refreshIfDue(before.issued.beginRefreshAt)).toMatchObject({ condition: 'Issued' });
    const renewed = leafOf(providerVolume);
    expect(serial(renewed)).not.toBe(serial(old));
    expect(providerVolume.credentials!.key.publicKey.equals(before.key.publicKey)).toBe(false);
    expect(signedBy(renewed, await activeCa())).toBe(true);
    await eventually(async () => expect(await servedSerial()).toBe(serial(renewed)));
    expect(await call('after-refresh')).toContain('after-refresh');
  });

  it('refuses, with the controller’s own token, every attempt outside the grant (403)', async () => {
    // Every pod above got its certificate without a Secret outside ESO's namespace.
    expect((await core.listSecretForAllNamespaces()).items.filter((s) => s.metadata?.namespace !== ESO_NS)).toEqual([]);
    await core.createNamespacedSecret({ namespace: PROVIDERS, body: { metadata: { name: 'external-secrets-provider-tls' }, stringData: { 'tls.crt': 'x' } } });
    const secret = corePath('secrets', PROVIDERS, 'external-secrets-provider-tls');
    const stored = await admin.get<{ metadata: object }>(secret);
    // A request of a signer that is not ours, made by the node for a pod mounting that signer.
    const { pod } = await volumeFor({
      ...providerPod('other-signer-0', { app: 'other' }),
      podCertificate: { signerName: 'other.example/signer', keyType: 'ECDSAP256' },
    });
    const { request } = await kubelet.requestCertificate(pod);
    const denial = {
      ...request,
      status: {
        conditions: [
          {
            type: 'Denied',
            status: 'True',
            reason: 'NotOurs',
            message: 'written by eso-mtls',
            lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
          },
        ],
      },
    };
    const attempts: [string, () => Promise<unknown>][] = [
      ['create a Secret in a provider namespace', () => sa.create(corePath('secrets', PROVIDERS), { metadata: { name: 'planted' }, stringData: { k: 'v' } })],
      ['update the provider Secret in a provider namespace', () => sa.replace(secret, { ...stored, stringData: { 'tls.crt': 'y' } })],
      ['read the provider Secret in a provider namespace', () => sa.get(secret)],
      ['list Secrets in every namespace', () => sa.get<ListPage<unknown>>('/api/v1/secrets')],
      [
        'sign (write the status of) a request for another signer',
        () => sa.replace(podCertificateRequestPath(PROVIDERS, request.metadata.name!, 'status'), denial),
      ],
      [
        'attest (create) a ClusterTrustBundle for another signer',
        () =>
          sa.create('/apis/certificates.k8s.io/v1/clustertrustbundles', {
            metadata: { name: 'other.example:signer:ca' },
            spec: { signerName: 'other.example/signer', trustBundle: readFileSync(join(providerVolume.directory, 'ca.crt'), 'utf8') },
          }),
      ],
      [
        'create a PodCertificateRequest',
        () => sa.create(`/apis/certificates.k8s.io/v1/namespaces/${PROVIDERS}/podcertificaterequests`, { ...request, metadata: { generateName: 'req-' } }),
      ],
      ['delete a PodCertificateRequest', () => sa.request('DELETE', podCertificateRequestPath(PROVIDERS, request.metadata.name!))],
      ['label a pod', () => sa.mergePatch(corePath('pods', PROVIDERS, 'other-signer-0'), { metadata: { labels: { app: 'provider' } } })],
    ];
    const answers: string[] = [];
    for (const [what, attempt] of attempts) {
      const error = await attempt().then(
        () => undefined,
        (e: unknown) => e,
      );
      answers.push(
        `${what}: ${error instanceof KubeApiError ? (error.code === 403 ? '403' : `${error.code} ${error.message}`) : `allowed (${String(error)})`}`,
      );
    }
    // kube-apiserver checks `sign` while validating the status write: that refusal is a 422 Forbidden field error, not a 403.
    const signRefusal = `spec.signerName: Forbidden: User "system:serviceaccount:${ESO_NS}:${CONTROLLER_SA}" is not permitted to "sign" for signer "other.example/signer"`;
    expect(answers).toEqual(
      attempts.map(([what]) =>
        what.startsWith('sign ') ? expect.stringMatching(new RegExp(`^${escapeRegExp(`${what}: 422 `)}.*${escapeRegExp(signRefusal)}`)) : `${what}: 403`,
      ),
    );
    // The controller token is the adapter's: the same apiserver let it sign for our signers all along.
    expect(decided.filter((d) => d.result === 'issued').length).toBeGreaterThanOrEqual(4);
  });

  it('puts back the trust-bundle label someone removed from its ClusterTrustBundle, so projections match it again', async () => {
    const name = `${CLIENT_SIGNER.replaceAll('/', ':')}:ca`;
    const bundle = await trustBundle(CLIENT_SIGNER);
    const { [TRUST_BUNDLE]: removed, ...labels } = bundle.metadata.labels!;
    expect(removed).toBe('true');
    await admin.replace(`/apis/certificates.k8s.io/v1/clustertrustbundles/${encodeURIComponent(name)}`, {
      ...bundle,
      metadata: { ...bundle.metadata, labels },
    });
    // The kubelet's projection selects by the label: without it, ESO's trust in the client CA is gone from new pods.
    expect(await kubelet.trustBundles(CLIENT_SIGNER, { matchLabels: TRUST_LABEL })).toEqual([]);
    await eventually(async () => {
      await adapter.reconcileNow();
      expect((await trustBundle(CLIENT_SIGNER)).metadata.labels).toMatchObject(TRUST_LABEL);
    });
    expect((await trustBundle(CLIENT_SIGNER)).spec.trustBundle).toBe(bundle.spec.trustBundle);
    const { volume } = await volumeFor(providerPod('after-relabel-0', { app: 'provider' }));
    expect(await volume.mount()).toMatchObject({ condition: 'Issued' });
    expect(fingerprints(readFileSync(join(volume.directory, 'ca.crt'), 'utf8'))).toEqual([(await activeCa()).fingerprint256]);
  });

  it('denies a request whose pod is gone (PodNotFound) or was replaced under its name (PodMismatch)', async () => {
    const gone = await volumeFor(providerPod('gone-0', { app: 'provider' }));
    const replaced = await volumeFor(providerPod('replaced-0', { app: 'provider' }));
    // No signer runs while the node asks and the pods go, as after a controller outage.
    await adapter.stop();
    const requests = await Promise.all([gone, replaced].map(({ pod }) => kubelet.requestCertificate(pod)));
    const forceDelete = (name: string) => admin.request('DELETE', corePath('pods', PROVIDERS, name), { query: { gracePeriodSeconds: 0 } });
    await forceDelete('gone-0');
    await forceDelete('replaced-0');
    await eventually(() =>
      core.readNamespacedPod({ namespace: PROVIDERS, name: 'replaced-0' }).then(
        () => false,
        () => true,
      ),
    );
    await kubelet.runPod(providerPod('replaced-0', { app: 'provider' }));
    adapter = await startSigner();
    const [podNotFound, podMismatch] = await Promise.all(requests.map((r) => kubelet.waitForOutcome(r)));
    expect(podNotFound).toMatchObject({ condition: 'Denied', reason: 'PodNotFound' });
    expect(podMismatch).toMatchObject({ condition: 'Denied', reason: 'PodMismatch' });
  });

  it('keeps signing with the same CA after a restart', async () => {
    const ca = await activeCa();
    const before = parseCertificate(leafOf(providerVolume).toString());
    const versions = async (): Promise<(string | undefined)[]> => [
      (await core.readNamespacedSecret({ namespace: ESO_NS, name: CA_SECRET })).metadata?.resourceVersion,
      ...(await Promise.all([SERVER_SIGNER, CLIENT_SIGNER].map(trustBundle))).map((b) => b.metadata.resourceVersion),
    ];
    const stored = await versions();
    await adapter.stop();
    // The kubelet asks while no signer runs; the new one finds the request in its first list.
    const refreshed = providerVolume.refreshIfDue(providerVolume.credentials!.issued.beginRefreshAt);
    const pending = await eventually(async () => {
      const list = await admin.get<ListPage<PodCertificateRequest>>(podCertificateRequestsPath(PROVIDERS));
      const waiting = list.items.filter((r) => r.spec.podName === 'provider-0' && !r.status?.conditions?.length);
      expect(waiting).toHaveLength(1);
      return waiting[0]!;
    });
    adapter = await startSigner();
    expect(await refreshed).toMatchObject({ condition: 'Issued', request: { metadata: { name: pending.metadata.name } } });
    // Neither the CA Secret nor a trust bundle was written again.
    expect(await versions()).toEqual(stored);
    const after = parseCertificate(leafOf(providerVolume).toString());
    expect(after.serialNumber).not.toBe(before.serialNumber);
    const caView = parseCertificate(ca.toString());
    expect(after.authorityKeyIdentifier).toBeDefined();
    expect([after.issuer, after.authorityKeyIdentifier]).toEqual([caView.subject, caView.subjectKeyIdentifier]);
    expect(signedBy(leafOf(providerVolume), ca)).toBe(true);
    expect((await activeCa()).fingerprint256).toBe(ca.fingerprint256);
    expect(await call('after-restart')).toContain('after-restart');
  });

  it('with the namespace check of deploy/overlays/provider-label-policy/namespace-check, denies a pod of a namespace without the label (NamespaceNotAllowed) and issues once an admin labels it', async () => {
    // The shipped component on top of the pod-only overlay: its ClusterRole rule is all the signer gets for namespaces.
    const dir = mkdtempSync(join(tmpdir(), 'eso-mtls-namespace-check-'));
    folders.push(dir);
    const overlay = (path: string): string => relative(dir, resolve(import.meta.dirname, '../../..', path));
    writeFileSync(
      join(dir, 'kustomization.yaml'),
      `resources:\n- ${overlay('deploy/overlays/pod-certificates')}\ncomponents:\n- ${overlay('deploy/overlays/provider-label-policy/namespace-check')}\n`,
    );
    const built = kustomizeBuild(dir);
    const deployment = find<{ spec: { template: { spec: { containers: { args: string[] }[] } } } }>(built, 'Deployment', 'eso-mtls-controller');
    expect(deployment.spec.template.spec.containers[0]!.args).toContain('--require-namespace-label=eso-mtls.io/providers-allowed=true');
    const role = find<V1ClusterRole>(built, 'ClusterRole', 'eso-mtls-controller');
    await plane.adminKubeConfig.makeApiClient(RbacAuthorizationV1Api).replaceClusterRole({ name: 'eso-mtls-controller', body: role });
    await eventually(() => sa.get('/api/v1/namespaces', { labelSelector: 'eso-mtls.io/providers-allowed=true', limit: 1 }), 30_000);
    await adapter.stop();
    adapter = await ProviderCertificateAdapter.create({ ...adapterOptions(), namespaceRequirement: { key: 'eso-mtls.io/providers-allowed', value: 'true' } });
    await adapter.start();
    try {
      const ns = 'pods-not-allowed';
      await core.createNamespace({ body: { metadata: { name: ns } } });
      await labelledService(ns, 'gated', { app: 'gated' });
      await eventually(() => expect(adapter.informers.services.get(ns, 'gated')).toBeDefined());
      const { volume } = await volumeFor({ ...providerPod('gated-0', { app: 'gated' }), namespace: ns });
      const denied = await volume.mount();
      expect(denied).toMatchObject({ condition: 'Denied', reason: 'NamespaceNotAllowed' });
      expect(denied.condition === 'Denied' && denied.message).toContain(`kubectl label namespace ${ns} eso-mtls.io/providers-allowed=true`);
      await eventually(() => expect(decided).toContainEqual({ signer: 'server', result: 'denied', reason: 'NamespaceNotAllowed', namespace: ns }));
      // An admin allows the namespace; the kubelet's next request is issued.
      await core.patchNamespace({ name: ns, body: [{ op: 'add', path: '/metadata/labels/eso-mtls.io~1providers-allowed', value: 'true' }] });
      await eventually(() => expect(adapter.informers.allowedNamespaces?.has(ns)).toBe(true));
      expect(await volume.mount()).toMatchObject({ condition: 'Issued' });
      expect([...parseCertificate(leafOf(volume).toString()).dnsNames]).toContain(`gated.${ns}.svc`);
    } finally {
      // The rotation test below runs the signer as configured at the start.
      await adapter.stop();
      adapter = await startSigner();
    }
  });

  it('signs a backlog of requests beside the Secret mode: a Service labelled in another namespace meanwhile gets its Secret while backlog requests are still pending, and each request is decided once', async () => {
    // Scale: 20 pods x 20 requests = 400 pending when the controller starts (the issue's 20 x 200 = 4,000
    // is measured by `npm run bench -- pod-certificates`, docs/benchmarks.md). Ordering, not time:
    // the Secret's write must come before the last backlog decision.
    const ns = 'pods-backlog';
    const other = 'secrets-meanwhile';
    await core.createNamespace({ body: { metadata: { name: ns } } });
    await core.createNamespace({ body: { metadata: { name: other } } });
    await labelledService(ns, 'backlog', { app: 'backlog' });
    const pods = await Promise.all(Array.from({ length: 20 }, (_, i) => kubelet.runPod({ ...providerPod(`backlog-${i}`, { app: 'backlog' }), namespace: ns })));
    // No signer runs while the node asks, as after an outage.
    await adapter.stop();
    const requests: Awaited<ReturnType<PodCertificateKubelet['requestCertificate']>>[] = [];
    const queue = pods.flatMap((pod) => Array.from({ length: 20 }, () => pod));
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let pod = queue.pop(); pod; pod = queue.pop()) requests.push(await kubelet.requestCertificate(pod));
      }),
    );
    const backlogDecided: string[] = [];
    let decidedWhenWritten: number | undefined;
    // Both modes, as the migration runs; the admin's credentials carry the Secret mode's rights.
    adapter = await ProviderCertificateAdapter.create({
      ...adapterOptions(),
      kubeConfig: plane.adminKubeConfig,
      secretMode: true,
      hooks: {
        onPodCertificateRequest: (signer, result, reason, namespace) => {
          decided.push({ signer, result, reason, namespace });
          if (namespace === ns) backlogDecided.push(result);
        },
        onWrite: (write) => {
          if (typeof write.target !== 'string' && write.target.namespace === other && write.kind === 'serverLeaf') decidedWhenWritten ??= backlogDecided.length;
        },
      },
    });
    try {
      await adapter.start();
      // The signer is at work on the backlog; only now is the Service labelled.
      await eventually(() => expect(backlogDecided.length).toBeGreaterThan(0));
      await labelledService(other, 'meanwhile', { app: 'meanwhile' });
      await eventually(() => expect(decidedWhenWritten).toBeDefined());
      expect(await core.readNamespacedSecret({ namespace: other, name: 'external-secrets-provider-tls' })).toBeDefined();
      // Written while the backlog was still pending: the round did not wait for the signer.
      expect(decidedWhenWritten).toBeLessThan(requests.length);
      // The backlog drains: every request issued, each status written once.
      const outcomes = await Promise.all(requests.map((r) => kubelet.waitForOutcome(r)));
      expect(outcomes.filter((o) => o.condition !== 'Issued')).toEqual([]);
      await adapter.podSigningIdle();
      expect(backlogDecided).toEqual(requests.map(() => 'issued'));
      const stored = (await admin.get<ListPage<PodCertificateRequest>>(podCertificateRequestsPath(ns))).items;
      expect(stored.map((r) => r.status?.conditions?.map((c) => c.type))).toEqual(requests.map(() => ['Issued']));
      expect(decided.filter((d) => d.reason === 'StatusWriteFailed')).toEqual([]);
    } finally {
      await adapter.stop();
      adapter = await startSigner();
    }
  }, 180_000);

  it('runs a CA overlap rotation (eso-mtls.io/rotate) through with calls in flight: the next CA is in both bundles before it signs, the old one leaves after a day, and no call fails', async () => {
    const old = await activeCa();
    const calls = { ok: 0, failed: [] as string[] };
    let running = true;
    const traffic = (async () => {
      for (let i = 0; running; i++) {
        await call(`in-flight-${i}`).then(
          () => calls.ok++,
          (e: Error) => calls.failed.push(e.message),
        );
        await new Promise((r) => setTimeout(r, 25));
      }
    })();

    try {
      const secret = await core.readNamespacedSecret({ namespace: ESO_NS, name: CA_SECRET });
      secret.metadata!.annotations = { ...secret.metadata!.annotations, [ROTATE_ANNOTATION]: 'rotate-1' };
      await core.replaceNamespacedSecret({ namespace: ESO_NS, name: CA_SECRET, body: secret });

      // Prepare: the next CA is in the CA Secret and both trust bundles, and does not sign yet.
      const next = await eventually(async () => {
        const pem = await caSecretText('next.crt');
        expect(pem).toContain('BEGIN CERTIFICATE');
        return new X509Certificate(pem);
      });
      const published = await eventually(async () => {
        const bundles = await Promise.all([SERVER_SIGNER, CLIENT_SIGNER].map(trustBundle));
        for (const b of bundles) expect(fingerprints(b.spec.trustBundle).sort()).toEqual([old.fingerprint256, next.fingerprint256].sort());
        return bundles;
      });
      // The kubelet's resync projects both CAs; a leaf issued within propagationDelay still comes from the old CA.
      for (const volume of [providerVolume, esoVolume]) await volume.resync();
      expect(fingerprints(readFileSync(join(esoVolume.directory, 'ca.crt'), 'utf8')).sort()).toEqual([old.fingerprint256, next.fingerprint256].sort());
      expect(fingerprints(readFileSync(join(providerVolume.directory, 'ca.crt'), 'utf8')).sort()).toEqual([old.fingerprint256, next.fingerprint256].sort());
      for (const volume of [providerVolume, esoVolume]) {
        expect(await volume.refreshIfDue(volume.credentials!.issued.beginRefreshAt)).toMatchObject({ condition: 'Issued' });
        expect(signedBy(leafOf(volume), old)).toBe(true);
      }
      expect((await activeCa()).fingerprint256).toBe(old.fingerprint256);

      // Activate: the adapter's clock moves past propagationDelay; the next CA signs from then.
      skew += PROPAGATION;
      await eventually(async () => {
        await adapter.reconcileNow();
        expect((await activeCa()).fingerprint256).toBe(next.fingerprint256);
      });
      // Both bundles held the next CA for propagationDelay before it became active (the adapter's own stamps).
      const activeSince = Date.parse((await core.readNamespacedSecret({ namespace: ESO_NS, name: CA_SECRET })).metadata!.annotations![ACTIVE_SINCE]!);
      for (const b of published) expect(activeSince - Date.parse(b.metadata.annotations![BUNDLE_WRITTEN_AT]!)).toBeGreaterThanOrEqual(PROPAGATION);
      // The provider moves to the new CA first, ESO's client after: each side still trusts the other.
      expect(await providerVolume.refreshIfDue(providerVolume.credentials!.issued.beginRefreshAt)).toMatchObject({ condition: 'Issued' });
      expect(signedBy(leafOf(providerVolume), next)).toBe(true);
      await eventually(async () => expect(await servedSerial()).toBe(serial(leafOf(providerVolume))));
      const beforeClient = calls.ok;
      await eventually(() => expect(calls.ok).toBeGreaterThan(beforeClient + 3));
      expect(await esoVolume.refreshIfDue(esoVolume.credentials!.issued.beginRefreshAt)).toMatchObject({ condition: 'Issued' });
      expect(signedBy(leafOf(esoVolume), next)).toBe(true);
      await eventually(() => expect(serial(new X509Certificate(client.current!.certificate))).toBe(serial(leafOf(esoVolume))));
      const afterClient = calls.ok;
      await eventually(() => expect(calls.ok).toBeGreaterThan(afterClient + 3));

      // Retire: the old CA stays in both bundles while a pod certificate it signed can be in use, a
      // day (the maximum validity) after activation plus propagationDelay and maxConnectionAge; then it leaves.
      const bundled = async (): Promise<string[][]> =>
        (await Promise.all([SERVER_SIGNER, CLIENT_SIGNER].map(trustBundle))).map((b) => fingerprints(b.spec.trustBundle).sort());
      skew = activeSince + hours(24) - seconds(60) - Date.now();
      await adapter.reconcileNow();
      expect(await bundled()).toEqual([SERVER_SIGNER, CLIENT_SIGNER].map(() => [old.fingerprint256, next.fingerprint256].sort()));
      skew = activeSince + hours(24) + PROPAGATION + seconds(10) - Date.now();
      await eventually(async () => {
        await adapter.reconcileNow();
        expect(await bundled()).toEqual([[next.fingerprint256], [next.fingerprint256]]);
      });
      expect(certificates(await caSecretText('retired.crt'))).toEqual([]);
      // The kubelet's next resync drops the old CA from both folders; calls go on.
      for (const volume of [providerVolume, esoVolume]) {
        await volume.resync();
        expect(fingerprints(readFileSync(join(volume.directory, 'ca.crt'), 'utf8'))).toEqual([next.fingerprint256]);
      }
      const afterRetire = calls.ok;
      await eventually(() => expect(calls.ok).toBeGreaterThan(afterRetire + 3));
    } finally {
      running = false;
      await traffic;
    }
    expect(calls.failed).toEqual([]);
    expect(calls.ok).toBeGreaterThan(10);
  }, 120_000);
});

/** Requests the signer holds in memory, both signers together. */
function heldRequests(adapter: ProviderCertificateAdapter): number {
  return [...adapter.podSigner!.requests.values()].reduce((n, informer) => n + informer.size, 0);
}

/** `text` matched literally inside a RegExp. */
function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
