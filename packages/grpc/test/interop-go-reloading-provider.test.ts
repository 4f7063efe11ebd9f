// The Go provider of docs/provider-developers.md (testing/go-interop/cmd/reloading-provider),
// serving a folder written the kubelet's way (`..data` swaps) while our ESO-side client calls it
// over mTLS: the core's planner rotates the server and client leaves and the CA (with overlap),
// then corrupted versions are written. Every new certificate must be served, checked by the
// serial a new handshake sees, every bad version refused once, and no call may fail.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueCa, issueServerLeaf, type SecretWrite } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import * as grpc from '@grpc/grpc-js';
import { CertificateWatcher, createSecretStoreProviderClient, healthServiceDefinition, ProviderChannel } from '@eso-mtls/grpc';
import { writeAtomically } from '@eso-mtls/test-kit/demo';
import { spawnGoProgram, type GoProgram } from './support/go-interop.js';
import { ADDRESS, countCas, GoEvents, leafSerial, Load, NAMESPACE, serial, SERVER_NAME, SERVICE, TEST_TIMEOUT, useGoCommand } from './support/go-reloading.js';
import { issueTestCa, issueTestServer, TEST_POLICY } from '@eso-mtls/test-kit/pki';
import { loaded, PlannedCluster } from '@eso-mtls/test-kit/planned-cluster';
import { clientChannel, createTestPkiSet } from '@eso-mtls/test-kit/provider-fixture';
import { probe } from '@eso-mtls/test-kit/tls-probe';

const reloadingProvider = useGoCommand('reloading-provider');

