// Real handshakes with chained material (issue 35): the provider serves its leaf and intermediates,
// ESO's client presents its leaf and intermediates, and each peer trusts only the organisation's
// root. Peers: grpc-js both ways, Node's TLS, `openssl s_client -verify_return_error`, and grpc-go
// (testing/go-interop) both ways. Then hot reloads with calls running, as rotation-in-flight.test.ts
// counts them: from today's self-signed layout to a chained one (an anchor change, through the
// overlap: both anchors in every bundle, the leaves move, the old anchor leaves), and from one
// intermediate to another under the same root (no bundle change): 0 failed calls.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:tls';
import {
  CertificateWatcher,
  clientTlsMaterial,
  createSecretStoreProviderClient,
  ProviderChannel,
  type SecretStoreProvider,
  type SecretStoreProviderClient,
  type TlsMaterial,
} from '@eso-mtls/grpc';
import { writeAtomically } from '@eso-mtls/test-kit/demo';
import { issueTestCa, issueTestClient, issueTestServer, TEST_CLIENT_SPIFFE_ID, TEST_SERVER_NAME, type KeyPair } from '@eso-mtls/test-kit/pki';
import { secretFiles, startReloadingProvider, type ReloadingProvider } from '@eso-mtls/test-kit/reloading-provider';
import { probe } from '@eso-mtls/test-kit/tls-probe';
import { buildGoInterop, runProgram, startGoServer } from './support/go-interop.js';
import { Load } from './support/go-reloading.js';
import { memoryProvider } from './support/memory-provider.js';
import { chainPem, opensslIntermediate, opensslLeaf, opensslRoot, type OpensslCa } from './support/openssl-chain.js';
import { sClient } from './support/openssl-tls.js';

// A cold Go build downloads grpc-go from the Go proxy: minutes, once per machine.
const BUILD_TIMEOUT = 10 * 60_000;
const ADDRESS = `${TEST_SERVER_NAME}:8080`;
const serial = (pem: string) => new X509Certificate(pem).serialNumber.toLowerCase();

/** A leaf and the intermediates above it, bottom up: what tls.crt holds. */
interface Chained extends KeyPair {
  readonly leafCert: string;
}
const chained = (leaf: KeyPair, intermediates: readonly OpensslCa[]): Chained => ({ cert: chainPem(leaf, intermediates), key: leaf.key, leafCert: leaf.cert });
const serverUnder = async (intermediates: readonly OpensslCa[]) =>
  chained(await opensslLeaf(intermediates[0]!, { purpose: 'serverAuth', commonName: TEST_SERVER_NAME, dnsNames: [TEST_SERVER_NAME] }), intermediates);
const clientUnder = async (intermediates: readonly OpensslCa[]) =>
  chained(await opensslLeaf(intermediates[0]!, { purpose: 'clientAuth', commonName: 'external-secrets-core', uris: [TEST_CLIENT_SPIFFE_ID] }), intermediates);

let root: OpensslCa;
let intermediate: OpensslCa;
let int1: OpensslCa;
let int2: OpensslCa;
let server: Chained;
let client: Chained;
let server2: Chained;
let client2: Chained;
let go: { client: string; server: string };
let files: string;
const file = (name: string) => join(files, name);
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  const goBuild = buildGoInterop();
  root = await opensslRoot('Example Org Root');
  [intermediate, int1] = await Promise.all([
    opensslIntermediate(root, 'Example Issuing CA', { pathLength: 0 }),
    opensslIntermediate(root, 'Example Policy CA', { pathLength: 1 }),
  ]);
  int2 = await opensslIntermediate(int1, 'Example Issuing CA 2', { pathLength: 0 });
  [server, client, server2, client2] = await Promise.all([
    serverUnder([intermediate]),
    clientUnder([intermediate]),
    serverUnder([int2, int1]),
    clientUnder([int2, int1]),
  ]);
  files = mkdtempSync(join(tmpdir(), 'chain-handshakes-'));
  for (const [name, pem] of Object.entries({
    'root.pem': root.cert,
    'client.crt': client.leafCert,
    'client-chain.crt': client.cert,
    'client-intermediates.crt': intermediate.cert,
    'client.key': client.key,
    'client2-chain.crt': client2.cert,
    'client2.key': client2.key,
    'server-chain.crt': server.cert,
    'server.key': server.key,
  }))
    writeFileSync(file(name), pem);
  go = await goBuild;
}, BUILD_TIMEOUT);

afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  if (files) rmSync(files, { recursive: true, force: true });
});

const implementation = memoryProvider([]);
const channelTo = (port: number, material: TlsMaterial) =>
  new ProviderChannel({ address: ADDRESS, connectTo: `127.0.0.1:${port}`, material, channelOptions: { 'grpc.use_local_subchannel_pool': 1 } });
