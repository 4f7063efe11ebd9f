// ESO core's side of docs/eso-integration.md in Go (testing/go-interop/cmd/reloading-client):
// one grpc.ClientConn calling our provider server while the core's planner rotates the client
// and server leaves and the CA (with overlap), the provider closing every connection after
// 300 ms (GOAWAY). No call may fail, each new client certificate must reach the provider, and
// the Go client must report the first call on each new server certificate (its delivery time).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { SecretWrite } from '@eso-mtls/core';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:tls';
import { spawnGoProgram, type GoProgram } from './support/go-interop.js';
import { ADDRESS, countCas, GoEvents, leafSerial, NAMESPACE, serial, SERVER_NAME, SERVICE, TEST_TIMEOUT, useGoCommand } from './support/go-reloading.js';
import { loaded, PlannedCluster } from '@eso-mtls/test-kit/planned-cluster';
import { startProviderOn, type ReloadingProvider } from '@eso-mtls/test-kit/reloading-provider';

const reloadingClient = useGoCommand('reloading-client');

describe('ESO core in Go (cmd/reloading-client) reloading its client Secret, calling our provider', () => {
  let root: string;
  let dirs: { client: string; server: string };
  let cluster: PlannedCluster;
  const clientSerials = new Set<bigint>();
  /** The server leaves the planner wrote, in order, each once. */
  const serverSerials: bigint[] = [];
  let calls = 0;
  let provider: ReloadingProvider;
  let goClient: GoProgram;
  let events: GoEvents;

  /** Waits until our provider has served `n` more calls. */
  async function callsAfterStep(n = 20): Promise<void> {
    const target = calls + n;
    const deadline = Date.now() + 20_000;
    while (calls < target) {
      if (Date.now() > deadline) throw new Error(`the Go client's calls stalled at ${calls} of ${target}: ${goClient.lines.slice(-3).join(' | ')}`);
      await new Promise((r) => setTimeout(r, 2));
    }
  }

  /** Notes a server leaf the planner wrote, unless it is one already written (a bundle-only write). */
  function noteServerLeaf(w: SecretWrite): void {
    if (typeof w.target === 'object' && !serverSerials.includes(leafSerial(w))) serverSerials.push(leafSerial(w));
  }

  /**
   * One reconcile; waits until both sides hold what it wrote, for our provider to see the Go
   * client's current certificate, and for the Go client to report a call on a new server certificate.
   */
  async function step(): Promise<void> {
    const writes = await cluster.reconcile();
    for (const w of writes) {
      if (typeof w.target === 'object') {
        await loaded(provider.watcher, w);
        noteServerLeaf(w);
        const deadline = Date.now() + 20_000;
        while (!events.serverCertificates().includes(leafSerial(w))) {
          if (Date.now() > deadline) throw new Error(`the Go client never reported a call on server certificate ${leafSerial(w).toString(16)}`);
          await new Promise((r) => setTimeout(r, 5));
        }
      }
      if (w.target === 'client') {
        const e = await events.take();
        expect(e).toMatchObject({ event: 'reloaded', cas: countCas(w) });
        expect(serial(e.serial!)).toBe(leafSerial(w));
        // Presented from the next connection on: the provider's 300 ms maximum age brings one.
        const deadline = Date.now() + 20_000;
        while (!clientSerials.has(leafSerial(w))) {
          if (Date.now() > deadline) throw new Error(`our provider never saw client certificate ${leafSerial(w).toString(16)}`);
          await new Promise((r) => setTimeout(r, 5));
        }
      }
    }
    await callsAfterStep();
  }

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'go-reloading-client-'));
    dirs = { client: join(root, 'client'), server: join(root, 'server') };
    Object.values(dirs).forEach((d) => mkdirSync(d));
    cluster = new PlannedCluster(NAMESPACE, SERVICE, dirs);
    (await cluster.reconcile()).forEach(noteServerLeaf);
    provider = await startProviderOn(dirs.server, {
      implementation: {
        getSecret(_request, context) {
          calls++;
          clientSerials.add(serial(context.client.serialNumber));
          return { value: Buffer.from('v') };
        },
        getSecretMap: () => ({ secrets: {} }),
      },
      // Short connection age, so the Go client reconnects (GOAWAY) many times during the test.
      maxConnectionAgeMs: 300,
      maxConnectionAgeGraceMs: 5000,
      longestCallDeadlineMs: 5000,
    });
    goClient = spawnGoProgram(reloadingClient(), ['-addr', ADDRESS, '-connect-to', `127.0.0.1:${provider.port}`, '-cert-dir', dirs.client, '-poll', '200ms']);
    events = new GoEvents(goClient);
    await goClient.nextLine((l) => l === 'READY', 0);
    expect(await events.take()).toMatchObject({ event: 'loaded', cas: 1 });
  }, 30_000);

  afterAll(async () => {
    await goClient?.stop();
    await provider?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it(
    'leaf, server and overlap CA rotations through GOAWAYs: 0 failed calls, every client certificate presented',
    async () => {
      await callsAfterStep();
      for (let i = 0; i < 3; i++) {
        cluster.requestRotation('client', `client-${i}`);
        await step();
        // The Go client verifies the new server certificate against its current bundle and the host of -addr.
        cluster.requestServerRotation(`server-${i}`);
        await step();
      }
      cluster.requestRotation('ca', 'ca-0');
      await step();
      cluster.advance(cluster.policy.propagationDelay + 1000);
      await step();
      cluster.advance(cluster.policy.propagationDelay + cluster.policy.maxConnectionAge + 1000);
      await step();
      expect(await cluster.reconcile()).toEqual([]);

      expect(await goClient.stop()).toBe(0);
      const summary = JSON.parse(goClient.lines.find((l) => l.includes('"summary"'))!) as { calls: number; failed: number; failures: string[] };
      expect(summary).toMatchObject({ failed: 0, failures: [] });
      expect(summary.calls).toBeGreaterThanOrEqual(calls);
      // Initial, 3 rotations, the CA activation.
      expect(clientSerials.size).toBe(5);
      // Likewise the server's: each reported once, at the first call on it, in the order written.
      expect(serverSerials).toHaveLength(5);
      expect(events.serverCertificates()).toEqual(serverSerials);
      expect(events.all().filter((e) => e.event === 'refused')).toEqual([]);
    },
    TEST_TIMEOUT,
  );

  it('refuses a provider whose certificate lacks the name of -addr, and an -addr naming an IP', async () => {
    const args = (addr: string) => ['-addr', addr, '-connect-to', `127.0.0.1:${provider.port}`, '-cert-dir', dirs.client];
    const other = spawnGoProgram(reloadingClient(), args(`other-provider.${NAMESPACE}.svc:8080`));
    try {
      await other.nextLine((l) => l === 'READY', 0);
      await other.nextLine((l) => l.includes('"call_failed"'), 0);
    } finally {
      expect(await other.stop()).toBe(0);
    }
    const summary = JSON.parse(other.lines.find((l) => l.includes('"summary"'))!) as { calls: number; failed: number; failures: string[] };
    expect(summary.failed).toBe(summary.calls);
    expect(summary.failures[0]).toContain(`x509: certificate is valid for ${SERVICE}, ${SERVICE}.${NAMESPACE}, ${SERVER_NAME}`);
    expect(summary.failures[0]).toContain(`not other-provider.${NAMESPACE}.svc`);

    const ip = spawnGoProgram(reloadingClient(), args(`127.0.0.1:${provider.port}`));
    try {
      await expect(ip.nextLine((l) => l === 'READY', 0)).rejects.toThrow(`provider address "127.0.0.1:${provider.port}" names an IP`);
    } finally {
      expect(await ip.stop()).toBe(1);
    }
  });

  it('refuses a provider that offers only TLS 1.2: ClientTLSConfig asks for TLS 1.3', async () => {
    const m = provider.watcher.current!;
    const tls12Only = createServer({ cert: m.certificate, key: m.privateKey, maxVersion: 'TLSv1.2', ALPNProtocols: ['h2'] });
    await new Promise<void>((resolve) => tls12Only.listen(0, '127.0.0.1', resolve));
    const port = (tls12Only.address() as AddressInfo).port;
    const client = spawnGoProgram(reloadingClient(), ['-addr', ADDRESS, '-connect-to', `127.0.0.1:${port}`, '-cert-dir', dirs.client]);
    try {
      await client.nextLine((l) => l === 'READY', 0);
      await client.nextLine((l) => l.includes('"call_failed"'), 0);
    } finally {
      expect(await client.stop()).toBe(0);
      tls12Only.close();
    }
    const summary = JSON.parse(client.lines.find((l) => l.includes('"summary"'))!) as { calls: number; failed: number; failures: string[] };
    expect(summary.failed).toBe(summary.calls);
    expect(summary.failures[0]).toContain('tls: protocol version not supported');
  });
});
