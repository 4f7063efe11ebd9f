// The pod-certificate layout (credentials.pem and a ClusterTrustBundle ca.crt) under the same hot
// reload, checks and last-good-pair rule as the Secret layout, on a serving provider and on ESO's
// client, with the kubelet's atomic writer swapping the folder.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CertificateWatcher,
  createSecretStoreProviderClient,
  MAX_MOUNTED_FILE_BYTES,
  ProviderChannel,
  ProviderServerOptionError,
  resolveProviderServerOptions,
  type ReloadFailure,
  type SecretStoreProvider,
  type TlsMaterial,
} from '@eso-mtls/grpc';
import { trustAnchors } from '../../../testing/kubelet/pem-files.js';
import { writeAtomically } from '@eso-mtls/test-kit/demo';
import { TEST_SERVER_NAME, type KeyPair } from '@eso-mtls/test-kit/pki';
import { credentialsPem, opensslP256Ca, opensslPodLeaf, podCertificateFiles } from '@eso-mtls/test-kit/pod-certificates';
import { startReloadingProvider, type ReloadingProvider } from '@eso-mtls/test-kit/reloading-provider';
import { probe } from '@eso-mtls/test-kit/tls-probe';

const serial = (pem: string) => new X509Certificate(pem).serialNumber.toLowerCase();

/** CA A signs the provider's leaves and ESO's client; CA B only a second client; CA C is trusted nowhere. */
let caA: KeyPair;
let caB: KeyPair;
let caC: KeyPair;
/** ca.crt as the kubelet projects it from two ClusterTrustBundles (or one holding both CAs): each CA once, in DER order. */
let trustBundle: string;
let servers: KeyPair[];
let clientA: KeyPair;
let clientA2: KeyPair;
let clientB: KeyPair;
let clientC: KeyPair;
let provider: ReloadingProvider;
/** Serial of the client certificate each call presented, in call order. */
const presented: string[] = [];

const implementation: SecretStoreProvider = {
  getSecret: (request, context) => {
    presented.push(context.client.serialNumber);
    return { value: Buffer.from(`value of ${request.remoteRef?.key}`) };
  },
};

const probeAs = (client: KeyPair) => probe(provider.port, { ca: trustBundle, cert: client.cert, key: client.key, servername: TEST_SERVER_NAME });

/** The next swap or counted failure of `watcher`; rejects after 10 s without either. */
function nextEvent(watcher: CertificateWatcher): Promise<{ material?: TlsMaterial; failure?: ReloadFailure }> {
  return new Promise((resolve, reject) => {
    const done = () => (clearTimeout(timer), offs.forEach((f) => f()));
    const timer = setTimeout(() => (done(), reject(new Error(`no swap or failure from ${watcher.directory} within 10 s`))), 10_000);
    const offs = [watcher.onMaterial((material) => (done(), resolve({ material }))), watcher.onFailure((failure) => (done(), resolve({ failure })))];
  });
}

const cleanups: (() => unknown)[] = [];

/** A ProviderChannel to the provider presenting what `client` watches. */
function channelWith(client: CertificateWatcher): ProviderChannel {
  const channel = new ProviderChannel({
    address: `${TEST_SERVER_NAME}:8080`,
    connectTo: `127.0.0.1:${provider.port}`,
    material: client,
    channelOptions: { 'grpc.use_local_subchannel_pool': 1 },
  });
  cleanups.push(() => channel.close());
  return channel;
}

/** ESO's client watching a fresh pod-certificate folder holding `leaf` and the trust bundle. */
async function podClient(leaf: KeyPair): Promise<{ dir: string; watcher: CertificateWatcher }> {
  const dir = mkdtempSync(join(tmpdir(), 'eso-client-pod-certificate-'));
  await writeAtomically(dir, podCertificateFiles(credentialsPem(leaf), trustBundle));
  const watcher = new CertificateWatcher({ directory: dir, layout: 'pod-certificate', purpose: 'clientAuth', pollIntervalMs: 3_600_000 });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => watcher.close());
  await watcher.start();
  return { dir, watcher };
}

/** One getSecret over a fresh channel presenting `client`'s material. */
async function callWith(client: CertificateWatcher, key: string): Promise<string> {
  const channel = channelWith(client);
  try {
    return (await createSecretStoreProviderClient(channel, { retry: false }).getSecret({ remoteRef: { key } })).toString();
  } finally {
    await channel.close();
  }
}