const chainedClientMaterial = (c: Chained) => clientTlsMaterial({ 'tls.crt': c.cert, 'tls.key': c.key, 'ca.crt': root.cert });

/** One getSecret through grpc-js over `channel`; closes the channel after. */
async function callOnce(channel: ProviderChannel): Promise<string> {
  try {
    return (await createSecretStoreProviderClient(channel, { retry: false }).getSecret({ remoteRef: { key: 'db/password' } })).toString();
  } finally {
    await channel.close();
  }
}

describe('a provider serving a chain, and a client presenting one, each trusting only the root', () => {
  let provider: ReloadingProvider;
  beforeAll(async () => {
    provider = await startReloadingProvider(root.cert, server, { implementation });
    cleanups.push(() => provider.stop());
  });

  it('grpc-js: one intermediate, then two', async () => {
    expect(await callOnce(channelTo(provider.port, chainedClientMaterial(client)))).toBe('hunter2');
    await provider.publish(root.cert, server2);
    expect(provider.watcher.current?.serialNumber).toBe(serial(server2.leafCert));
    expect(await callOnce(channelTo(provider.port, chainedClientMaterial(client2)))).toBe('hunter2');
    // Either chain of ESO's client meets either chain of the provider: only the root is shared.
    expect(await callOnce(channelTo(provider.port, chainedClientMaterial(client)))).toBe('hunter2');
    await provider.publish(root.cert, server);
  });

  it("Node's TLS: the served certificate verifies against the root alone, so the intermediates were sent", async () => {
    const outcome = await probe(provider.port, { ca: root.cert, cert: client.cert, key: client.key, servername: TEST_SERVER_NAME });
    expect([outcome.accepted, outcome.serverSerial, outcome.errorMessage]).toEqual([true, serial(server.leafCert), undefined]);
    // The client's intermediates matter as much: its lone leaf is refused by the provider.
    const lone = await probe(provider.port, { ca: root.cert, cert: client.leafCert, key: client.key, servername: TEST_SERVER_NAME });
    expect(lone.accepted).toBe(false);
  });

  it('openssl s_client -verify_return_error -CAfile root.pem: verified, with the chain the provider sent', async () => {
    const outcome = await sClient(provider.port, { caFile: file('root.pem'), certFile: file('client.crt'), keyFile: file('client.key') }, TEST_SERVER_NAME, [
      '-cert_chain',
      file('client-intermediates.crt'),
    ]);
    expect(outcome.accepted).toBe(true);
    expect(outcome.stdout).toMatch(/Verify return code: 0 \(ok\)/);
    expect(outcome.stdout).toMatch(/ 0 s:CN = file-provider\.provider-system\.svc\n\s+i:CN = Example Issuing CA\n/);
    expect(outcome.stdout).toMatch(/ 1 s:CN = Example Issuing CA\n\s+i:CN = Example Org Root\n/);
  });

  it('control: a TLS server sending the leaf alone is refused by the same s_client', async () => {
    const bare = createServer({ cert: server.leafCert, key: server.key, ALPNProtocols: ['h2'] }, (socket) => socket.end());
    await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => bare.close(resolve)));
    const outcome = await sClient(
      (bare.address() as AddressInfo).port,
      { caFile: file('root.pem'), certFile: file('client.crt'), keyFile: file('client.key') },
      TEST_SERVER_NAME,
    );
    expect([outcome.accepted, outcome.code]).toEqual([false, 1]);
    expect(outcome.stdout + outcome.stderr).toMatch(/unable to get local issuer certificate/);
  });

  it('grpc-go: its client (ESO core) presenting a chain calls our provider, verifying our chain against the root', async () => {
    const result = await runProgram(go.client, [
      '-addr',
      `127.0.0.1:${provider.port}`,
      '-server-name',
      TEST_SERVER_NAME,
      '-ca',
      file('root.pem'),
      '-cert',
      file('client2-chain.crt'),
      '-key',
      file('client2.key'),
    ]);
    expect([result.code, result.stderr]).toEqual([0, '']);
    expect((JSON.parse(result.stdout) as { serverCertificate: unknown }).serverCertificate).toEqual({
      commonName: TEST_SERVER_NAME,
      dnsNames: [TEST_SERVER_NAME],
      verifiedChains: 1,
    });
  });

  it('grpc-go: its provider serving a chain is called by our ProviderChannel presenting one', async () => {
    const goServer = await startGoServer(go.server, ['-ca', file('root.pem'), '-cert', file('server-chain.crt'), '-key', file('server.key')]);
    cleanups.push(() => goServer.stop());
    const port = Number(goServer.address.split(':').at(-1));
    expect(await callOnce(channelTo(port, chainedClientMaterial(client2)))).toBe('hunter2');
  });
});

