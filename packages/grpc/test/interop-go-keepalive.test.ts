// ESO core's side in Go (testing/go-interop/cmd/reloading-client) with the keepalive that
// docs/connections-and-rotation.md asks of it, against our provider server through a TCP proxy
// on real sockets:
// - our server answers the client's pings (every 10 s after 10 s without a read, calls or none)
//   and keeps the connection: a grpc-go server with its default policy would close it with
//   GOAWAY too_many_pings at the third, and the Go provider of docs/provider-developers.md, which
//   permits them, keeps it too (without its policy this test sees the second connection);
// - a provider that falls silent, as a pod on a powered-off node does (nothing answered, nothing
//   closed), is left by the client once a ping goes unanswered, and its next connection reaches a
//   live provider. Without the pings every call on that connection timed out, one after another,
//   until TCP gave up (the node-loss suite of issue 36).
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnGoProgram, type GoProgram } from './support/go-interop.js';
import { ADDRESS, NAMESPACE, SERVICE, useGoCommand } from './support/go-reloading.js';
import { startVanishingProxy, type VanishingProxy } from './support/vanishing-proxy.js';
import { PlannedCluster } from '@eso-mtls/test-kit/planned-cluster';
import { startProviderOn, type ReloadingProvider } from '@eso-mtls/test-kit/reloading-provider';

/** The client's keepalive (cmd/reloading-client): a ping after this long without a read... */
const KEEPALIVE_TIME_MS = 10_000;
/** ...closes the connection when unanswered this long. */
const KEEPALIVE_TIMEOUT_MS = 10_000;
/** A hang guard for a loaded machine: the pings' own timing is grpc-go's. */
const SLACK_MS = 15_000;

const reloadingClient = useGoCommand('reloading-client');
const reloadingProvider = useGoCommand('reloading-provider');