beforeAll(async () => {
  [caA, caB, caC] = await Promise.all([opensslP256Ca('pod CA A'), opensslP256Ca('pod CA B'), opensslP256Ca('pod CA C')]);
  trustBundle = trustAnchors([caA.cert, caB.cert]);
  [servers, clientA, clientA2, clientB, clientC] = await Promise.all([
    Promise.all((['ECDSAP256', 'ED25519', 'RSA3072', 'ECDSAP384'] as const).map((type) => opensslPodLeaf(caA, type, 'server'))),
    opensslPodLeaf(caA, 'ECDSAP256', 'client'),
    opensslPodLeaf(caA, 'ECDSAP384', 'client'),
    opensslPodLeaf(caB, 'ECDSAP256', 'client'),
    opensslPodLeaf(caC, 'ECDSAP256', 'client'),
  ]);
  provider = await startReloadingProvider(trustBundle, servers[0]!, { implementation, certLayout: 'pod-certificate', log: false });
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => {
  await provider.stop();
});

describe('a provider serving from a pod-certificate folder', () => {
  it('an atomic swap of credentials.pem gives the next connection the new leaf', async () => {
    expect((await probeAs(clientA)).serverSerial).toBe(serial(servers[0]!.cert));
    const before = provider.watcher.stats;
    await provider.publish(trustBundle, servers[1]!);
    expect(provider.watcher.current?.serialNumber).toBe(serial(servers[1]!.cert));
    const outcome = await probeAs(clientA);
    expect([outcome.accepted, outcome.serverSerial]).toEqual([true, serial(servers[1]!.cert)]);
    expect(provider.watcher.stats).toEqual({ ...before, loads: before.loads + 1, reloads: before.reloads + 1 });
    // The watcher split the bundle into the key and the chain it hands the TLS stack.
    expect(provider.watcher.current!.privateKey).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(provider.watcher.current!.certificate).toMatch(/^-----BEGIN CERTIFICATE-----\n/);
  });

  it('a bad credential bundle is refused with its reason, and the last good pair keeps serving new connections', async () => {
    const good = provider.watcher.current!;
    const before = provider.watcher.stats;
    const next = servers[2]!;
    const bundle = credentialsPem(next);
    const atLeast = MAX_MOUNTED_FILE_BYTES + 1 - bundle.length;
    const bad: [string, string, string][] = [
      ['key of another leaf', credentialsPem({ key: servers[3]!.key, cert: next.cert }), 'key_mismatch'],
      ['truncated inside the certificate', bundle.slice(0, bundle.length - 200), 'garbage_pem'],
      ['truncated inside the key', bundle.slice(0, Math.floor(next.key.length / 2)), 'garbage_pem'],
      ['certificate before the key', next.cert + next.key, 'garbage_pem'],
      ['no key', next.cert, 'missing_key'],
      ['no certificate', next.key, 'missing_certificate'],
      // Well-formed, but one byte over the bound: refused unread.
      ['oversized', bundle + caA.cert.repeat(Math.ceil(atLeast / caA.cert.length)), 'too_large'],
    ];
    for (const [name, text, reason] of bad) {
      const judged = nextEvent(provider.watcher);
      await writeAtomically(provider.certDir, podCertificateFiles(text, trustBundle));
      const { failure } = await judged;
      expect([name, failure?.reason]).toEqual([name, reason]);
      expect(failure?.message).toContain('credentials.pem');
      const outcome = await probeAs(clientA);
      expect([name, outcome.accepted, outcome.serverSerial]).toEqual([name, true, good.serialNumber]);
    }
    // Each bundle counted once, consecutive garbage_pem ones apart; re-reading the last one (a poll) counts nothing.
    await provider.watcher.check();
    await provider.watcher.check();
    expect(provider.watcher.stats).toEqual({ ...before, failures: before.failures + bad.length });
    const { watcher } = await podClient(clientA);
    expect(await callWith(watcher, 'during the bad bundle')).toBe('value of during the bad bundle');

    await provider.publish(trustBundle, next);
    expect((await probeAs(clientA)).serverSerial).toBe(serial(next.cert));
    expect(provider.watcher.stats).toEqual({ loads: before.loads + 1, reloads: before.reloads + 1, failures: before.failures + bad.length });
  });

  it('names what is wrong: the credential bundle, the trust bundle, and what to project', async () => {
    const reasons: [string, string][] = [];
    const off = provider.watcher.onFailure((f) => reasons.push([f.reason, f.message]));
    try {
      const current = provider.watcher.current!;
      await provider.publishFiles(podCertificateFiles(credentialsPem({ key: servers[3]!.key, cert: servers[2]!.cert }), trustBundle));
      await provider.publishFiles(podCertificateFiles(credentialsPem(servers[2]!), caC.cert));
      await provider.publishFiles({ 'ca.crt': trustBundle });
      expect(provider.watcher.current).toBe(current);
    } finally {
      off();
    }
    expect(reasons.map(([reason]) => reason)).toEqual(['key_mismatch', 'untrusted', 'not_found']);
    expect(reasons[0]![1]).toContain('the PRIVATE KEY block of credentials.pem is not the private key of credentials.pem');
    expect(reasons[1]![1]).toContain('is not signed by any CA in ca.crt valid now');
    expect(reasons[2]![1]).toContain(
      `cannot read ${join(provider.certDir, 'credentials.pem')}: does not exist, or is a symlink to nothing (ENOENT); project a podCertificate credential bundle at credentials.pem and a clusterTrustBundle at ca.crt there`,
    );
    await provider.publish(trustBundle, servers[0]!);
    expect(provider.watcher.current?.serialNumber).toBe(serial(servers[0]!.cert));
  });

  it('a ca.crt merging two CAs accepts clients of either; a client of a third CA is refused', async () => {
    for (const client of [clientA, clientB]) {
      const outcome = await probeAs(client);
      expect([serial(client.cert), outcome.accepted]).toEqual([serial(client.cert), true]);
      const { watcher } = await podClient(client);
      expect(await callWith(watcher, 'merged')).toBe('value of merged');
      expect(presented.at(-1)).toBe(serial(client.cert));
    }
    const refused = await probeAs(clientC);
    expect(refused.accepted).toBe(false);
  });
});

describe("ESO's client reading its certificate from a pod-certificate folder", () => {
  it('a swapped credentials.pem reaches the next call; a bad one is refused and the last good certificate keeps being presented', async () => {
    const { dir, watcher } = await podClient(clientA);
    const channel = channelWith(watcher);
    const client = createSecretStoreProviderClient(channel, { retry: false });
    expect((await client.getSecret({ remoteRef: { key: 'first' } })).toString()).toBe('value of first');
    expect(presented.at(-1)).toBe(serial(clientA.cert));

    let judged = nextEvent(watcher);
    await writeAtomically(dir, podCertificateFiles(credentialsPem(clientA2), trustBundle));
    expect((await judged).material?.serialNumber).toBe(serial(clientA2.cert));
    expect((await client.getSecret({ remoteRef: { key: 'second' } })).toString()).toBe('value of second');
    expect(presented.at(-1)).toBe(serial(clientA2.cert));

    judged = nextEvent(watcher);
    await writeAtomically(dir, podCertificateFiles(credentialsPem({ key: clientA.key, cert: clientB.cert }), trustBundle));
    expect((await judged).failure?.reason).toBe('key_mismatch');
    expect((await client.getSecret({ remoteRef: { key: 'third' } })).toString()).toBe('value of third');
    expect(presented.at(-1)).toBe(serial(clientA2.cert));
    expect(watcher.stats).toEqual({ loads: 2, reloads: 1, failures: 1 });
    expect(channel.stats.channels).toBe(2);
  });

  it('a server leaf where the client leaf belongs is refused for its purpose', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'eso-client-pod-certificate-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    await writeAtomically(dir, podCertificateFiles(credentialsPem(servers[0]!), trustBundle));
    const watcher = new CertificateWatcher({ directory: dir, layout: 'pod-certificate', purpose: 'clientAuth', pollIntervalMs: 3_600_000 });
    cleanups.push(() => watcher.close());
    const judged = nextEvent(watcher);
    void watcher.start();
    expect((await judged).failure?.reason).toBe('wrong_purpose');
    expect(watcher.ready).toBe(false);
  });
});

