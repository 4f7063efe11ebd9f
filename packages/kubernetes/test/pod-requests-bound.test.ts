// A tenant can make the signer's work without end: every pod naming our signer in a projected
// volume makes requests, and each stays in the API for 30 minutes, decided or not. On a real
// kube-apiserver v1.37.2 with the Node authorizer and NodeRestriction: the signer holds pending
// requests only, within its bound per namespace and in all; the rest wait in the API, counted and
// reported, and are decided as room is made; and the Secret mode keeps serving meanwhile.
// Orders, counts and outcomes only, never times.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PROVIDER_LABEL, hours } from '@eso-mtls/core';
import { type ControlPlane, nodeIdentity, startControlPlane } from '../../../testing/envtest/src/index.js';
import { type KubeletPod, type PodCertificateRequest, PodCertificateKubelet, podCertificateRequestsPath } from '../../../testing/kubelet/index.js';
import { KubeRestClient, type ListPage, ProviderCertificateAdapter, connectionFromKubeConfig, corePath } from '../src/index.js';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { ESO_NS } from '@eso-mtls/test-kit/cluster';

const SERVER_SIGNER = 'eso-mtls.io/provider-server';
const CLIENT_SIGNER = 'eso-mtls.io/eso-client';
const NODE = 'node-a';
const BOUND = { perNamespace: 15, total: 25 };
/** Requests made per namespace while no controller runs: t-a and t-b have a labelled Service, t-c none (its requests are Denied). */
const BACKLOG: Readonly<Record<string, number>> = { 't-a': 40, 't-b': 40, 't-c': 20 };
const ALL = Object.values(BACKLOG).reduce((a, b) => a + b, 0);

