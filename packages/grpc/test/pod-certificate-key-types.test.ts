// Every key type the kubelet can generate for a pod certificate, loaded from a credential bundle
// and used in real mTLS handshakes: as the provider server's key and as ESO's client key, over
// TLS 1.3 and over TLS 1.2 (the providers accept 1.2 with `minTlsVersion`, ECDHE and AEAD suites only).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type KeyObject, X509Certificate } from 'node:crypto';
import { rmSync } from 'node:fs';
import {
  CertificateWatcher,
  createSecretStoreProviderClient,
  ProviderChannel,
  startProviderServer,
  type ProviderServer,
  type SecretStoreProvider,
} from '@eso-mtls/grpc';
import { TEST_SERVER_NAME, type KeyPair } from '@eso-mtls/test-kit/pki';
import { opensslP256Ca, opensslPodLeaf, podCertificateDir, POD_KEY_TYPES, type PodKeyType } from '@eso-mtls/test-kit/pod-certificates';
import { probe } from '@eso-mtls/test-kit/tls-probe';

const serial = (pem: string) => new X509Certificate(pem).serialNumber.toLowerCase();

/** The key as the kubelet's keyType names it, read back from what Node loaded. */
function keyTypeOf(key: KeyObject): string {
  const d = key.asymmetricKeyDetails ?? {};
  switch (key.asymmetricKeyType) {
    case 'rsa':
      return `RSA${d.modulusLength}`;
    case 'ec':
      return { prime256v1: 'ECDSAP256', secp384r1: 'ECDSAP384', secp521r1: 'ECDSAP521' }[d.namedCurve ?? ''] ?? `EC ${d.namedCurve}`;
    default:
      return String(key.asymmetricKeyType).toUpperCase();
  }
}

let ca: KeyPair;
const serverLeaves = new Map<PodKeyType, KeyPair>();
const clientLeaves = new Map<PodKeyType, KeyPair>();
const seenClients: string[] = [];
const dirs: string[] = [];
const watchers: CertificateWatcher[] = [];

const implementation: SecretStoreProvider = {
  getSecret: (request, context) => {
    seenClients.push(context.client.serialNumber);
    return { value: Buffer.from(`value of ${request.remoteRef?.key}`) };
  },
};

/** A provider server over a pod-certificate folder holding `leaf`, trusting `ca`, accepting TLS 1.3 and 1.2. */
async function providerWith(leaf: KeyPair): Promise<ProviderServer> {
  const certDir = await podCertificateDir(leaf, ca.cert);
  dirs.push(certDir);
  return startProviderServer({
    implementation,
    certDir,
    certLayout: 'pod-certificate',
    minTlsVersion: 'TLSv1.2',
    host: '127.0.0.1',
    port: 0,
    healthPort: 0,
    log: false,
  });
}

/** ESO's client material, watched in a pod-certificate folder holding `leaf`. */
async function clientWatcherWith(leaf: KeyPair): Promise<CertificateWatcher> {
  const directory = await podCertificateDir(leaf, ca.cert);
  dirs.push(directory);
  const watcher = new CertificateWatcher({ directory, layout: 'pod-certificate', purpose: 'clientAuth', pollIntervalMs: 3_600_000 });
  watchers.push(watcher);
  await watcher.start();
  return watcher;
}

/** One getSecret over a fresh grpc-js channel presenting `client`'s material; returns the serial the provider saw. */
async function callAs(client: CertificateWatcher, port: number, key: string): Promise<string> {
  const channel = new ProviderChannel({
    address: `${TEST_SERVER_NAME}:8080`,
    connectTo: `127.0.0.1:${port}`,
    material: client,
    channelOptions: { 'grpc.use_local_subchannel_pool': 1 },
  });
  try {
    const value = await createSecretStoreProviderClient(channel, { retry: false }).getSecret({ remoteRef: { key } });
    expect(value.toString()).toBe(`value of ${key}`);
    return seenClients.at(-1)!;
  } finally {
    await channel.close();
  }
}

/** A TLS handshake with the provider on `port` at exactly `version`, presenting `client`'s material. */
function handshakeAt(version: 'TLSv1.3' | 'TLSv1.2', client: CertificateWatcher, port: number): ReturnType<typeof probe> {
  return probe(port, {
    ca: ca.cert,
    cert: client.current!.certificate,
    key: client.current!.privateKey,
    servername: TEST_SERVER_NAME,
    minVersion: version,
    maxVersion: version,
  });
}

beforeAll(async () => {
  ca = await opensslP256Ca('scratch pod-certificate CA');
  await Promise.all(
    POD_KEY_TYPES.flatMap((type) => [
      opensslPodLeaf(ca, type, 'server').then((leaf) => serverLeaves.set(type, leaf)),
      opensslPodLeaf(ca, type, 'client').then((leaf) => clientLeaves.set(type, leaf)),
    ]),
  );
});

afterAll(() => {
  watchers.forEach((w) => w.close());
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
});

describe('a pod-certificate credential bundle with each key type the kubelet generates', () => {
  it.each(POD_KEY_TYPES)('%s as the provider server key: loads, and clients handshake over TLS 1.3 and TLS 1.2', async (type) => {
    const leaf = serverLeaves.get(type)!;
    const server = await providerWith(leaf);
    const client = await clientWatcherWith(clientLeaves.get('ECDSAP256')!);
    try {
      expect(keyTypeOf(new X509Certificate(leaf.cert).publicKey)).toBe(type);
      expect(await callAs(client, server.port, type)).toBe(serial(clientLeaves.get('ECDSAP256')!.cert));
      for (const version of ['TLSv1.3', 'TLSv1.2'] as const) {
        const outcome = await handshakeAt(version, client, server.port);
        expect([version, outcome.accepted, outcome.protocol, outcome.serverSerial, outcome.errorMessage]).toEqual([
          version,
          true,
          version,
          serial(leaf.cert),
          undefined,
        ]);
      }
    } finally {
      await server.close();
    }
  });

  describe('as ESO client keys, against one ECDSA P-256 provider', () => {
    let server: ProviderServer;
    beforeAll(async () => {
      server = await providerWith(serverLeaves.get('ECDSAP256')!);
    });
    afterAll(() => server.close());

    it.each(POD_KEY_TYPES)('%s as the client key: loads, the provider sees that certificate, and handshakes pass over TLS 1.3 and TLS 1.2', async (type) => {
      const leaf = clientLeaves.get(type)!;
      const client = await clientWatcherWith(leaf);
      expect(keyTypeOf(client.current!.leaf.publicKey)).toBe(type);
      expect(await callAs(client, server.port, type)).toBe(serial(leaf.cert));
      for (const version of ['TLSv1.3', 'TLSv1.2'] as const) {
        const outcome = await handshakeAt(version, client, server.port);
        expect([version, outcome.accepted, outcome.protocol, outcome.errorMessage]).toEqual([version, true, version, undefined]);
      }
    });
  });
});
