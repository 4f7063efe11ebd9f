// The adapter with a cert-manager issuer as its CA source, end to end on a real kube-apiserver with
// the real cert-manager (testing/kit's helper): it asks for an intermediate, signs with it once
// issued, chains every leaf to the organisation root alone, renews under the same root without a
// bundle change, and, refused, keeps what signs and says why, never making a root of its own.
import { describe, expect, it } from '@jest/globals';
import { CA_REQUEST_ANNOTATION, CA_SOURCE_ANNOTATION, ROTATE_ANNOTATION, hours, splitPemCertificates } from '@eso-mtls/core';
import { corePath } from '@eso-mtls/kubernetes';
import { useCertManager } from '@eso-mtls/test-kit/cert-manager';
import { WITHOUT_APPROVER } from '@eso-mtls/test-kit/cert-manager-process';
import { type RecordingAdapter, startAdapter } from '@eso-mtls/test-kit/adapter';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { opensslP256Ca } from '@eso-mtls/test-kit/pod-certificates';
import type { KeyPair } from '@eso-mtls/test-kit/pki';
import { text } from '@eso-mtls/test-kit/secrets';
import { opensslVerifyChain } from '@eso-mtls/test-kit/upstream-pki';
import type { CaSource, IssuerReference } from '../../src/installation/ca-source.js';
import { type CertificateRequestObject, caRequestPath } from '../../src/upstream/certificate-requests.js';

const suite = useCertManager();
const CA_SECRET = 'eso-provider-ca-internal';
const CLUSTER_RESOURCES = 'kube-system';
// cert-manager's controllers and our reconciles on a loaded 2-core machine: generous, as every wait here.
const WAIT = 180_000;
const b64 = (s: string): string => Buffer.from(s).toString('base64');

let root: Promise<KeyPair> | undefined;
const organisationRoot = (): Promise<KeyPair> => (root ??= opensslP256Ca('eso-mtls test organisation root'));

/** A CA ClusterIssuer holding the organisation root (its key too, as cert-manager's CA issuer needs). */
async function clusterIssuer(name: string): Promise<IssuerReference> {
  const org = await organisationRoot();
  await suite.admin.create(corePath('secrets', CLUSTER_RESOURCES), {
    metadata: { name },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': b64(org.cert), 'tls.key': b64(org.key) },
  });
  await suite.admin.create('/apis/cert-manager.io/v1/clusterissuers', {
    apiVersion: 'cert-manager.io/v1',
    kind: 'ClusterIssuer',
    metadata: { name },
    spec: { ca: { secretName: name } },
  });
  return { kind: 'ClusterIssuer', name, group: 'cert-manager.io' };
}

/** An installation in `eso` with the issuer as its CA source, the anchors in Secret `org-roots`, and a labelled Service in `provider`. */
async function installation(eso: string, provider: string, issuer: IssuerReference): Promise<RecordingAdapter> {
  const { cluster } = suite;
  await cluster.namespace(eso);
  await cluster.namespace(provider);
  const org = await organisationRoot();
  await suite.admin.create(corePath('secrets', eso), { metadata: { name: 'org-roots' }, data: { 'ca.crt': b64(org.cert) } });
  await cluster.labelledService(provider, 'provider');
  const caSource: CaSource = { kind: 'issuer', issuer, trustAnchors: { kind: 'Secret', name: 'org-roots', key: 'ca.crt' }, requestDeadline: hours(1) };
  return startAdapter(suite.plane.adminKubeConfig, eso, { caSource, now: Date.now });
}

const ourRequests = async (eso: string): Promise<CertificateRequestObject[]> =>
  (await suite.admin.get<{ items: CertificateRequestObject[] }>(caRequestPath(eso))).items;

