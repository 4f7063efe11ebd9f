// Configuration errors are named, not retried (issue 27): each certificate failure of a real
// handshake against the real provider server surfaces as its own error class, with a status other
// than UNAVAILABLE, after one attempt on the same material; an emergency CA rotation heals once
// the client folder reloads. Scale: one provider, a handful of P-256 certificates. Untimed: the
// tests count attempts and calls, never durations.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { issueCa, issueServerLeaf, resolvePolicy } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import {
  CertificateWatcher,
  ClientCertificateRefusedError,
  createSecretStoreProviderClient,
  ExpiredProviderCertificateError,
  ProviderCallError,
  ProviderCertificateError,
  ProviderChannel,
  ServerNameMismatchError,
  UntrustedProviderCertificateError,
  type RetryEnvironment,
  type SecretStoreProvider,
} from '@eso-mtls/grpc';
import { writeAtomically } from '@eso-mtls/test-kit/demo';
import { failureOf } from '@eso-mtls/test-kit/failure';
import { issueTestCa, issueTestClient, issueTestServer, TEST_SERVER_NAME, type KeyPair, type TestCa } from '@eso-mtls/test-kit/pki';
import { secretFiles, startReloadingProvider, type ReloadingProvider } from '@eso-mtls/test-kit/reloading-provider';

const ADDRESS = `${TEST_SERVER_NAME}:8080`;
const DAY = 86_400_000;
const serial = (pem: string) => new X509Certificate(pem).serialNumber.toLowerCase();

/** Calls that reached the provider, by the serial of the client certificate presented. */
const presented: string[] = [];
const implementation: SecretStoreProvider = {
  getSecret(request, context) {
    presented.push(context.client.serialNumber);
    return { value: Buffer.from(String(request.remoteRef?.key)) };
  },
  getSecretMap: () => ({ secrets: {} }),
};

/** Retries without waiting: the loop's sleeps are recorded, the clock only moves with them. */
function instantRetries(): RetryEnvironment & { sleeps: number[] } {
  let t = 1_000_000;
  const sleeps: number[] = [];
  return { sleeps, random: () => 0.5, now: () => t, sleep: async (ms) => void (sleeps.push(ms), (t += ms)) };
}

let ca: TestCa;
let provider: ReloadingProvider;
const cleanups: (() => unknown)[] = [];