describe('ESO core in Go with keepalive, calling our provider through a proxy', () => {
  let root: string;
  let dirs: { client: string; server: string };
  let provider: ReloadingProvider;
  let proxy: VanishingProxy;
  let calls = 0;
  const clients: GoProgram[] = [];

  /** The Go client calling through a proxy (this test's, unless told), a pause of `interval` after each call. */
  async function goClient(interval: string, via: VanishingProxy = proxy): Promise<GoProgram> {
    const client = spawnGoProgram(reloadingClient(), [
      '-addr',
      ADDRESS,
      '-connect-to',
      `127.0.0.1:${via.port}`,
      '-cert-dir',
      dirs.client,
      '-interval',
      interval,
    ]);
    clients.push(client);
    await client.nextLine((l) => l === 'READY', 0);
    return client;
  }

  /** Resolves once the provider has served `n` calls in all, with the time it saw the last. */
  async function servedCalls(n: number, timeoutMs: number): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    while (calls < n) {
      if (Date.now() > deadline) throw new Error(`the provider served ${calls} calls, not ${n}, within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return Date.now();
  }

  const summaryOf = (client: GoProgram) =>
    JSON.parse(client.lines.find((l) => l.includes('"summary"'))!) as { calls: number; failed: number; failures: string[] };
  const failuresOf = (client: GoProgram) => client.lines.filter((l) => l.includes('"call_failed"')).map((l) => (JSON.parse(l) as { error: string }).error);

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'go-keepalive-'));
    dirs = { client: join(root, 'client'), server: join(root, 'server') };
    Object.values(dirs).forEach((d) => mkdirSync(d));
    await new PlannedCluster(NAMESPACE, SERVICE, dirs).reconcile();
    provider = await startProviderOn(dirs.server, {
      implementation: {
        getSecret() {
          calls++;
          return { value: Buffer.from('v') };
        },
        getSecretMap: () => ({ secrets: {} }),
      },
    });
  }, 30_000);

  beforeEach(async () => {
    proxy = await startVanishingProxy(provider.port);
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.stop()));
    await proxy.close();
  });
  afterAll(async () => {
    await provider?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it(
    'answers the pings of an idle client and keeps its one connection; so does a Go provider serving as provider-developers.md shows (no GOAWAY too_many_pings), side by side',
    async () => {
      const goProvider = spawnGoProgram(reloadingProvider(), [
        '-addr',
        '127.0.0.1:0',
        '-health-addr',
        '127.0.0.1:0',
        '-cert-dir',
        dirs.server,
        '-poll',
        '200ms',
      ]);
      let toGo: VanishingProxy | undefined;
      try {
        const { line } = await goProvider.nextLine((l) => l.startsWith('LISTENING '), 0, SLACK_MS);
        toGo = await startVanishingProxy(Number(line.split(':').pop()));
        const start = calls;
        // Both clients idle long enough for three pings between two calls: grpc-go's default policy closes at the third.
        const idleInterval = `${3 * KEEPALIVE_TIME_MS + 2000}ms`;
        const [ours, theirs] = await Promise.all([goClient(idleInterval), goClient(idleInterval, toGo)]);
        const first = await servedCalls(start + 1, SLACK_MS);
        await theirs.nextLine((l) => l.includes('"server_certificate"'), 0, SLACK_MS);
        const theirFirst = Date.now();
        const second = await servedCalls(start + 2, 3 * KEEPALIVE_TIME_MS + 2000 + SLACK_MS);
        expect(await ours.stop()).toBe(0);
        expect(summaryOf(ours)).toMatchObject({ failed: 0 });
        expect(proxy.connections).toHaveLength(1);
        const idle = (times: readonly number[]) => times.filter((t) => t > first + 1000 && t < second - 1000).length;
        const [only] = proxy.connections;
        // Each ping went out alone between the calls, and each was answered.
        expect(idle(only!.fromClient)).toBeGreaterThanOrEqual(3);
        expect(idle(only!.fromServer)).toBeGreaterThanOrEqual(3);

        // The Go provider's client had its second call due as long after its first; it counts its calls.
        await new Promise((r) => setTimeout(r, Math.max(0, theirFirst + 3 * KEEPALIVE_TIME_MS + 2000 + SLACK_MS - Date.now())));
        expect(await theirs.stop()).toBe(0);
        expect(summaryOf(theirs)).toMatchObject({ failed: 0, calls: expect.any(Number) });
        expect(summaryOf(theirs).calls).toBeGreaterThanOrEqual(2);
        // One connection the whole time: the provider never sent GOAWAY, and the client never had to reconnect.
        expect(toGo.connections).toHaveLength(1);
      } finally {
        await toGo?.close();
        await goProvider.terminate(); // SIGTERM, as the kubelet stops it: it reads no stdin
      }
    },
    3 * KEEPALIVE_TIME_MS + 4 * SLACK_MS + 10_000,
  );

  it(
    'leaves a provider that fell silent once a ping goes unanswered; the next connection reaches a live one',
    async () => {
      const client = await goClient('50ms');
      await servedCalls(calls + 20, SLACK_MS);
      proxy.vanish();
      const vanishedAt = Date.now();
      const before = calls;
      const resumedAt = await servedCalls(before + 20, KEEPALIVE_TIME_MS + KEEPALIVE_TIMEOUT_MS + SLACK_MS);
      const [silent, next] = proxy.connections;
      expect(proxy.connections).toHaveLength(2);
      // The client closed the silent one itself, no sooner than a ping's wait after the silence began.
      expect(silent!.clientClosedAt).toBeDefined();
      expect(silent!.clientClosedAt! - vanishedAt).toBeGreaterThanOrEqual(KEEPALIVE_TIME_MS - 1000);
      expect(next!.silent).toBe(false);
      expect(resumedAt - vanishedAt).toBeLessThanOrEqual(KEEPALIVE_TIME_MS + KEEPALIVE_TIMEOUT_MS + SLACK_MS);
      expect(await client.stop()).toBe(0);
      // Only the calls caught by the silence failed: timed out, or cut when the ping went unanswered.
      const failures = failuresOf(client);
      expect(failures.length).toBeGreaterThan(0);
      for (const f of failures) expect(f).toMatch(/DeadlineExceeded|keepalive ping failed to receive ACK within timeout/);
    },
    KEEPALIVE_TIME_MS + KEEPALIVE_TIMEOUT_MS + 3 * SLACK_MS,
  );
});