describe('a cert-manager ClusterIssuer as the CA source', () => {
  it('signs every leaf with the intermediate it issued, chained to the organisation root alone, and renews it under the same root without a bundle change', async () => {
    await suite.start();
    const issuer = await clusterIssuer('org-ca');
    const org = await organisationRoot();
    const run = await installation('eso-chained', 'chained-a', issuer);
    try {
      const provider = await eventually(async () => {
        const s = await suite.cluster.secret('chained-a');
        return s && splitPemCertificates(text(s, 'tls.crt')).length === 2 ? s : false;
      }, WAIT);
      expect(text(provider, 'ca.crt')).toBe(org.cert.endsWith('\n') ? org.cert : `${org.cert}\n`);
      expect(opensslVerifyChain(org.cert, text(provider, 'tls.crt'), 'sslserver')).toMatchObject({ ok: true });
      expect(opensslVerifyChain(org.cert, text(provider, 'tls.crt'), 'sslclient')).toMatchObject({ ok: false });
      const client = (await suite.cluster.secret('eso-chained', 'eso-provider-client-tls'))!;
      expect(opensslVerifyChain(org.cert, text(client, 'tls.crt'), 'sslclient')).toMatchObject({ ok: true });
      const ca = (await suite.cluster.secret('eso-chained', CA_SECRET))!;
      expect(splitPemCertificates(text(ca, 'ca.crt'))).toHaveLength(2);
      expect(ca.data?.['pending.key']).toBeUndefined();
      expect(ca.metadata?.annotations?.[CA_SOURCE_ANNOTATION]).toBe('issuer/ClusterIssuer/org-ca');
      // The answered request is deleted once its intermediate is in place.
      await eventually(async () => (await ourRequests('eso-chained')).length === 0, WAIT);

      // A rotation request: a new intermediate under the same root signs at once; the bundle stays.
      const first = splitPemCertificates(text(provider, 'tls.crt'))[1];
      await suite.admin.mergePatch(corePath('secrets', 'eso-chained', CA_SECRET), { metadata: { annotations: { [ROTATE_ANNOTATION]: 'renew-1' } } });
      const renewed = await eventually(async () => {
        const s = await suite.cluster.secret('chained-a');
        const chain = s && splitPemCertificates(text(s, 'tls.crt'));
        return chain && chain.length === 2 && chain[1] !== first ? s : false;
      }, WAIT);
      expect(text(renewed, 'ca.crt')).toBe(text(provider, 'ca.crt'));
      expect(opensslVerifyChain(org.cert, text(renewed, 'tls.crt'), 'sslserver')).toMatchObject({ ok: true });
      expect(run.writes.filter((w) => w.kind === 'bundle')).toEqual([]);
      expect(run.writes.filter((w) => w.kind === 'ca').map((w) => w.phases)).toContainEqual(['renew']);
    } finally {
      await run.adapter.stop();
    }
  }, 600_000);

  it('denied: keeps nothing it did not have, makes no root of its own, and says why', async () => {
    await suite.start({ controllers: WITHOUT_APPROVER });
    const issuer = await clusterIssuer('org-ca-denied');
    const run = await installation('eso-denied', 'denied-a', issuer);
    try {
      const name = await eventually(async () => {
        const ca = await suite.cluster.secret('eso-denied', CA_SECRET);
        return ca?.metadata?.annotations?.[CA_REQUEST_ANNOTATION] || false;
      }, WAIT);
      const condition = {
        type: 'Denied',
        status: 'True',
        reason: 'eso-mtls.io/test-approver',
        message: 'intermediates are not allowed here',
        lastTransitionTime: new Date().toISOString(),
      };
      await eventually(async () => (await ourRequests('eso-denied')).some((r) => r.metadata.name === name), WAIT);
      await suite.admin.mergePatch(`${caRequestPath('eso-denied', name)}/status`, { status: { conditions: [condition] } });
      await eventually(async () => {
        const round = await run.adapter.reconcileNow();
        return round?.plan.upstream?.problems.some((p) => p.reason === 'request_denied' && p.message.includes('not allowed here')) ?? false;
      }, WAIT);
      const ca = (await suite.cluster.secret('eso-denied', CA_SECRET))!;
      expect(Object.keys(ca.data ?? {})).toEqual(['pending.key']);
      expect(await suite.cluster.secret('denied-a')).toBeUndefined();
      expect(run.writes.filter((w) => w.kind === 'serverLeaf' || w.kind === 'clientLeaf')).toEqual([]);
    } finally {
      await run.adapter.stop();
    }
  }, 600_000);
});
