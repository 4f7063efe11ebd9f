// The user's Secret (--ca-from-secret) and the trust anchors (--ca-trust-anchors) read from a real
// kube-apiserver: what is there is given unparsed, what is not is named (not_found, missing_key,
// too_large), and over 1 MiB of PEM is refused unread.
import { describe, expect, it } from '@jest/globals';
import { KubeRestClient, connectionFromKubeConfig, corePath } from '@eso-mtls/kubernetes';
import { useControlPlane } from '@eso-mtls/test-kit/installations';
import { opensslP256Ca } from '@eso-mtls/test-kit/pod-certificates';
import { MAX_UPSTREAM_PEM_BYTES } from '../../src/upstream/pem-bound.js';
import { readSourceSecret, sourceSecretOf } from '../../src/upstream/source-secret.js';
import { readTrustAnchors, trustAnchorsOf } from '../../src/upstream/trust-anchors.js';

const suite = useControlPlane();
const NS = 'eso-source-reads';
const b64 = (text: string): string => Buffer.from(text).toString('base64');
const FIVE_MB = 5 * 1024 * 1024;

async function admin(): Promise<KubeRestClient> {
  await suite.cluster.namespace(NS);
  return new KubeRestClient(await connectionFromKubeConfig(suite.plane.adminKubeConfig));
}

describe('the source Secret', () => {
  it('gives tls.crt and tls.key as they are, with the resourceVersion read', async () => {
    const client = await admin();
    const ca = await opensslP256Ca('source intermediate');
    const created = await client.create<{ metadata: { resourceVersion: string } }>(corePath('secrets', NS), {
      metadata: { name: 'upstream-ca' },
      type: 'kubernetes.io/tls',
      data: { 'tls.crt': b64(ca.cert), 'tls.key': b64(ca.key) },
    });
    expect(await readSourceSecret(client, NS, 'upstream-ca')).toEqual({
      ok: true,
      certificatePem: ca.cert,
      keyPem: ca.key,
      resourceVersion: created.metadata.resourceVersion,
    });
    client.close();
  });

  it('names what is missing: the Secret, or a key (with the keys it has)', async () => {
    const client = await admin();
    expect(await readSourceSecret(client, NS, 'nowhere')).toEqual({
      ok: false,
      problem: 'not_found',
      message: `Secret ${NS}/nowhere does not exist; create it with tls.crt and tls.key, or fix --ca-from-secret`,
    });
    await client.create(corePath('secrets', NS), { metadata: { name: 'no-key' }, data: { 'tls.crt': b64('pem'), 'ca.crt': b64('pem') } });
    expect(await readSourceSecret(client, NS, 'no-key')).toEqual({
      ok: false,
      problem: 'missing_key',
      message: `Secret ${NS}/no-key has no key "tls.key" (it has "ca.crt", "tls.crt")`,
    });
    client.close();
  });

  it('5 MB of tls.crt: the apiserver refuses to store it, and the reader refuses it unread when served', async () => {
    const client = await admin();
    const huge = b64('A'.repeat(FIVE_MB));
    // A stock kube-apiserver takes no request body over 3 MiB, and keeps a Secret's data to 1 MiB
    // (what the bound backs up).
    const create = (name: string, data: Record<string, string>) =>
      client.create(corePath('secrets', NS), { metadata: { name }, data }).catch((e: Error & { code?: number }) => e);
    expect(await create('huge', { 'tls.crt': huge, 'tls.key': b64('k') })).toMatchObject({ code: 413 });
    const overLimit = await create('over-limit', { 'tls.crt': b64('A'.repeat(MAX_UPSTREAM_PEM_BYTES + 1)), 'tls.key': b64('k') });
    expect(overLimit).toMatchObject({ code: 422 });
    expect((overLimit as Error).message).toMatch(/1048576/);
    // The same object as an apiserver without that check would serve it: refused before it is decoded.
    const read = sourceSecretOf({ data: { 'tls.crt': huge, 'tls.key': b64('k') } }, NS, 'huge');
    expect(read).toEqual({
      ok: false,
      problem: 'too_large',
      message: `Secret ${NS}/huge key tls.crt holds ${FIVE_MB} bytes, over the limit of ${MAX_UPSTREAM_PEM_BYTES} bytes of PEM: not read`,
    });
    expect(sourceSecretOf({ data: { 'tls.crt': b64('c'), 'tls.key': huge } }, NS, 'huge')).toMatchObject({
      ok: false,
      problem: 'too_large',
      message: expect.stringContaining('key tls.key'),
    });
    client.close();
  });

  it('the largest Secret the apiserver stores is within the bound, and read', async () => {
    const client = await admin();
    const pem = 'B'.repeat(MAX_UPSTREAM_PEM_BYTES - 1);
    await client.create(corePath('secrets', NS), { metadata: { name: 'at-limit' }, data: { 'tls.crt': b64(pem), 'tls.key': b64('k') } });
    const read = await readSourceSecret(client, NS, 'at-limit');
    expect(read.ok && read.certificatePem.length).toBe(MAX_UPSTREAM_PEM_BYTES - 1);
    client.close();
  });
});

