// Calls keep flowing, and none fails, while the core's planner rotates everything: 20 server
// certificates, 20 client certificates and 2 CAs along the overlap schedule (prepare: the next
// CA joins every bundle; activate: leaves are re-issued by it; retire: the old CA leaves the
// bundles). Retries are off and waitForReady is false, so nothing hides a failure.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SecretWrite } from '@eso-mtls/core';
import { CertificateWatcher, createSecretStoreProviderClient, ProviderChannel, type SecretStoreProvider, type SecretStoreProviderClient } from '@eso-mtls/grpc';
import { loaded, PlannedCluster } from '@eso-mtls/test-kit/planned-cluster';
import { startProviderOn, type ReloadingProvider } from '@eso-mtls/test-kit/reloading-provider';

const NAMESPACE = 'provider-system';
const SERVICE = 'file-provider';
const ADDRESS = `${SERVICE}.${NAMESPACE}.svc:8080`;
const CLIENTS = 4;
const MAX_CALLS = 200_000;
// A hang guard only: how long the rotations take is the machine's business, not the test's.
// Only catches a hang (each step has its own 10 s stall check): 90 s at load 20, over 120 s at load 14-21 with stress-ng.
const TIMEOUT_MS = 300_000;

const root = mkdtempSync(join(tmpdir(), 'rotation-'));
const dirs = { client: join(root, 'client'), server: join(root, 'server') };
Object.values(dirs).forEach((d) => mkdirSync(d));
const cluster = new PlannedCluster(NAMESPACE, SERVICE, dirs);
const peers = new Set<string>();
const clientSerials = new Set<string>();
const implementation: SecretStoreProvider = {
  getSecret(_request, context) {
    peers.add(context.peer);
    clientSerials.add(context.client.serialNumber);
    return { value: Buffer.from('v') };
  },
  getSecretMap: () => ({ secrets: {} }),
};

let provider: ReloadingProvider;
let clientWatcher: CertificateWatcher;
let channels: ProviderChannel[];
let clients: SecretStoreProviderClient[];

/** Every client calls back to back until stopped; counts per client so a step can wait for calls after it. */
const load = { running: false, ok: 0, perClient: new Array<number>(CLIENTS).fill(0), failures: [] as string[], loops: [] as Promise<void>[] };

function startLoad(): void {
  load.running = true;
  load.loops = clients.map(async (client, i) => {
    while (load.running && load.ok + load.failures.length < MAX_CALLS) {
      try {
        await client.getSecret({ remoteRef: { key: 'k' } });
        load.ok++;
        load.perClient[i]!++;
      } catch (e) {
        load.failures.push(`client ${i}: ${(e as Error).message}`);
      }
    }
  });
}