describe('a Go provider (cmd/reloading-provider) reloading its mounted Secret, called by our ESO-side client', () => {
  let root: string;
  let dirs: { client: string; server: string };
  let cluster: PlannedCluster;
  let goProvider: GoProgram;
  let events: GoEvents;
  let port: number;
  let clientWatcher: CertificateWatcher;
  let channels: ProviderChannel[];
  let load: Load;

  /** The serial of the certificate the Go provider presents to a new handshake now. */
  async function servedSerial(): Promise<bigint> {
    const m = clientWatcher.current!;
    const outcome = await probe(port, { ca: m.caBundle, cert: m.certificate, key: m.privateKey, servername: SERVER_NAME });
    if (!outcome.accepted || outcome.serverSerial === undefined) throw new Error(`probe refused: ${JSON.stringify(outcome)}`);
    return serial(outcome.serverSerial);
  }

  /** One reconcile; waits until the Go provider and our client hold what it wrote, then for calls. */
  async function step(): Promise<SecretWrite[]> {
    const writes = await cluster.reconcile();
    for (const w of writes) {
      if (w.target === 'client') await loaded(clientWatcher, w);
      if (typeof w.target === 'object') {
        const e = await events.take();
        expect(e).toMatchObject({ event: 'reloaded', cas: countCas(w) });
        expect(serial(e.serial!)).toBe(leafSerial(w));
        expect(await servedSerial()).toBe(leafSerial(w));
      }
    }
    await load.callsAfterStep();
    return writes;
  }

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'go-reloading-provider-'));
    dirs = { client: join(root, 'client'), server: join(root, 'server') };
    Object.values(dirs).forEach((d) => mkdirSync(d));
    cluster = new PlannedCluster(NAMESPACE, SERVICE, dirs);
    await cluster.reconcile();
    goProvider = spawnGoProgram(reloadingProvider(), ['-addr', '127.0.0.1:0', '-health-addr', '127.0.0.1:0', '-cert-dir', dirs.server, '-poll', '200ms']);
    events = new GoEvents(goProvider);
    const { line } = await goProvider.nextLine((l) => l.startsWith('LISTENING '), 0);
    port = Number(line.split(':').pop());
    expect(await events.take()).toMatchObject({ event: 'loaded', cas: 1 });
    clientWatcher = new CertificateWatcher({ directory: dirs.client, purpose: 'clientAuth' });
    await clientWatcher.start();
    channels = [0, 1].map(
      () =>
        new ProviderChannel({
          address: ADDRESS,
          connectTo: `127.0.0.1:${port}`,
          material: clientWatcher,
          channelOptions: { 'grpc.use_local_subchannel_pool': 1 },
        }),
    );
    load = new Load(
      channels.map((c) => createSecretStoreProviderClient(c, { retry: false, waitForReady: false })),
      'db/password',
    );
  }, 30_000);

  afterAll(async () => {
    await load?.stop();
    await Promise.all(channels?.map((c) => c.close()) ?? []);
    clientWatcher?.close();
    await goProvider?.terminate();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it(
    'leaf, client and overlap CA rotations: every new certificate is served, 0 failed calls',
    async () => {
      await load.callsAfterStep();
      for (let i = 0; i < 5; i++) {
        cluster.requestServerRotation(`server-${i}`);
        await step();
        // The Go provider verifies a new client certificate against its current bundle.
        cluster.requestRotation('client', `client-${i}`);
        await step();
      }
      cluster.requestRotation('ca', 'ca-0');
      await step(); // prepare: the next CA joins both bundles
      cluster.advance(cluster.policy.propagationDelay + 1000);
      await step(); // activate: both leaves re-issued by the new CA
      cluster.advance(cluster.policy.propagationDelay + cluster.policy.maxConnectionAge + 1000);
      await step(); // retire: the old CA leaves the bundles
      expect(await cluster.reconcile()).toEqual([]);

      await load.stop();
      expect(load.failures).toEqual([]);
      expect(channels.map((c) => c.stats.transientFailures)).toEqual([0, 0]);
      const kinds = events.all().map((e) => e.event);
      expect(kinds.filter((k) => k === 'reloaded')).toHaveLength(5 + 3);
      expect(kinds).not.toContain('refused');
    },
    TEST_TIMEOUT,
  );

  it(
    'a corrupted or unusable version is refused once, the last good certificate keeps serving, and the next good one is taken',
    async () => {
      await load.stop(); // the previous test's, or beforeAll's when it was filtered out
      load = new Load(
        channels.map((c) => createSecretStoreProviderClient(c, { retry: false, waitForReady: false })),
        'db/password',
      );
      const good = clientWatcher.current!; // the same CA bundle the provider holds
      const served = await servedSerial();
      const crypto = createNodeCryptoBackend();
      const otherCa = await issueTestCa();
      const other = await issueTestServer(otherCa, [SERVER_NAME]);
      // A leaf whose 90 days ended ten days ago, from a CA issued before it.
      const past = Date.now() - 100 * 86_400_000;
      const oldCa = await issueCa({ crypto, policy: TEST_POLICY, now: past - 86_400_000 });
      const expired = await issueServerLeaf({ crypto, policy: TEST_POLICY, now: past }, oldCa, [SERVER_NAME]);
      const current = readServerFolder(dirs.server);

      const cases: [reason: string, files: Record<string, string>][] = [
        ['key_mismatch', { ...current, 'tls.key': other.key }],
        ['garbage_pem', { ...current, 'tls.crt': 'not a certificate\n' }],
        ['untrusted', { ...current, 'tls.crt': other.cert, 'tls.key': other.key }],
        ['expired', { ...current, 'tls.crt': expired.certificate.pem, 'tls.key': expired.privateKeyPem }],
        // ESO's client certificate (same CA, EKU clientAuth only) in the provider's place.
        ['wrong_purpose', { ...current, 'tls.crt': good.certificate, 'tls.key': good.privateKey }],
        ['not_a_ca', { ...current, 'ca.crt': current['tls.crt'] }],
        ['missing_key', { ...current, 'tls.key': '' }],
        ['too_large', { ...current, 'ca.crt': `${current['ca.crt']}${'#'.repeat(3 << 20)}` }],
        ['missing_ca_bundle', { ...current, 'ca.crt': '\n' }],
        // The Secret lost a key: the kubelet removes its file and its top-level symlink.
        ['not_found', { 'tls.crt': current['tls.crt'], 'ca.crt': current['ca.crt'] }],
      ];
      for (const [reason, files] of cases) {
        await writeAtomically(dirs.server, files);
        const refused = await events.take();
        expect(refused).toMatchObject({ event: 'refused', reason });
        expect(serial(refused.serial!)).toBe(served);
        expect(await servedSerial()).toBe(served);
        await load.callsAfterStep();
        // The same bad bytes again (a new ..data swap, and the 200 ms poll meanwhile) are not a new refusal:
        // the next event is the next case's, or the repair's.
        await writeAtomically(dirs.server, files);
      }

      cluster.requestServerRotation('repair');
      const [repair] = await cluster.reconcile();
      const e = await events.take();
      expect(e.event).toBe('reloaded');
      expect(serial(e.serial!)).toBe(leafSerial(repair!));
      expect(await servedSerial()).toBe(leafSerial(repair!));
      await load.callsAfterStep();

      await load.stop();
      expect(load.failures).toEqual([]);
      expect(good.caBundle).toBe(current['ca.crt']);
      expect(events.all().filter((x) => x.event === 'refused')).toHaveLength(cases.length);
    },
    TEST_TIMEOUT,
  );
});

