// ESO core's side in TypeScript (ProviderChannel) with its default keepalive, against our provider
// server through a TCP proxy on real sockets (issue 36):
// - an idle channel pings every 10 s and the server answers, on the one connection it keeps;
// - a provider that falls silent, as a pod on a powered-off node does (nothing answered, nothing
//   closed), is left once a ping goes unanswered, and the next connection reaches a live provider.
//   Without the pings (grpc-js sends none by default) every call on that connection times out,
//   one after another, until TCP gives up: a stock channel beside it shows that in the same run.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { CertificateWatcher, createSecretStoreProviderClient, PROVIDER_CHANNEL_DEFAULTS, ProviderChannel } from '@eso-mtls/grpc';
import { PlannedCluster } from '@eso-mtls/test-kit/planned-cluster';
import { startProviderOn, type ReloadingProvider } from '@eso-mtls/test-kit/reloading-provider';
import { ADDRESS, NAMESPACE, SERVICE } from './support/go-reloading.js';
import { startVanishingProxy, type VanishingProxy } from './support/vanishing-proxy.js';

/** The defaults under test: a ping after this long without one... */
const KEEPALIVE_TIME_MS = 10_000;
/** ...drops the connection when unanswered this long. */
const KEEPALIVE_TIMEOUT_MS = 10_000;
/** The most grpc-js waits before dialling again. */
const MAX_BACKOFF_MS = 5_000;
/** A hang guard for a loaded machine: the pings' own timing is grpc-js's. */
const SLACK_MS = 15_000;
/** Each call's deadline, as a caller's would be. */
const CALL_TIMEOUT_MS = 2_000;