/** Waits until every client has completed `n` more calls: calls interleaved with each step. */
async function callsAfterStep(n = 5): Promise<void> {
  const target = load.perClient.map((c) => c + n);
  const deadline = Date.now() + 10_000;
  while (load.perClient.some((c, i) => c < target[i]!)) {
    if (Date.now() > deadline)
      throw new Error(`calls stalled after a step: ${load.perClient.join(', ')} of ${target.join(', ')}; failures: ${load.failures.slice(0, 3).join(' | ')}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** One reconcile; waits until each written folder is being served, then for calls; returns the writes. */
async function step(): Promise<SecretWrite[]> {
  const writes = await cluster.reconcile();
  await Promise.all(writes.filter((w) => w.target !== 'ca').map((w) => loaded(w.target === 'client' ? clientWatcher : provider.watcher, w)));
  await callsAfterStep();
  return writes;
}

const summary = (writes: SecretWrite[]) =>
  writes.map((w) => `${typeof w.target === 'string' ? w.target : 'namespace'}:${w.kind}${w.phases ? `(${w.phases.join('+')})` : ''}`).sort();

beforeAll(async () => {
  const initial = await cluster.reconcile();
  expect(summary(initial)).toEqual(['ca:ca(create)', 'client:clientLeaf', 'namespace:serverLeaf']);
  provider = await startProviderOn(dirs.server, { implementation });
  clientWatcher = new CertificateWatcher({ directory: dirs.client, purpose: 'clientAuth' });
  await clientWatcher.start();
  channels = Array.from(
    { length: CLIENTS },
    () =>
      new ProviderChannel({
        address: ADDRESS,
        connectTo: `127.0.0.1:${provider.port}`,
        material: clientWatcher,
        // Each client its own connection: grpc-js would otherwise share one subchannel among them.
        channelOptions: { 'grpc.use_local_subchannel_pool': 1 },
      }),
  );
  clients = channels.map((c) => createSecretStoreProviderClient(c, { retry: false, waitForReady: false }));
});

afterAll(async () => {
  load.running = false;
  await Promise.all(load.loops);
  await Promise.all(channels?.map((c) => c.close()) ?? []);
  clientWatcher?.close();
  await provider?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe('rotation with calls in flight', () => {
  it(
    '20 server, 20 client and 2 CA rotations: 0 failed calls, 0 failed handshakes, 0 refused loads',
    async () => {
      startLoad();
      await callsAfterStep();
      expect(new Set([...peers].map((p) => p.split(':').pop())).size).toBeGreaterThanOrEqual(CLIENTS);

      for (let i = 0; i < 20; i++) {
        cluster.requestServerRotation(`server-${i}`);
        expect(summary(await step())).toEqual(['namespace:serverLeaf']);
        cluster.requestRotation('client', `client-${i}`);
        expect(summary(await step())).toEqual(['client:clientLeaf']);
      }

      const caSerials = [provider.watcher.current!.caCertificates[0]!.serialNumber];
      for (let r = 0; r < 2; r++) {
        cluster.requestRotation('ca', `ca-${r}`);
        expect(summary(await step())).toEqual(['ca:ca(prepare)', 'client:bundle', 'namespace:bundle']);
        expect(provider.watcher.current!.caCertificates).toHaveLength(2);
        expect(clientWatcher.current!.caCertificates).toHaveLength(2);

        cluster.advance(cluster.policy.propagationDelay + 1000);
        expect(summary(await step())).toEqual(['ca:ca(activate)', 'client:clientLeaf', 'namespace:serverLeaf']);

        cluster.advance(cluster.policy.propagationDelay + cluster.policy.maxConnectionAge + 1000);
        expect(summary(await step())).toEqual(['ca:ca(retire)', 'client:bundle', 'namespace:bundle']);
        const [only, ...rest] = provider.watcher.current!.caCertificates;
        expect(rest).toHaveLength(0);
        expect(clientWatcher.current!.caBundle).toBe(provider.watcher.current!.caBundle);
        caSerials.push(only!.serialNumber);
      }
      expect(new Set(caSerials).size).toBe(3);
      // Nothing else is due: the planner is at rest.
      expect(await cluster.reconcile()).toEqual([]);

      load.running = false;
      await Promise.all(load.loops);
      expect(load.failures).toEqual([]);
      expect(channels.map((c) => c.stats.transientFailures)).toEqual(new Array(CLIENTS).fill(0));
      expect([provider.watcher.stats, clientWatcher.stats]).toEqual([
        { loads: 27, reloads: 26, failures: 0 },
        { loads: 27, reloads: 26, failures: 0 },
      ]);
      // Every client certificate (initial, 20 rotations, 2 CA activations) was seen by the server.
      expect(clientSerials.size).toBe(23);
      // Each change of the client material (22 leaves, 4 bundles) replaced every client's channel, and each old one drained.
      for (const c of channels) expect(c.stats).toMatchObject({ channels: 27, drained: 26, forcedCloses: 0 });
      expect(load.ok).toBeGreaterThan(CLIENTS * 5 * 47);
    },
    TIMEOUT_MS,
  );

  it('control: without the overlap (an emergency CA rotation reaching the client first), the same harness sees calls fail', async () => {
    if (!load.running) startLoad();
    const failuresBefore = load.failures.length;
    cluster.requestRotation('ca', 'emergency');
    const writes = await cluster.reconcile({ deferFolders: true });
    expect(summary(writes)).toEqual(['ca:ca(emergency)', 'client:clientLeaf', 'namespace:serverLeaf']);
    const clientWrite = writes.find((w) => w.target === 'client')!;
    await cluster.writeFolder(clientWrite);
    await loaded(clientWatcher, clientWrite);
    // The client now trusts only the new CA while the provider still serves a leaf of the old one.
    const deadline = Date.now() + 10_000;
    while (load.failures.length < failuresBefore + CLIENTS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    const failures = load.failures.slice(failuresBefore);
    expect(failures.length).toBeGreaterThanOrEqual(CLIENTS);
    // Named, not UNAVAILABLE: the provider's certificate is from a CA the client's bundle dropped.
    expect(failures[0]).toMatch(
      /failed with FAILED_PRECONDITION after 1 attempt: TLS handshake with .* failed \((SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE)\)/,
    );
    expect(channels.some((c) => c.stats.transientFailures > 0)).toBe(true);

    const serverWrite = writes.find((w) => typeof w.target === 'object')!;
    await cluster.writeFolder(serverWrite);
    await loaded(provider.watcher, serverWrite);
    // Once both sides hold the new CA, calls flow again (after grpc-js's reconnect backoff).
    await callsAfterStep(1);
    load.running = false;
    await Promise.all(load.loops);
  }, 30_000);
});
