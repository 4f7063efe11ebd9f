// The kubelet stand-in on a real kube-apiserver with the Node authorizer and NodeRestriction. The
// test itself plays a trivial signer (the admin has `sign` on every signer) where one is needed.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { createPublicKey, webcrypto } from 'node:crypto';
import { existsSync, lstatSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BasicConstraintsExtension, Pkcs10CertificateRequest, X509Certificate, X509CertificateGenerator } from '@peculiar/x509';
import { decodePemBlocks } from '@eso-mtls/core';
import { connectionFromKubeConfig, KubeApiError, type ListPage, KubeRestClient } from '@eso-mtls/kubernetes';
import { type ControlPlane, nodeIdentity, startControlPlane } from '../envtest/src/index.js';
import {
  type ClusterTrustBundle,
  KUBELET_KEY_TYPES,
  type KubeletKeyType,
  type KubeletPod,
  labelSelectorQuery,
  type PodCertificatePodSpec,
  type PodCertificateRequest,
  PodCertificateKubelet,
  PodCertificateVolume,
  podCertificateRequestPath,
  podCertificateRequestsPath,
} from './index.js';

const SERVER_SIGNER = 'eso-mtls.io/provider-server';
const CLIENT_SIGNER = 'eso-mtls.io/eso-client';
const TRUST_LABEL = { 'eso-mtls.io/trust-bundle': 'true' };
const NAMESPACE = 'providers';
const crypto = webcrypto as unknown as Parameters<typeof X509CertificateGenerator.create>[1];
const CA_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };

/** A self-signed P-256 CA, made with WebCrypto. */
async function makeCa(name: string): Promise<{ certificate: X509Certificate; keys: webcrypto.CryptoKeyPair; pem: string }> {
  const keys = await webcrypto.subtle.generateKey(CA_ALGORITHM, false, ['sign', 'verify']);
  const certificate = await X509CertificateGenerator.createSelfSigned(
    {
      name: `CN=${name}`,
      keys: keys as never,
      signingAlgorithm: CA_ALGORITHM,
      notBefore: new Date(Date.now() - 3600_000),
      notAfter: new Date(Date.now() + 7 * 86400_000),
      extensions: [new BasicConstraintsExtension(true, undefined, true)],
    },
    crypto,
  );
  return { certificate, keys, pem: certificate.toString('pem') + '\n' };
}