describe('the trust anchors', () => {
  it('a Secret key, a ConfigMap data key, a ConfigMap binaryData key', async () => {
    const client = await admin();
    const root = (await opensslP256Ca('organisation root')).cert;
    await client.create(corePath('secrets', NS), { metadata: { name: 'anchors' }, data: { 'ca.crt': b64(root) } });
    await client.create(corePath('configmaps', NS), { metadata: { name: 'anchors' }, data: { 'roots.pem': root }, binaryData: { 'bin.pem': b64(root) } });
    expect(await readTrustAnchors(client, NS, { kind: 'Secret', name: 'anchors', key: 'ca.crt' })).toMatchObject({ ok: true, pem: root });
    expect(await readTrustAnchors(client, NS, { kind: 'ConfigMap', name: 'anchors', key: 'roots.pem' })).toMatchObject({ ok: true, pem: root });
    expect(await readTrustAnchors(client, NS, { kind: 'ConfigMap', name: 'anchors', key: 'bin.pem' })).toMatchObject({ ok: true, pem: root });
    client.close();
  });

  it('names what is missing', async () => {
    const client = await admin();
    await client.create(corePath('configmaps', NS), { metadata: { name: 'other' }, data: { 'x.pem': 'x' } });
    expect(await readTrustAnchors(client, NS, { kind: 'ConfigMap', name: 'absent', key: 'ca.crt' })).toMatchObject({
      ok: false,
      problem: 'not_found',
      message: expect.stringContaining(`ConfigMap ${NS}/absent does not exist`),
    });
    const many = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${String(i).padStart(2, '0')}`, 'x']));
    await client.create(corePath('configmaps', NS), { metadata: { name: 'many' }, data: many });
    expect(await readTrustAnchors(client, NS, { kind: 'ConfigMap', name: 'many', key: 'ca.crt' })).toMatchObject({
      message: `ConfigMap ${NS}/many has no key "ca.crt" (it has "k00", "k01", "k02", "k03", "k04", "k05", "k06", "k07" and 12 more)`,
    });
    expect(await readTrustAnchors(client, NS, { kind: 'ConfigMap', name: 'other', key: 'ca.crt' })).toEqual({
      ok: false,
      problem: 'missing_key',
      message: `ConfigMap ${NS}/other has no key "ca.crt" (it has "x.pem")`,
    });
    client.close();
  });

  it('a ConfigMap of over 1 MiB is refused by the apiserver; served, the reader refuses it unread', async () => {
    const client = await admin();
    const create = (name: string, size: number) =>
      client.create(corePath('configmaps', NS), { metadata: { name }, data: { 'ca.crt': 'A'.repeat(size) } }).catch((e: Error & { code?: number }) => e);
    expect(await create('huge', FIVE_MB)).toMatchObject({ code: 413 });
    expect(await create('over-limit', MAX_UPSTREAM_PEM_BYTES + 1)).toMatchObject({ code: 422, message: expect.stringMatching(/1048576/) });
    expect(trustAnchorsOf({ data: { 'ca.crt': 'A'.repeat(FIVE_MB) } }, { kind: 'ConfigMap', name: 'huge', key: 'ca.crt' }, NS)).toMatchObject({
      ok: false,
      problem: 'too_large',
    });
    expect(trustAnchorsOf({ binaryData: { 'ca.crt': b64('A'.repeat(FIVE_MB)) } }, { kind: 'ConfigMap', name: 'huge', key: 'ca.crt' }, NS)).toMatchObject({
      ok: false,
      problem: 'too_large',
    });
    expect(trustAnchorsOf({ data: { 'ca.crt': b64('A'.repeat(FIVE_MB)) } }, { kind: 'Secret', name: 'huge', key: 'ca.crt' }, NS)).toMatchObject({
      ok: false,
      problem: 'too_large',
    });
    client.close();
  });
});