describe("ProviderChannel's default keepalive, calling our provider through a proxy", () => {
  let root: string;
  let provider: ReloadingProvider;
  let watcher: CertificateWatcher;
  let proxy: VanishingProxy;
  const channels: ProviderChannel[] = [];

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'channel-keepalive-'));
    const dirs = { client: join(root, 'client'), server: join(root, 'server') };
    Object.values(dirs).forEach((d) => mkdirSync(d));
    await new PlannedCluster(NAMESPACE, SERVICE, dirs).reconcile();
    provider = await startProviderOn(dirs.server, {
      implementation: {
        getSecret: () => ({ value: Buffer.from('v') }),
        getSecretMap: () => ({ secrets: {} }),
      },
    });
    watcher = new CertificateWatcher({ directory: dirs.client, purpose: 'clientAuth', pollIntervalMs: 3_600_000 });
    await watcher.start();
  }, 30_000);

  beforeEach(async () => {
    proxy = await startVanishingProxy(provider.port);
  });
  afterEach(async () => {
    await Promise.all(channels.splice(0).map((c) => c.close()));
    await proxy.close();
  });
  afterAll(async () => {
    watcher?.close();
    await provider?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  /** A channel through `via` (this test's proxy, unless told); `channelOptions` over the defaults. */
  function channel(channelOptions: grpc.ChannelOptions = {}, via: VanishingProxy = proxy): ProviderChannel {
    const c = new ProviderChannel({
      address: ADDRESS,
      connectTo: `127.0.0.1:${via.port}`,
      material: watcher,
      channelOptions: { 'grpc.use_local_subchannel_pool': 1, ...channelOptions },
    });
    channels.push(c);
    return c;
  }

  /** Calls one after another until `stop()`; counts what was served and what failed, with the codes. */
  function callLoop(c: ProviderChannel) {
    const client = createSecretStoreProviderClient(c, { retry: false, timeoutMs: CALL_TIMEOUT_MS, waitForReady: false });
    const tally = { ok: 0, failed: [] as { code: number; at: number }[], lastOkAt: 0 };
    let running = true;
    const done = (async () => {
      while (running) {
        try {
          await client.getSecret({ remoteRef: { key: 'k' } });
          tally.ok++;
          tally.lastOkAt = Date.now();
        } catch (e) {
          tally.failed.push({ code: (e as { code: number }).code, at: Date.now() });
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    return {
      tally,
      stop: async () => {
        running = false;
        await done;
      },
    };
  }

  /** Resolves once `tally` has `n` more calls served than it had, with the time the last was. */
  async function okCalls(tally: { ok: number; lastOkAt: number }, n: number, timeoutMs: number): Promise<number> {
    const target = tally.ok + n;
    const deadline = Date.now() + timeoutMs;
    while (tally.ok < target) {
      if (Date.now() > deadline) throw new Error(`${tally.ok - (target - n)} calls served, not ${n}, within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return tally.lastOkAt;
  }

  it('defaults to pings every 10 s, calls or none, dropped after 10 s unanswered, and reconnects within 5 s', () => {
    expect(PROVIDER_CHANNEL_DEFAULTS).toEqual({
      'grpc.keepalive_time_ms': KEEPALIVE_TIME_MS,
      'grpc.keepalive_timeout_ms': KEEPALIVE_TIMEOUT_MS,
      'grpc.keepalive_permit_without_calls': 1,
      'grpc.max_reconnect_backoff_ms': MAX_BACKOFF_MS,
    });
  });

  it(
    'pings while idle on its one connection; leaves the provider once it falls silent and reaches a live one, where grpc-js stock stays',
    async () => {
      const c = channel();
      const client = createSecretStoreProviderClient(c, { retry: false, timeoutMs: CALL_TIMEOUT_MS });
      await client.getSecret({ remoteRef: { key: 'k' } });
      const idleFrom = Date.now();
      // Idle for a ping and its answer, with nothing else on the wire (5 s of it for a late timer on a loaded machine).
      await new Promise((r) => setTimeout(r, KEEPALIVE_TIME_MS + 5_000));
      const [first] = proxy.connections;
      expect(proxy.connections).toHaveLength(1);
      expect(first!.fromClient.filter((t) => t > idleFrom + 1_000).length).toBeGreaterThanOrEqual(1);
      expect(first!.fromServer.filter((t) => t > idleFrom + 1_000).length).toBeGreaterThanOrEqual(1);

      // Beside it, through a proxy of its own, a channel without the pings, as grpc-js ships.
      const stockProxy = await startVanishingProxy(provider.port);
      const load = callLoop(c);
      const stock = callLoop(channel({ 'grpc.keepalive_time_ms': -1, 'grpc.keepalive_permit_without_calls': 0 }, stockProxy));
      try {
        await okCalls(load.tally, 20, SLACK_MS);
        await okCalls(stock.tally, 20, SLACK_MS);
        proxy.vanish();
        stockProxy.vanish();
        const vanishedAt = Date.now();
        const stockServed = stock.tally.ok;
        const resumedAt = await okCalls(load.tally, 20, KEEPALIVE_TIME_MS + KEEPALIVE_TIMEOUT_MS + MAX_BACKOFF_MS + SLACK_MS);
        // After the silent one: the client's diagnostic handshakes for failed calls (closed at
        // once), and the one connection the calls resumed on, still open.
        const [silent, ...later] = proxy.connections;
        expect(later.map((c) => c.silent)).not.toContain(true);
        expect(later.filter((c) => c.clientClosedAt === undefined)).toHaveLength(1);
        // The channel closed the silent connection itself, no sooner than an unanswered ping's wait.
        expect(silent!.clientClosedAt).toBeDefined();
        expect(silent!.clientClosedAt! - vanishedAt).toBeGreaterThanOrEqual(KEEPALIVE_TIMEOUT_MS - 1_000);
        expect(resumedAt - vanishedAt).toBeLessThanOrEqual(KEEPALIVE_TIME_MS + KEEPALIVE_TIMEOUT_MS + MAX_BACKOFF_MS + SLACK_MS);
        // Printed for docs/connections-and-rotation.md: how long the silence cost.
        const cost = { droppedAfterMs: silent!.clientClosedAt! - vanishedAt, resumedAfterMs: resumedAt - vanishedAt, failed: load.tally.failed.length };
        process.stdout.write(`${JSON.stringify(cost)}\n`);
        // Only the calls caught by the silence failed: timed out on it, or cut when the ping went unanswered.
        const failed = load.tally.failed;
        expect(failed.length).toBeGreaterThan(0);
        for (const f of failed) {
          expect([grpc.status.DEADLINE_EXCEEDED, grpc.status.UNAVAILABLE]).toContain(f.code);
          expect(f.at).toBeGreaterThanOrEqual(vanishedAt);
          expect(f.at).toBeLessThanOrEqual(resumedAt);
        }
        // Without the pings nothing moved on: no call served since the silence, each timed out on
        // the one silent connection (none failed as UNAVAILABLE, so none was diagnosed).
        expect(stock.tally.ok).toBe(stockServed);
        expect(stockProxy.connections).toHaveLength(1);
        const stockFailed = stock.tally.failed.filter((f) => f.at >= vanishedAt);
        expect(stockFailed.length).toBeGreaterThanOrEqual(3);
        for (const f of stockFailed) expect(f.code).toBe(grpc.status.DEADLINE_EXCEEDED);
      } finally {
        await Promise.all([load.stop(), stock.stop()]);
        await stockProxy.close();
      }
    },
    KEEPALIVE_TIME_MS + KEEPALIVE_TIMEOUT_MS + MAX_BACKOFF_MS + 4 * SLACK_MS,
  );
});