describe('hot reload with calls running', () => {
  const CLIENTS = 4;
  const root2 = mkdtempSync(join(tmpdir(), 'chain-reload-'));
  const clientDir = join(root2, 'client');
  const presented = new Set<string>();
  const counting: SecretStoreProvider = {
    getSecret(_request, context) {
      presented.add(context.client.serialNumber);
      return { value: Buffer.from('v') };
    },
    getSecretMap: () => ({ secrets: {} }),
  };
  let load: Load | undefined;
  let provider: ReloadingProvider;
  let clientWatcher: CertificateWatcher;
  let channels: ProviderChannel[];
  let clients: SecretStoreProviderClient[];

  /** Resolves once `watcher` serves exactly `data`; rejects on a refusal. */
  function served(watcher: CertificateWatcher, data: { 'tls.crt': string; 'ca.crt': string }): Promise<void> {
    const matches = () => watcher.current?.certificate === data['tls.crt'] && watcher.current?.caBundle === data['ca.crt'];
    if (matches()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const offs = [
        watcher.onMaterial(() => matches() && (offs.forEach((f) => f()), resolve())),
        watcher.onFailure((f) => (offs.forEach((f) => f()), reject(new Error(`${watcher.directory} refused: ${f.message}`)))),
      ];
    });
  }

  /** Writes both folders (the provider's first), waits until each is served, then for calls on it. */
  async function step(bundle: string, serverPair: KeyPair, clientPair: KeyPair): Promise<void> {
    await provider.publish(bundle, serverPair);
    expect(provider.watcher.current?.certificate).toBe(serverPair.cert);
    const clientFiles = secretFiles(bundle, clientPair);
    const clientServed = served(clientWatcher, clientFiles);
    await writeAtomically(clientDir, clientFiles);
    await clientServed;
    await load!.callsAfterStep();
  }

  afterAll(async () => {
    await load?.stop();
    await Promise.all(channels?.map((c) => c.close()) ?? []);
    clientWatcher?.close();
    await provider?.stop();
    rmSync(root2, { recursive: true, force: true });
  });

  it(
    'self-signed → chained (anchor change through the overlap), then another intermediate under the same root: 0 failed calls',
    async () => {
      const selfSigned = await issueTestCa();
      const [selfServer, selfClient] = await Promise.all([issueTestServer(selfSigned), issueTestClient(selfSigned)]);
      const next = await opensslIntermediate(root, 'Example Issuing CA (renewed)', { pathLength: 0 });
      const [renewedServer, renewedClient] = await Promise.all([serverUnder([next]), clientUnder([next])]);

      provider = await startReloadingProvider(selfSigned.cert, selfServer, { implementation: counting });
      mkdirSync(clientDir);
      await writeAtomically(clientDir, secretFiles(selfSigned.cert, selfClient));
      clientWatcher = new CertificateWatcher({ directory: clientDir, purpose: 'clientAuth' });
      await clientWatcher.start();
      channels = Array.from(
        { length: CLIENTS },
        () =>
          new ProviderChannel({
            address: ADDRESS,
            connectTo: `127.0.0.1:${provider.port}`,
            material: clientWatcher,
            channelOptions: { 'grpc.use_local_subchannel_pool': 1 },
          }),
      );
      clients = channels.map((c) => createSecretStoreProviderClient(c, { retry: false, waitForReady: false }));
      const running = (load = new Load(clients, 'k'));
      await running.callsAfterStep();

      const both = `${selfSigned.cert}${root.cert}`;
      await step(both, selfServer, selfClient); // the root joins every bundle
      await step(both, server, client); // the leaves move onto the chain
      await step(root.cert, server, client); // the self-signed CA leaves the bundles
      await step(root.cert, renewedServer, renewedClient); // a renewed intermediate, same root: no bundle change
      await step(root.cert, server2, client2); // two intermediates

      await running.stop();
      expect(running.failures).toEqual([]);
      expect(running.ok).toBeGreaterThan(5 * 6 * CLIENTS);
      // Every client certificate was presented on some call: the chained ones included.
      for (const leafPem of [selfClient.cert, client.leafCert, renewedClient.leafCert, client2.leafCert]) expect(presented).toContain(serial(leafPem));
      expect(provider.watcher.stats).toMatchObject({ reloads: 5, failures: 0 });
      expect(clientWatcher.stats).toMatchObject({ reloads: 5, failures: 0 });
    },
    BUILD_TIMEOUT,
  );
});