describe('a Go provider started before its Secret is issued, as in a pod', () => {
  it('answers /readyz 503 naming the folder, then serves provider.v1 and grpc.health.v1 once a good pair is mounted, until SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'go-provider-unissued-'));
    // A container's stdin is closed from the start: the program serves on, until SIGTERM.
    const program = spawnGoProgram(reloadingProvider(), ['-addr', '127.0.0.1:0', '-health-addr', '127.0.0.1:0', '-cert-dir', dir, '-poll', '100ms'], {
      stdin: 'closed',
    });
    let stopped: number | null | undefined;
    let channel: grpc.Channel | undefined;
    try {
      const health = (await program.nextLine((l) => l.startsWith('HEALTH '), 0)).line.slice('HEALTH '.length);
      const waiting = await fetch(`http://${health}/readyz`);
      expect([waiting.status, await waiting.text()]).toEqual([503, `waiting for a good certificate in ${dir}\n`]);
      expect((await fetch(`http://${health}/healthz`)).status).toBe(200);

      const pki = await createTestPkiSet();
      await writeAtomically(dir, { 'ca.crt': pki.ca.cert, 'tls.crt': pki.server.cert, 'tls.key': pki.server.key });
      const address = (await program.nextLine((l) => l.startsWith('LISTENING '), 0)).line.slice('LISTENING '.length);
      expect((await fetch(`http://${health}/readyz`)).status).toBe(200);
      channel = clientChannel(address, pki.ca.cert, pki.client);
      expect(await createSecretStoreProviderClient(channel, { retry: false }).getSecret({ remoteRef: { key: 'db/password' } })).toEqual(Buffer.from('hunter2'));
      const Health = grpc.makeClientConstructor(healthServiceDefinition(), 'grpc.health.v1.Health');
      const client = new Health(address, grpc.credentials.createInsecure(), { channelOverride: channel }) as unknown as {
        Check(r: object, cb: (e: grpc.ServiceError | null, r?: unknown) => void): void;
      };
      const reply = await new Promise((resolve, reject) =>
        client.Check({ service: 'provider.v1.SecretStoreProvider' }, (e, r) => (e ? reject(e) : resolve(r))),
      );
      expect(reply).toEqual({ status: 'SERVING' });
      // A certificate from the CA without clientAuth (the provider's own) is refused at the handshake.
      const wrong = await probe(Number(address.split(':').pop()), { ca: pki.ca.cert, cert: pki.server.cert, key: pki.server.key, servername: SERVER_NAME });
      expect(wrong.accepted).toBe(false);
      // TLS 1.3 only (ServerTLSConfig's MinVersion): a client capped at TLS 1.2 gets alert protocol_version.
      const tls12 = await probe(Number(address.split(':').pop()), {
        ca: pki.ca.cert,
        cert: pki.client.cert,
        key: pki.client.key,
        servername: SERVER_NAME,
        maxVersion: 'TLSv1.2',
      });
      expect([tls12.accepted, tls12.errorCode]).toEqual([false, 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION']);
      channel.close();
      stopped = await program.terminate();
    } finally {
      channel?.close();
      await program.terminate();
      rmSync(dir, { recursive: true, force: true });
    }
    expect(stopped).toBe(0);
  }, 30_000);
});

/** The three files of the server folder as served now. */
function readServerFolder(dir: string): Record<'tls.crt' | 'tls.key' | 'ca.crt', string> {
  const read = (name: string) => readFileSync(join(dir, name), 'utf8');
  return { 'tls.crt': read('tls.crt'), 'tls.key': read('tls.key'), 'ca.crt': read('ca.crt') };
}
