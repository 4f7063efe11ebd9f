import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  clientTlsMaterial,
  createSecretStoreProviderClient,
  healthServiceDefinition,
  PROVIDER_SERVICE_NAME,
  ProviderChannel,
  type CallContext,
  type ProviderLogRecord,
  type SecretStoreProvider,
} from '@eso-mtls/grpc';
import { issueTestCa, issueTestClient, issueTestServer, TEST_SERVER_NAME, type KeyPair, type TestCa } from '@eso-mtls/test-kit/pki';
import { startReloadingProvider, type ReloadingProvider } from '@eso-mtls/test-kit/reloading-provider';
import { probe } from '@eso-mtls/test-kit/tls-probe';
import { eventually } from '@eso-mtls/test-kit/eventually';

const serial = (pem: string) => new X509Certificate(pem).serialNumber.toLowerCase();

let ca: TestCa;
let client: KeyPair;
let leaves: KeyPair[];
let provider: ReloadingProvider;
const peers: string[] = [];
let releaseSlow: () => void = () => undefined;

const implementation: SecretStoreProvider = {
  async getSecret(request, context: CallContext) {
    peers.push(context.peer);
    if (request.remoteRef?.key === 'slow') await new Promise<void>((resolve) => (releaseSlow = resolve));
    return { value: Buffer.from(`value of ${request.remoteRef?.key}`) };
  },
  getSecretMap: () => ({ secrets: {} }),
};

const probeAsClient = () => probe(provider.port, { ca: ca.cert, cert: client.cert, key: client.key, servername: TEST_SERVER_NAME });
const newChannel = () =>
  new ProviderChannel({
    address: `${TEST_SERVER_NAME}:8080`,
    connectTo: `127.0.0.1:${provider.port}`,
    material: clientTlsMaterial({ 'tls.crt': client.cert, 'tls.key': client.key, 'ca.crt': ca.cert }),
    channelOptions: { 'grpc.use_local_subchannel_pool': 1 },
  });

beforeAll(async () => {
  ca = await issueTestCa();
  client = await issueTestClient(ca);
  leaves = await Promise.all([0, 1, 2].map(() => issueTestServer(ca)));
  provider = await startReloadingProvider(ca.cert, leaves[0]!, { implementation, metrics: { namespace: 'provider-system', service: 'file-provider' } });
});

afterAll(async () => {
  await provider.stop();
});

describe('hot reload on a serving provider', () => {
  it('new handshakes get the new certificate; an open connection, its stream and its in-flight call carry on', async () => {
    expect((await probeAsClient()).serverSerial).toBe(serial(leaves[0]!.cert));
    const channel = newChannel();
    const typed = createSecretStoreProviderClient(channel, { retry: false, waitForReady: false });
    const Health = grpc.makeGenericClientConstructor(healthServiceDefinition(), 'Health');
    // A stream, like a call, holds its channel until it reports back (callFinished).
    const streamChannel = channel.getChannel();
    const health = new Health(channel.target, grpc.credentials.createInsecure(), { channelOverride: streamChannel });
    try {
      expect((await typed.getSecret({ remoteRef: { key: 'a' } })).toString()).toBe('value of a');
      const statuses: string[] = [];
      const stream = (health as unknown as { Watch(r: unknown): grpc.ClientReadableStream<{ status: string }> }).Watch({ service: PROVIDER_SERVICE_NAME });
      stream.on('data', (m: { status: string }) => statuses.push(m.status));
      const streamEnded = new Promise<grpc.ServiceError>((resolve) => stream.on('error', resolve));
      const slow = typed.getSecret({ remoteRef: { key: 'slow' } });
      await eventually(() => statuses.length === 1 && peers.length === 2, 5000, 'the first reload status and both peers', 5);

      await provider.publish(ca.cert, leaves[1]!);
      expect(provider.watcher.current?.serialNumber).toBe(serial(leaves[1]!.cert));
      expect((await probeAsClient()).serverSerial).toBe(serial(leaves[1]!.cert));

      releaseSlow();
      expect((await slow).toString()).toBe('value of slow');
      provider.server.health.set(PROVIDER_SERVICE_NAME, 'NOT_SERVING');
      await eventually(() => statuses.length === 2, 5000, 'the second reload status', 5);
      expect(statuses).toEqual(['SERVING', 'NOT_SERVING']);
      expect((await typed.getSecret({ remoteRef: { key: 'b' } })).toString()).toBe('value of b');
      // Every call, before and after the swap, came over the one connection opened before it.
      expect(new Set(peers).size).toBe(1);
      provider.server.health.set(PROVIDER_SERVICE_NAME, 'SERVING');
      stream.cancel();
      expect((await streamEnded).code).toBe(grpc.status.CANCELLED);
    } finally {
      channel.callFinished(streamChannel);
      await channel.close();
    }
  });

  it('while a bad pair is on disk, handshakes keep succeeding with the last good certificate; fixing the files recovers', async () => {
    const good = provider.watcher.current!;
    const before = provider.watcher.stats;
    const bad: [string, Record<string, string>][] = [
      ['corrupt', { 'ca.crt': ca.cert, 'tls.crt': 'garbage', 'tls.key': leaves[2]!.key }],
      ['empty', { 'ca.crt': '', 'tls.crt': '', 'tls.key': '' }],
      ['half-written', { 'ca.crt': ca.cert, 'tls.crt': leaves[2]!.cert, 'tls.key': good.privateKey }],
      ['mismatched', { 'ca.crt': ca.cert, 'tls.crt': good.certificate, 'tls.key': leaves[2]!.key }],
    ];
    for (const [name, files] of bad) {
      await provider.publish(files['ca.crt']!, { cert: files['tls.crt']!, key: files['tls.key']! });
      const outcome = await probeAsClient();
      expect([name, outcome.accepted, outcome.serverSerial]).toEqual([name, true, good.serialNumber]);
      // A fresh connection through grpc-js works too.
      const channel = newChannel();
      try {
        expect((await createSecretStoreProviderClient(channel, { retry: false }).getSecret({ remoteRef: { key: name } })).toString()).toBe(`value of ${name}`);
      } finally {
        await channel.close();
      }
    }
    expect(provider.watcher.stats).toEqual({ ...before, failures: before.failures + 4 });

    await provider.publish(ca.cert, leaves[2]!);
    expect((await probeAsClient()).serverSerial).toBe(serial(leaves[2]!.cert));
    expect(provider.watcher.stats).toEqual({ loads: before.loads + 1, reloads: before.reloads + 1, failures: before.failures + 4 });
    const metrics = await provider.server.metrics!.registry.metrics();
    expect(metrics).toMatch(new RegExp(`eso_provider_certificate_hot_reload_total\\{[^}]*\\} ${before.reloads + 1}\\n`));
    expect(metrics).toMatch(new RegExp(`eso_provider_certificate_hot_reload_failures_total\\{[^}]*\\} ${before.failures + 4}\\n`));
  });
});