describe('choosing the layout', () => {
  it('file names apply to their own layout only; an unknown layout is refused', () => {
    const watcher = (options: object) => () => new CertificateWatcher({ directory: '/nowhere', purpose: 'serverAuth', ...options });
    expect(watcher({ layout: 'pod-certificate', fileNames: { certificate: 'tls.crt' } })).toThrow(
      'CertificateWatcher: fileNames certificate: not a file of the pod-certificate layout, whose files are credentialBundle, caBundle',
    );
    expect(watcher({ fileNames: { credentialBundle: 'credentials.pem' } })).toThrow(
      'CertificateWatcher: fileNames credentialBundle: not a file of the secret layout, whose files are certificate, privateKey, caBundle',
    );
    expect(watcher({ layout: 'podCertificate' })).toThrow('CertificateWatcher: layout "podCertificate" is not one of secret, pod-certificate');
    expect(() => resolveProviderServerOptions({ implementation, certLayout: 'pod' as never })).toThrow(ProviderServerOptionError);
    expect(() => resolveProviderServerOptions({ implementation, certLayout: 'pod' as never })).toThrow(
      'startProviderServer: certLayout="pod" is not one of secret, pod-certificate',
    );
    expect(resolveProviderServerOptions({ implementation }).certLayout).toBe('secret');
  });

  it('renamed files are read, and an empty projection waits without serving', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pod-certificate-names-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const watcher = new CertificateWatcher({
      directory: dir,
      layout: 'pod-certificate',
      fileNames: { credentialBundle: 'bundle.pem', caBundle: 'trust.pem' },
      purpose: 'serverAuth',
      pollIntervalMs: 3_600_000,
    });
    cleanups.push(() => watcher.close());
    await writeAtomically(dir, { 'bundle.pem': '', 'trust.pem': '' });
    let judged = nextEvent(watcher);
    const started = watcher.start();
    expect((await judged).failure).toMatchObject({
      reason: 'empty',
      message: `${dir}: bundle.pem and trust.pem are both empty; the kubelet has not written the pod certificate yet`,
    });
    judged = nextEvent(watcher);
    await writeAtomically(dir, { 'bundle.pem': credentialsPem(servers[0]!), 'trust.pem': trustBundle });
    expect((await judged).material?.serialNumber).toBe(serial(servers[0]!.cert));
    expect((await started).caCertificates.map((c) => c.subject).sort()).toEqual(['CN=pod CA A', 'CN=pod CA B']);
  });
});
