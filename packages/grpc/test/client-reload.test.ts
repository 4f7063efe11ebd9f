import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import {
  CertificateWatcher,
  clientTlsMaterial,
  createSecretStoreProviderClient,
  parseProviderAddress,
  ProviderChannel,
  ProviderChannelPool,
  ServerNameMismatchError,
  TlsMaterialError,
  type SecretStoreProvider,
} from '@eso-mtls/grpc';
import { writeAtomically } from '@eso-mtls/test-kit/demo';
import { failureOf } from '@eso-mtls/test-kit/failure';
import { issueTestCa, issueTestClient, issueTestServer, TEST_SERVER_NAME, type KeyPair, type TestCa } from '@eso-mtls/test-kit/pki';
import { secretFiles, startReloadingProvider, type ReloadingProvider } from '@eso-mtls/test-kit/reloading-provider';
import { eventually } from '@eso-mtls/test-kit/eventually';

const serial = (pem: string) => new X509Certificate(pem).serialNumber.toLowerCase();
const ADDRESS = `${TEST_SERVER_NAME}:8080`;

let ca: TestCa;
let clients: KeyPair[];
let provider: ReloadingProvider;
/** Serial of the client certificate each call presented, in call order. */
const presented: string[] = [];
const gates: (() => void)[] = [];

const implementation: SecretStoreProvider = {
  async getSecret(request, context) {
    presented.push(context.client.serialNumber);
    if (request.remoteRef?.key === 'slow') await new Promise<void>((resolve) => gates.push(resolve));
    return { value: Buffer.from(String(request.remoteRef?.key)) };
  },
  getSecretMap: () => ({ secrets: {} }),
};

const material = (leaf: KeyPair, bundle = ca.cert) => clientTlsMaterial({ 'tls.crt': leaf.cert, 'tls.key': leaf.key, 'ca.crt': bundle });
const cleanups: (() => unknown)[] = [];
const connectTo = () => `127.0.0.1:${provider.port}`;
const typed = (channel: ProviderChannel) => createSecretStoreProviderClient(channel, { retry: false, waitForReady: false });