describe('pending pod certificate requests within a bound, on kube-apiserver v1.37.2', () => {
  let plane: ControlPlane;
  let admin: KubeRestClient;
  let adapter: ProviderCertificateAdapter | undefined;

  beforeAll(async () => {
    plane = await startControlPlane({ nodeAuthorization: true, identities: [nodeIdentity(NODE)] });
    admin = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig));
    for (const ns of [ESO_NS, ...Object.keys(BACKLOG)]) await admin.create(corePath('namespaces'), { metadata: { name: ns } });
    for (const ns of ['t-a', 't-b']) await labelledService(ns);
    // The backlog, made as the node while no controller runs: two pods per namespace, many requests each.
    const kubelet = await PodCertificateKubelet.register({ admin: plane.adminKubeConfig, node: plane.kubeconfigFor(`system:node:${NODE}`), nodeName: NODE });
    try {
      for (const [namespace, count] of Object.entries(BACKLOG)) {
        const pods: KubeletPod[] = [];
        for (const name of ['provider-0', 'provider-1'])
          pods.push(
            await kubelet.runPod({
              namespace,
              name,
              serviceAccountName: 'provider',
              labels: { app: 'provider' },
              podCertificate: { signerName: SERVER_SIGNER, keyType: 'ECDSAP256', maxExpirationSeconds: 86_400 },
            }),
          );
        for (let i = 0; i < count; i++) await kubelet.requestCertificate(pods[i % 2]!);
      }
    } finally {
      await kubelet.stop();
    }
  }, 240_000);

  afterAll(async () => {
    await adapter?.stop();
    admin?.close();
    await plane?.stop();
  });

  async function labelledService(namespace: string): Promise<void> {
    await admin.create(corePath('services', namespace), {
      metadata: { name: 'provider', labels: { [PROVIDER_LABEL]: 'true' } },
      spec: { selector: { app: 'provider' }, ports: [{ port: 8443 }] },
    });
  }

  async function requests(): Promise<readonly PodCertificateRequest[]> {
    return (await admin.get<ListPage<PodCertificateRequest>>(podCertificateRequestsPath())).items;
  }

  it('holds at most its bound, reports the rest, keeps the Secret mode serving, and decides every request as room is made', async () => {
    expect((await requests()).filter((r) => !r.status?.conditions?.length)).toHaveLength(ALL);
    const decided: { result: string; namespace: string }[] = [];
    const warnings: { fields: Record<string, unknown>; message: string }[] = [];
    const quiet = () => undefined;
    adapter = await ProviderCertificateAdapter.create({
      logger: { debug: quiet, info: quiet, error: quiet, warn: (fields, message) => void warnings.push({ fields, message }) },
      kubeConfig: plane.adminKubeConfig,
      policy: { esoNamespace: ESO_NS },
      podCertificates: { serverSignerName: SERVER_SIGNER, clientSignerName: CLIENT_SIGNER, maxValidity: hours(24), pendingBound: BOUND },
      relistForRoomMs: 500,
      hooks: { onPodCertificateRequest: (_signer, result, _reason, namespace) => void decided.push({ result, namespace }) },
    });
    const signer = adapter.podSigner!;
    // Signing waits at a gate the test opens, so the cache stays full while the Secret mode is watched.
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const decide = signer.decide.bind(signer);
    signer.decide = async (...args) => {
      await gate;
      return decide(...args);
    };
    // The most the cache ever held, in all and per namespace, checked at every change.
    const most = { total: 0, perNamespace: 0 };
    const server = signer.requests.get('server')!;
    server.onChange(() => {
      const perNamespace = new Map<string, number>();
      for (const r of server.list()) perNamespace.set(r.metadata!.namespace!, (perNamespace.get(r.metadata!.namespace!) ?? 0) + 1);
      most.total = Math.max(most.total, server.size);
      most.perNamespace = Math.max(most.perNamespace, ...perNamespace.values());
    });
    await adapter.start();

    // In list order: t-a takes its 15, t-b 10 before the cache is full; the rest wait unheld.
    await server.synced;
    expect(server.size).toBe(BOUND.total);
    expect(signer.notHeld()).toEqual({ namespace: 40 - 15, total: 40 - 10 + 20 });
    // The Secret mode serves meanwhile: a Service labelled now gets its Secret.
    await admin.create(corePath('namespaces'), { metadata: { name: 'meanwhile' } });
    await labelledService('meanwhile');
    await eventually(async () => {
      const secret = await admin.get<{ data?: Record<string, string> }>(corePath('secrets', 'meanwhile', 'external-secrets-provider-tls'));
      expect(Buffer.from(secret.data?.['tls.crt'] ?? '', 'base64').toString()).toContain('BEGIN CERTIFICATE');
    }, 60_000);
    // One Warning Event per namespace with requests unheld, whatever their number.
    await eventually(async () => {
      const events = (await admin.get<ListPage<{ reason?: string; metadata?: { namespace?: string } }>>(corePath('events'))).items.filter(
        (e) => e.reason === 'PodCertificateRequestsNotHeld',
      );
      expect(events.map((e) => e.metadata?.namespace).sort()).toEqual(['t-a', 't-b', 't-c']);
    }, 30_000);
    expect(decided).toEqual([]);

    open();
    await eventually(() => expect(decided).toHaveLength(ALL), 120_000);
    await adapter.podSigningIdle();
    expect(decided.filter((d) => d.result === 'issued').map((d) => d.namespace).length).toBe(80);
    expect(decided.filter((d) => d.namespace === 't-c').every((d) => d.result === 'denied')).toBe(true);
    // Each decided once, none left pending, none held, and the bound held throughout.
    expect((await requests()).filter((r) => !r.status?.conditions?.length)).toEqual([]);
    expect(server.size).toBe(0);
    expect(signer.notHeld()).toEqual({ namespace: 0, total: 0 });
    expect(most).toEqual({ total: BOUND.total, perNamespace: BOUND.perNamespace });
    // Logged once per namespace, however many: the requests kept out, and t-c's 20 denials.
    const lines = (start: string) => warnings.filter((w) => w.message.startsWith(start)).map((w) => w.fields['namespace']);
    expect(lines('pending pod certificate requests not held').sort()).toEqual(['t-a', 't-b', 't-c']);
    expect(lines('pod certificate request denied')).toEqual(['t-c']);
  }, 300_000);
});