/** A watcher over a fresh client folder holding `leaf` and `bundle`, written the kubelet's way. */
async function clientFolder(leaf: KeyPair, bundle: string): Promise<{ dir: string; watcher: CertificateWatcher }> {
  const dir = mkdtempSync(join(tmpdir(), 'client-certs-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  await writeAtomically(dir, secretFiles(bundle, leaf));
  const watcher = new CertificateWatcher({ directory: dir, purpose: 'clientAuth', pollIntervalMs: 3_600_000 });
  cleanups.push(() => watcher.close());
  await watcher.start();
  return { dir, watcher };
}

/** A channel to the provider on loopback, verified against `address`'s host, and a client over it with the default 5 attempts. */
function dial(watcher: CertificateWatcher, address = ADDRESS, options: { certificateReloadWaitMs?: number } = {}, port = provider.port) {
  const channel = new ProviderChannel({ address, connectTo: `127.0.0.1:${port}`, material: watcher });
  cleanups.push(() => channel.close());
  const env = instantRetries();
  const client = createSecretStoreProviderClient(channel, { retryEnvironment: env, ...options });
  return { channel, client, env };
}

beforeAll(async () => {
  ca = await issueTestCa();
  provider = await startReloadingProvider(ca.cert, await issueTestServer(ca), { implementation });
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  presented.length = 0;
  await provider.publish(ca.cert, await issueTestServer(ca));
});
afterAll(async () => {
  await provider.stop();
});

describe('configuration errors are named, not retried', () => {
  it('a wrong server name fails at once with ServerNameMismatchError, naming the name expected, the names served and the folder', async () => {
    const { dir, watcher } = await clientFolder(await issueTestClient(ca), ca.cert);
    const { client, channel, env } = dial(watcher, 'other-provider.provider-system.svc:8080', { certificateReloadWaitMs: 60_000 });
    const error = await failureOf<ServerNameMismatchError>(client.getSecret({ remoteRef: { key: 'x' } }));
    expect(error).toBeInstanceOf(ServerNameMismatchError);
    expect(error).toBeInstanceOf(ProviderCertificateError);
    expect(error).toBeInstanceOf(ProviderCallError);
    expect(error).toMatchObject({
      name: 'ServerNameMismatchError',
      code: grpc.status.FAILED_PRECONDITION,
      attempts: 1,
      problem: 'server_name',
      tlsCode: 'ERR_TLS_CERT_ALTNAME_INVALID',
      expectedName: 'other-provider.provider-system.svc',
      servedNames: [`DNS:${TEST_SERVER_NAME}`],
      clientFolder: dir,
    });
    expect(error.message).toContain('expected name other-provider.provider-system.svc, served names [DNS:file-provider.provider-system.svc]');
    expect(error.message).toContain(`client certificate and CA bundle from ${dir}`);
    // The dialled address is where the certificate was served, not a folder of ours.
    expect(error.message).toContain(`served by the provider at 127.0.0.1:${provider.port})`);
    expect(error.message).not.toContain('folder at 127.0.0.1');
    // Never transient: not retried, not even while a reload could be awaited.
    expect(env.sleeps).toEqual([]);
    expect(channel.stats.certificateFailures).toBe(1);
  });

  it('a provider certificate from another CA: UntrustedProviderCertificateError, one attempt on the same material', async () => {
    const other = await issueTestCa();
    await provider.publish(other.cert, await issueTestServer(other));
    const { dir, watcher } = await clientFolder(await issueTestClient(ca), ca.cert);
    const { client, env } = dial(watcher);
    const error = await failureOf<UntrustedProviderCertificateError>(client.getSecret({ remoteRef: { key: 'x' } }));
    expect(error).toBeInstanceOf(UntrustedProviderCertificateError);
    expect(error).toMatchObject({ code: grpc.status.FAILED_PRECONDITION, attempts: 1, problem: 'untrusted_authority', clientFolder: dir });
    expect(error.servedNames).toEqual([`DNS:${TEST_SERVER_NAME}`]);
    expect(error.tlsCode).toMatch(/SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT/);
    expect(env.sleeps).toEqual([]);
    expect(presented).toEqual([]);
  });

  it('an expired provider certificate: ExpiredProviderCertificateError', async () => {
    const crypto = createNodeCryptoBackend();
    const policy = resolvePolicy();
    // A CA still valid, and a leaf it issued 100 days ago that lived its 90 days.
    const oldCa = await issueCa({ crypto, policy, now: Date.now() - 100 * DAY });
    const expired = await issueServerLeaf({ crypto, policy, now: Date.now() - 100 * DAY }, oldCa, [TEST_SERVER_NAME]);
    // A provider whose clock is 50 days behind still serves it (its own watcher refuses expired material).
    const behind = await startReloadingProvider(
      oldCa.certificate.pem,
      { cert: expired.certificate.pem, key: expired.privateKeyPem },
      { implementation },
      { now: () => Date.now() - 50 * DAY },
    );
    cleanups.push(() => behind.stop());
    const { watcher } = await clientFolder(
      await issueTestClient({ cert: oldCa.certificate.pem, key: oldCa.privateKeyPem, keyed: oldCa }),
      oldCa.certificate.pem,
    );
    const { client, env } = dial(watcher, ADDRESS, {}, behind.port);
    const error = await failureOf<ExpiredProviderCertificateError>(client.getSecret({ remoteRef: { key: 'x' } }));
    expect(error).toBeInstanceOf(ExpiredProviderCertificateError);
    expect(error).toMatchObject({ code: grpc.status.FAILED_PRECONDITION, attempts: 1, problem: 'validity', tlsCode: 'CERT_HAS_EXPIRED' });
    expect(env.sleeps).toEqual([]);
  });

  it('a client certificate the provider refuses: ClientCertificateRefusedError, UNAUTHENTICATED', async () => {
    const stranger = await issueTestCa();
    // The client trusts the provider, but presents a certificate from a CA the provider does not
    // trust (its bundle names both, since the client's own watcher wants its leaf to chain to it).
    const { dir, watcher } = await clientFolder(await issueTestClient(stranger), ca.cert + stranger.cert);
    const { client, env } = dial(watcher);
    const error = await failureOf<ClientCertificateRefusedError>(client.getSecret({ remoteRef: { key: 'x' } }));
    expect(error).toBeInstanceOf(ClientCertificateRefusedError);
    expect(error).toMatchObject({ code: grpc.status.UNAUTHENTICATED, attempts: 1, problem: 'client_refused', clientFolder: dir });
    expect(error.servedNames).toEqual([`DNS:${TEST_SERVER_NAME}`]);
    expect(env.sleeps).toEqual([]);
    expect(presented).toEqual([]);
  });

  it('a transient network failure is still UNAVAILABLE, retried with backoff up to the 5 attempts', async () => {
    const { watcher } = await clientFolder(await issueTestClient(ca), ca.cert);
    // A port nobody listens on: the connection is refused before any TLS.
    const closed = new ProviderChannel({ address: ADDRESS, connectTo: '127.0.0.1:1', material: watcher });
    cleanups.push(() => closed.close());
    const env = instantRetries();
    const error = await failureOf(createSecretStoreProviderClient(closed, { retryEnvironment: env }).getSecret({ remoteRef: { key: 'x' } }));
    expect(error).not.toBeInstanceOf(ProviderCertificateError);
    expect(error).toMatchObject({ code: grpc.status.UNAVAILABLE, attempts: 5 });
    expect(env.sleeps).toHaveLength(4);
    expect(closed.stats.certificateFailures).toBe(0);
  });
});

describe('an emergency CA rotation heals once the client folder reloads', () => {
  it('the provider moves to a new CA first: the call waits for the reload, then succeeds on the new material', async () => {
    // Emergency: the old CA is dropped everywhere at once. The provider got its new certificate and
    // bundle first; ESO's client folder still holds the old CA's.
    const next = await issueTestCa();
    await provider.publish(next.cert, await issueTestServer(next));
    const { dir, watcher } = await clientFolder(await issueTestClient(ca), ca.cert);
    // The bound mirrors a call's own deadline (30 s); the test moves on as soon as the reload lands.
    const { client, channel } = dial(watcher, ADDRESS, { certificateReloadWaitMs: 30_000 });
    const nextClient = await issueTestClient(next);
    presented.length = 0;
    const call = client.getSecret({ remoteRef: { key: 'during' } });
    const deadline = Date.now() + 20_000;
    while (channel.stats.certificateFailures === 0) {
      if (Date.now() > deadline) throw new Error('the call never failed on the old CA');
      await new Promise((r) => setTimeout(r, 5));
    }
    // Same material: nothing retried yet.
    expect(presented).toEqual([]);
    await writeAtomically(dir, secretFiles(next.cert, nextClient));
    expect((await call).toString()).toBe('during');
    // One call reached the provider, on the reloaded certificate; the failed one was diagnosed once.
    expect(presented).toEqual([serial(nextClient.cert)]);
    expect(channel.stats).toMatchObject({ channels: 2, certificateFailures: 1 });
  });

  it('without a reload the same call fails with the named error after one attempt, and the next call after the reload succeeds', async () => {
    const { dir, watcher } = await clientFolder(await issueTestClient(ca), ca.cert);
    const { client, channel, env } = dial(watcher);
    const next = await issueTestCa();
    await provider.publish(next.cert, await issueTestServer(next));
    const error = await failureOf(client.getSecret({ remoteRef: { key: 'x' } }));
    expect(error).toBeInstanceOf(UntrustedProviderCertificateError);
    expect(error).toMatchObject({ attempts: 1 });
    expect(env.sleeps).toEqual([]);

    const reloaded = new Promise<void>((resolve) => watcher.onMaterial(() => resolve()));
    const nextClient = await issueTestClient(next);
    await writeAtomically(dir, secretFiles(next.cert, nextClient));
    await reloaded;
    expect((await client.getSecret({ remoteRef: { key: 'after' } })).toString()).toBe('after');
    expect(channel.stats.certificateFailures).toBe(1);
  });
});