beforeAll(async () => {
  ca = await issueTestCa();
  clients = await Promise.all([0, 1, 2].map(() => issueTestClient(ca)));
  provider = await startReloadingProvider(ca.cert, await issueTestServer(ca), { implementation });
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => {
  await provider.stop();
});

describe('verifying the provider', () => {
  it('the server certificate is checked against the host of the address, wherever the channel dials', async () => {
    const wrong = new ProviderChannel({ address: 'other-provider.provider-system.svc:8080', connectTo: connectTo(), material: material(clients[0]!) });
    cleanups.push(() => wrong.close());
    const error = await failureOf(typed(wrong).getSecret({ remoteRef: { key: 'x' } }));
    // A configuration error, named (certificate-errors.test.ts has every kind), not UNAVAILABLE.
    expect(error).toBeInstanceOf(ServerNameMismatchError);
    expect(error.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(error.details).toMatch(/expected name other-provider.provider-system.svc, served names \[DNS:file-provider.provider-system.svc\]/);
    expect(wrong.stats.transientFailures).toBeGreaterThan(0);
  });

  it('there is no way around that check, and addresses are validated', () => {
    expect(
      () => new ProviderChannel({ address: ADDRESS, material: material(clients[0]!), channelOptions: { 'grpc.ssl_target_name_override': 'anything' } }),
    ).toThrow(/grpc.ssl_target_name_override="anything" is not accepted: the server certificate is always verified against file-provider.provider-system.svc/);
    expect(parseProviderAddress('provider-aws.provider-system.svc:8080')).toEqual({ host: 'provider-aws.provider-system.svc', port: 8080 });
    expect(parseProviderAddress('[::1]:9000')).toEqual({ host: '::1', port: 9000 });
    for (const bad of ['provider-aws.provider-system.svc', 'dns:///x:1', 'x:0', 'x:70000', 'a b:1']) {
      expect(() => parseProviderAddress(bad)).toThrow(`provider address ${JSON.stringify(bad)} is not host:port`);
    }
  });

  it('client material must be usable: a clientAuth certificate and its own key', () => {
    const mismatch = (() => {
      try {
        return clientTlsMaterial({ 'tls.crt': clients[0]!.cert, 'tls.key': clients[1]!.key, 'ca.crt': ca.cert });
      } catch (e) {
        return e;
      }
    })();
    expect(mismatch).toBeInstanceOf(TlsMaterialError);
    expect((mismatch as TlsMaterialError).reason).toBe('key_mismatch');
    expect(() =>
      clientTlsMaterial({ certificate: provider.watcher.current!.certificate, privateKey: provider.watcher.current!.privateKey, caBundle: ca.cert }),
    ).toThrow(/lacks extendedKeyUsage clientAuth/);
  });
});

describe('picking up rotated client material without a restart', () => {
  it('a watcher over the client Secret folder: new calls present the new certificate, the old channel drains then closes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'client-certs-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    await writeAtomically(dir, secretFiles(ca.cert, clients[0]!));
    const watcher = new CertificateWatcher({ directory: dir, purpose: 'clientAuth', pollIntervalMs: 3_600_000 });
    cleanups.push(() => watcher.close());
    await watcher.start();
    const pool = new ProviderChannelPool({ material: watcher });
    cleanups.push(() => pool.close());
    const channel = pool.channel(ADDRESS, { connectTo: connectTo() });
    const client = typed(channel);

    presented.length = 0;
    await client.getSecret({ remoteRef: { key: 'a' } });
    const slow = client.getSecret({ remoteRef: { key: 'slow' } });
    await eventually(() => gates.length === 1, 5000, 'the slow call to arrive', 5);

    await writeAtomically(dir, secretFiles(ca.cert, clients[1]!));
    await eventually(() => channel.stats.channels === 2, 5000, 'the channel to be replaced', 5);
    expect((await client.getSecret({ remoteRef: { key: 'b' } })).toString()).toBe('b');
    // The old channel still carries the slow call: not closed under it.
    expect(channel.stats).toMatchObject({ channels: 2, drained: 0, inFlight: 1 });
    gates.shift()!();
    expect((await slow).toString()).toBe('slow');
    expect(channel.stats).toMatchObject({ channels: 2, drained: 1, inFlight: 0, forcedCloses: 0 });
    expect(presented).toEqual([serial(clients[0]!.cert), serial(clients[0]!.cert), serial(clients[1]!.cert)]);
  });

  it('a call still waiting for the old channel to connect is not failed by the switch', async () => {
    const channel = new ProviderChannel({ address: ADDRESS, connectTo: connectTo(), material: material(clients[0]!) });
    cleanups.push(() => channel.close());
    const client = typed(channel);
    const queued = client.getSecret({ remoteRef: { key: 'queued' } });
    channel.updateMaterial(material(clients[1]!));
    expect((await queued).toString()).toBe('queued');
    expect((await client.getSecret({ remoteRef: { key: 'after' } })).toString()).toBe('after');
    expect(channel.stats).toMatchObject({ channels: 2, drained: 1, inFlight: 0 });
  });

  it('a caller that never reports its call cannot pin a replaced channel past drainTimeoutMs', async () => {
    const channel = new ProviderChannel({ address: ADDRESS, connectTo: connectTo(), material: material(clients[0]!), drainTimeoutMs: 50 });
    cleanups.push(() => channel.close());
    channel.getChannel(); // never reported finished
    channel.updateMaterial(material(clients[1]!));
    await eventually(() => channel.stats.forcedCloses === 1, 5000, 'the forced close', 5);
    expect((await typed(channel).getSecret({ remoteRef: { key: 'c' } })).toString()).toBe('c');
  });

  it('user-supplied material for a provider we do not manage (its own CAs), switched by hand', async () => {
    const clientCa = await issueTestCa();
    const serverCa = await issueTestCa();
    // Its server trusts the CA of our client certificate, and its own certificate comes from another CA.
    const foreign = await startReloadingProvider(
      clientCa.cert,
      await issueTestServer(serverCa),
      { implementation, requireClientIdentity: false },
      { chainToBundle: false },
    );
    cleanups.push(() => foreign.stop());
    const ours = await issueTestClient(clientCa);
    const pems = { certificate: ours.cert, privateKey: ours.key, caBundle: serverCa.cert };
    expect(() => clientTlsMaterial(pems)).toThrow(/is not signed by any CA in ca.crt/);
    const pool = new ProviderChannelPool({ material: clientTlsMaterial(pems, { chainToBundle: false }) });
    cleanups.push(() => pool.close());
    const channel = pool.channel(ADDRESS, { connectTo: `127.0.0.1:${foreign.port}` });
    expect((await typed(channel).getSecret({ remoteRef: { key: 'd' } })).toString()).toBe('d');

    const renewed = await issueTestClient(clientCa);
    presented.length = 0;
    pool.updateMaterial(clientTlsMaterial({ ...pems, certificate: renewed.cert, privateKey: renewed.key }, { chainToBundle: false }));
    expect((await typed(channel).getSecret({ remoteRef: { key: 'e' } })).toString()).toBe('e');
    expect(presented).toEqual([serial(renewed.cert)]);
  });

  it('close() waits for running calls, then refuses new ones', async () => {
    const channel = new ProviderChannel({ address: ADDRESS, connectTo: connectTo(), material: material(clients[2]!) });
    const client = typed(channel);
    const slow = client.getSecret({ remoteRef: { key: 'slow' } });
    await eventually(() => gates.length === 1, 5000, 'the slow call to arrive', 5);
    let closed = false;
    const closing = channel.close().then(() => (closed = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(closed).toBe(false);
    gates.shift()!();
    expect((await slow).toString()).toBe('slow');
    await closing;
    const error = await failureOf<Error>(client.getSecret({ remoteRef: { key: 'late' } }));
    expect(error.message).toMatch(/provider channel to file-provider.provider-system.svc:8080 is closed/);
  });
});