describe('a provider whose log callback throws', () => {
  it('keeps serving and reloading; refusals (a FIFO in place of tls.crt) are counted and logged once each, with namespace and service', async () => {
    const records: ProviderLogRecord[] = [];
    const listenerErrors: Error[] = [];
    const broken = await startReloadingProvider(
      ca.cert,
      leaves[0]!,
      {
        implementation,
        metrics: { namespace: 'provider-system', service: 'broken-logger' },
        log: (record) => {
          records.push(record);
          throw new Error('log sink is down');
        },
      },
      { onError: (e) => listenerErrors.push(e) },
    );
    const probeBroken = () => probe(broken.port, { ca: ca.cert, cert: client.cert, key: client.key, servername: TEST_SERVER_NAME });
    const failuresCounted = async () => {
      const text = await broken.server.metrics!.registry.metrics();
      return Number(/eso_provider_certificate_hot_reload_failures_total\{[^}]*\} (\d+)/.exec(text)![1]);
    };
    try {
      expect((await probeBroken()).serverSerial).toBe(serial(leaves[0]!.cert));
      await broken.publish(ca.cert, leaves[1]!);
      expect((await probeBroken()).serverSerial).toBe(serial(leaves[1]!.cert));

      const tlsCrt = join(broken.certDir, '..data', 'tls.crt');
      rmSync(tlsCrt);
      execFileSync('mkfifo', [tlsCrt]);
      await broken.watcher.check();
      await broken.watcher.check();
      expect(await failuresCounted()).toBe(1);
      const outcome = await probeBroken();
      expect([outcome.accepted, outcome.serverSerial]).toEqual([true, serial(leaves[1]!.cert)]);

      await broken.publish(ca.cert, leaves[2]!);
      expect((await probeBroken()).serverSerial).toBe(serial(leaves[2]!.cert));
      expect(records.map((r) => [r.level, r.reason, r.namespace, r.service])).toEqual([
        ['info', 'reloaded', 'provider-system', 'broken-logger'],
        ['warn', 'fifo', 'provider-system', 'broken-logger'],
        ['info', 'reloaded', 'provider-system', 'broken-logger'],
      ]);
      expect(records[1]!.detail).toContain(`cannot read ${join(broken.certDir, 'tls.crt')}: is a FIFO (named pipe), not a regular file`);
      // Each throw was caught by the watcher and reported, not left to become an unhandled rejection.
      expect(listenerErrors.map((e) => e.message)).toEqual(Array(3).fill(`certificate watcher for ${broken.certDir}: listener failed: log sink is down`));
    } finally {
      await broken.stop();
    }
  });
});