const wholeSeconds = (ms: number): Date => new Date(Math.floor(ms / 1000) * 1000);
const openssl = (...args: string[]): string => execFileSync('openssl', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const der = (pem: string): string[] => decodePemBlocks(pem).map((b) => Buffer.from(b.der).toString('base64'));

describe('the kubelet stand-in on kube-apiserver with the Node authorizer and NodeRestriction', () => {
  let plane: ControlPlane;
  let admin: KubeRestClient;
  let nodeA: PodCertificateKubelet;
  let nodeB: PodCertificateKubelet;
  let signerCa: Awaited<ReturnType<typeof makeCa>>;
  let trustedCas: Awaited<ReturnType<typeof makeCa>>[];
  let untrustedCas: Awaited<ReturnType<typeof makeCa>>[];
  const folders: string[] = [];

  const podSpec = (name: string, keyType: KubeletKeyType = 'ECDSAP256'): PodCertificatePodSpec => ({
    namespace: NAMESPACE,
    name,
    serviceAccountName: 'provider',
    labels: { app: name },
    podCertificate: { signerName: SERVER_SIGNER, keyType, maxExpirationSeconds: 86400 },
    clusterTrustBundle: { signerName: CLIENT_SIGNER, labelSelector: { matchLabels: TRUST_LABEL } },
  });

  const folder = (): string => {
    const dir = mkdtempSync(join(tmpdir(), 'eso-mtls-kubelet-'));
    folders.push(dir);
    return join(dir, 'volume');
  };

  const createTrustBundle = (name: string, signerName: string, cas: readonly { pem: string }[], labels?: Record<string, string>): Promise<unknown> =>
    admin.create(`/apis/certificates.k8s.io/v1/clustertrustbundles`, {
      metadata: { name, ...(labels ? { labels } : {}) },
      spec: { signerName, trustBundle: cas.map((c) => c.pem).join('') },
    });

  /** The next request for `podName` with no answer yet, as the signer would find it (polled, no time limit of its own). */
  async function nextPending(podName: string, after: ReadonlySet<string> = new Set()): Promise<PodCertificateRequest> {
    for (;;) {
      const list = await admin.get<ListPage<PodCertificateRequest>>(podCertificateRequestsPath(NAMESPACE));
      const pending = list.items.find((r) => r.spec.podName === podName && !r.status?.conditions?.length && !after.has(r.metadata.name!));
      if (pending) return pending;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The trivial signer: a leaf for the stub request's public key, from `signerCa`, written as the Issued status. */
  async function issue(request: PodCertificateRequest, lifetimeSeconds = 7200): Promise<X509Certificate> {
    const stub = new Pkcs10CertificateRequest(Buffer.from(request.spec.stubPKCS10Request, 'base64'));
    const notBefore = wholeSeconds(Date.now() - 60_000);
    const notAfter = new Date(notBefore.getTime() + lifetimeSeconds * 1000);
    const leaf = await X509CertificateGenerator.create(
      {
        serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(16)))
          .toString('hex')
          .replace(/^./, '1'),
        subject: '',
        issuer: signerCa.certificate.subject,
        notBefore,
        notAfter,
        publicKey: stub.publicKey,
        signingKey: signerCa.keys.privateKey as never,
        signingAlgorithm: CA_ALGORITHM,
      },
      crypto,
    );
    await admin.replace(podCertificateRequestPath(NAMESPACE, request.metadata.name!, 'status'), {
      ...request,
      status: {
        conditions: [
          {
            type: 'Issued',
            status: 'True',
            reason: 'Issued',
            message: 'issued by the test',
            lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
          },
        ],
        // Text around the blocks is stored verbatim; the kubelet must drop it.
        certificateChain: `issued by the test\n${leaf.toString('pem')}\n${signerCa.pem}trailing text\n`,
        notBefore: notBefore.toISOString().replace('.000Z', 'Z'),
        beginRefreshAt: new Date(notBefore.getTime() + (lifetimeSeconds / 2) * 1000).toISOString().replace('.000Z', 'Z'),
        notAfter: notAfter.toISOString().replace('.000Z', 'Z'),
      },
    });
    return leaf;
  }

  beforeAll(async () => {
    plane = await startControlPlane({ nodeAuthorization: true, identities: [nodeIdentity('node-a'), nodeIdentity('node-b')] });
    admin = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig));
    nodeA = await PodCertificateKubelet.register({ admin: plane.adminKubeConfig, node: plane.kubeconfigFor('system:node:node-a'), nodeName: 'node-a' });
    nodeB = await PodCertificateKubelet.register({ admin: plane.adminKubeConfig, node: plane.kubeconfigFor('system:node:node-b'), nodeName: 'node-b' });
    signerCa = await makeCa('signer');
    trustedCas = await Promise.all(['client-1', 'client-2', 'client-3'].map(makeCa));
    untrustedCas = await Promise.all(['unlabelled', 'other-signer'].map(makeCa));
    // Two labelled bundles of the client signer that share a CA, one unlabelled, and one of the other signer.
    await createTrustBundle('eso-mtls.io:eso-client:ca', CLIENT_SIGNER, trustedCas.slice(0, 2), TRUST_LABEL);
    await createTrustBundle('eso-mtls.io:eso-client:next', CLIENT_SIGNER, trustedCas.slice(1, 3), TRUST_LABEL);
    await createTrustBundle('eso-mtls.io:eso-client:unlabelled', CLIENT_SIGNER, [untrustedCas[0]!]);
    await createTrustBundle('eso-mtls.io:provider-server:ca', SERVER_SIGNER, [untrustedCas[1]!], TRUST_LABEL);
  }, 180_000);

  afterAll(async () => {
    await nodeA?.stop();
    await nodeB?.stop();
    admin?.close();
    await plane?.stop();
    for (const dir of folders) rmSync(dir, { recursive: true, force: true });
  });

  it('registers each node as itself, and NodeRestriction refuses a request for another node’s pod', async () => {
    const node = await admin.get<{ metadata: { uid: string } }>('/api/v1/nodes/node-a');
    expect(nodeA.nodeUid).toBe(node.metadata.uid);
    const onB = await nodeB.runPod(podSpec('on-node-b'));

    const refused = await nodeA.requestCertificate(onB).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(KubeApiError);
    expect(refused).toMatchObject({ code: 403 });
    expect((refused as Error).message).toMatch(/pod "providers\/on-node-b" is not running on node "node-a" named in the PodCertificateRequest/);

    // The same pod's own node may ask, but only for the signer its volume names.
    const own = await nodeB.requestCertificate(onB);
    expect(own.request.spec).toMatchObject({ nodeName: 'node-b', nodeUID: nodeB.nodeUid, podName: 'on-node-b', podUID: onB.pod.metadata!.uid });
    await expect(nodeB.requestCertificate(onB, { signerName: CLIENT_SIGNER })).rejects.toMatchObject({
      code: 403,
      message: expect.stringContaining(`does not mount a podCertificate projected volume for signer "${CLIENT_SIGNER}"`),
    });
  });

  it('sends a stub request whose signature the apiserver checks: a broken one is refused with 422', async () => {
    const pod = await nodeA.runPod(podSpec('broken-stub'));
    const flipLast = (der: Uint8Array): Uint8Array => der.map((b, i) => (i === der.length - 1 ? b ^ 0xff : b));
    await expect(nodeA.requestCertificate(pod, { stubRequest: flipLast })).rejects.toMatchObject({
      code: 422,
      message: expect.stringContaining('spec.stubPKCS10Request: Invalid value: invalid signature'),
    });
    const intact = await nodeA.requestCertificate(pod);
    expect(intact.request.metadata.name).toMatch(/^req-/);
  });

  it.each(KUBELET_KEY_TYPES)('creates a request with a real %s key and an empty-subject stub request for it', async (keyType) => {
    const pod = await nodeA.runPod(podSpec(`key-${keyType.toLowerCase()}`, keyType));
    const { request, key } = await nodeA.requestCertificate(pod);
    const account = await admin.get<{ metadata: { uid: string } }>(`/api/v1/namespaces/${NAMESPACE}/serviceaccounts/provider`);
    expect(request.spec).toMatchObject({
      signerName: SERVER_SIGNER,
      podName: pod.pod.metadata!.name,
      podUID: pod.pod.metadata!.uid,
      serviceAccountName: 'provider',
      serviceAccountUID: account.metadata.uid,
      nodeName: 'node-a',
      nodeUID: nodeA.nodeUid,
      maxExpirationSeconds: 86400,
    });
    expect(request.metadata.ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Pod', name: pod.pod.metadata!.name, uid: pod.pod.metadata!.uid }]);
    const stub = Buffer.from(request.spec.stubPKCS10Request, 'base64');
    const dir = mkdtempSync(join(tmpdir(), 'eso-mtls-stub-'));
    folders.push(dir);
    writeFileSync(join(dir, 'stub.der'), stub);
    // openssl checks the self-signature and shows an empty subject; the public key is the kubelet's.
    expect(openssl('req', '-in', join(dir, 'stub.der'), '-inform', 'DER', '-verify', '-noout', '-subject').trim()).toBe('subject=');
    const stubKey = createPublicKey({ key: Buffer.from(new Pkcs10CertificateRequest(stub).publicKey.rawData), format: 'der', type: 'spki' });
    expect(stubKey.equals(key.publicKey)).toBe(true);
    expect(key.pkcs8Pem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
  });

  /** Mounts a new pod's volume while the test signs its request; returns the volume, the leaf and its folder. */
  async function mountIssued(pod: KubeletPod): Promise<{ volume: PodCertificateVolume; leaf: X509Certificate; dir: string }> {
    const dir = folder();
    const volume = new PodCertificateVolume(nodeA, pod, dir);
    const [outcome, leaf] = await Promise.all([volume.mount(), nextPending(pod.pod.metadata!.name!).then((r) => issue(r))]);
    expect(outcome.condition).toBe('Issued');
    return { volume, leaf, dir };
  }

  it.each(KUBELET_KEY_TYPES)('writes an issued %s certificate into the folder as the kubelet does', async (keyType) => {
    const pod = await nodeA.runPod(podSpec(`issued-${keyType.toLowerCase()}`, keyType));
    const { volume, leaf, dir } = await mountIssued(pod);
    const issued = volume.credentials!.issued;
    expect(issued.notBefore).toEqual(leaf.notBefore);
    expect(issued.notAfter).toEqual(leaf.notAfter);
    expect(issued.beginRefreshAt.getTime()).toBe(leaf.notBefore.getTime() + 3600_000);

    // The kubelet's layout: ..data -> a timestamped folder, and each file a link through ..data.
    expect(readlinkSync(join(dir, '..data'))).toMatch(/^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\./);
    expect(lstatSync(join(dir, 'credentials.pem')).isSymbolicLink()).toBe(true);
    expect(readlinkSync(join(dir, 'credentials.pem'))).toBe(join('..data', 'credentials.pem'));

    // credentials.pem: the PKCS#8 key, then the chain, leaf first, without the text around it.
    const bundlePath = join(dir, 'credentials.pem');
    const bundle = readFileSync(bundlePath, 'utf8');
    expect(decodePemBlocks(bundle).map((b) => b.label)).toEqual(['PRIVATE KEY', 'CERTIFICATE', 'CERTIFICATE']);
    expect(bundle).not.toMatch(/issued by the test|trailing text/);
    expect(der(bundle).slice(1)).toEqual([Buffer.from(leaf.rawData).toString('base64'), ...der(signerCa.pem)]);
    // openssl reads the same file both ways: the key's public half is the leaf's.
    expect(openssl('pkey', '-in', bundlePath, '-pubout')).toBe(openssl('x509', '-in', bundlePath, '-noout', '-pubkey'));
    writeFileSync(join(dir, '..', 'signer-ca.pem'), signerCa.pem);
    expect(openssl('verify', '-CAfile', join(dir, '..', 'signer-ca.pem'), bundlePath).trim()).toBe(`${bundlePath}: OK`);

    // ca.crt: every CA of the labelled client-signer bundles once, nothing else.
    const anchors = der(readFileSync(join(dir, 'ca.crt'), 'utf8'));
    expect(anchors).toHaveLength(3);
    expect(new Set(anchors)).toEqual(new Set(trustedCas.flatMap((c) => der(c.pem))));
  });

  it('refreshes at beginRefreshAt: a new key and certificate, and the trust bundles as listed then, in one swap', async () => {
    const pod = await nodeA.runPod(podSpec('refreshing'));
    const { volume, leaf, dir } = await mountIssued(pod);
    const first = volume.credentials!;
    const firstData = readlinkSync(join(dir, '..data'));
    const before = (await admin.get<ListPage<PodCertificateRequest>>(podCertificateRequestsPath(NAMESPACE))).items.map((r) => r.metadata.name!);

    expect(await volume.refreshIfDue(new Date(first.issued.beginRefreshAt.getTime() - 1000))).toBeUndefined();
    const unchanged = (await admin.get<ListPage<PodCertificateRequest>>(podCertificateRequestsPath(NAMESPACE))).items;
    expect(unchanged.filter((r) => r.spec.podName === 'refreshing')).toHaveLength(1);

    const added = await makeCa('client-4');
    await createTrustBundle('eso-mtls.io:eso-client:added', CLIENT_SIGNER, [added], TRUST_LABEL);
    const [outcome, renewed] = await Promise.all([
      volume.refreshIfDue(first.issued.beginRefreshAt),
      nextPending('refreshing', new Set(before)).then((r) => issue(r)),
    ]);
    expect(outcome?.condition).toBe('Issued');
    expect(renewed.serialNumber).not.toBe(leaf.serialNumber);
    expect(volume.credentials!.key.publicKey.equals(first.key.publicKey)).toBe(false);

    const data = readlinkSync(join(dir, '..data'));
    expect(data).not.toBe(firstData);
    expect(existsSync(join(dir, firstData))).toBe(false);
    const bundle = readFileSync(join(dir, 'credentials.pem'), 'utf8');
    expect(der(bundle)[1]).toBe(Buffer.from(renewed.rawData).toString('base64'));
    expect(openssl('pkey', '-in', join(dir, 'credentials.pem'), '-pubout')).toBe(openssl('x509', '-in', join(dir, 'credentials.pem'), '-noout', '-pubkey'));
    expect(der(readFileSync(join(dir, 'ca.crt'), 'utf8'))).toContain(der(added.pem)[0]);
  });

  it('reports a Denied request with its reason and message, and writes nothing', async () => {
    const pod = await nodeA.runPod(podSpec('denied'));
    const dir = folder();
    const volume = new PodCertificateVolume(nodeA, pod, dir);
    const deny = async (): Promise<void> => {
      const request = await nextPending('denied');
      await admin.replace(podCertificateRequestPath(NAMESPACE, request.metadata.name!, 'status'), {
        ...request,
        status: {
          conditions: [
            {
              type: 'Denied',
              status: 'True',
              reason: 'NoProviderService',
              message: 'no labelled Service selects pod providers/denied',
              lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
            },
          ],
        },
      });
    };
    const [outcome] = await Promise.all([volume.mount(), deny()]);
    expect(outcome).toMatchObject({ condition: 'Denied', reason: 'NoProviderService', message: 'no labelled Service selects pod providers/denied' });
    expect(volume.credentials).toBeUndefined();
    expect(existsSync(dir)).toBe(false);
  });

  it('lists trust bundles as the node: signer field selector plus label selector, and no selector matches nothing', async () => {
    const names = (bundles: readonly ClusterTrustBundle[]): string[] => bundles.map((b) => b.metadata.name!).sort();
    const all = (await admin.get<ListPage<ClusterTrustBundle>>('/apis/certificates.k8s.io/v1/clustertrustbundles')).items;
    const ofClientSigner = all.filter((b) => b.spec.signerName === CLIENT_SIGNER);
    const labelled = ofClientSigner.filter((b) => b.metadata.labels?.['eso-mtls.io/trust-bundle'] === 'true');
    expect(names(labelled)).toEqual(expect.arrayContaining(['eso-mtls.io:eso-client:ca', 'eso-mtls.io:eso-client:next']));
    expect(labelled.length).toBeLessThan(ofClientSigner.length);
    expect(names(await nodeA.trustBundles(CLIENT_SIGNER, { matchLabels: TRUST_LABEL }))).toEqual(names(labelled));
    expect(names(await nodeA.trustBundles(CLIENT_SIGNER, {}))).toEqual(names(ofClientSigner));
    expect(await nodeA.trustBundles(CLIENT_SIGNER, undefined)).toEqual([]);
    expect(
      labelSelectorQuery({
        matchLabels: { a: '1' },
        matchExpressions: [
          { key: 'b', operator: 'In', values: ['x', 'y'] },
          { key: 'c', operator: 'DoesNotExist' },
        ],
      }),
    ).toBe('a=1,b in (x,y),!c');
  });
});
