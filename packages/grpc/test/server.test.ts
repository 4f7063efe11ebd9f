import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createSecretStoreProviderClient,
  healthServiceDefinition,
  resolveProviderServerOptions,
  startProviderServer,
  type CallContext,
  type SecretStoreProvider,
} from '@eso-mtls/grpc';
import { writeAtomically } from '@eso-mtls/test-kit/demo';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { freePort } from '@eso-mtls/test-kit/ports';
import { failureOf } from '@eso-mtls/test-kit/failure';
import { clientChannel, createTestPkiSet, startTestProvider, type RunningProvider, type TestPkiSet } from '@eso-mtls/test-kit/provider-fixture';
import { TEST_SERVER_NAME } from '@eso-mtls/test-kit/pki';

const minimal: SecretStoreProvider = { getSecret: () => ({ value: Buffer.from('v') }), getSecretMap: () => ({}) };
type HealthClient = grpc.Client &
  Record<'Check' | 'List', (r: object, cb: (e: grpc.ServiceError | null, r?: unknown) => void) => void> & {
    Watch(r: object): grpc.ClientReadableStream<{ status: string }>;
  };

let pki: TestPkiSet;
beforeAll(async () => {
  pki = await createTestPkiSet();
});

describe('options', () => {
  it('reject a grace period shorter than the longest call deadline, naming both', () => {
    expect(() => resolveProviderServerOptions({ implementation: minimal, maxConnectionAgeGraceMs: 30_000, longestCallDeadlineMs: 60_000 })).toThrow(
      'startProviderServer: maxConnectionAgeGraceMs=30000 must be at least longestCallDeadlineMs (1m)',
    );
  });

  it('reject bad ports, a missing implementation and equal ports, and default to the design', () => {
    expect(() => resolveProviderServerOptions({ implementation: minimal, port: 70000 })).toThrow('port=70000 is not a TCP port');
    expect(() => resolveProviderServerOptions({ implementation: {} as SecretStoreProvider })).toThrow('must be an object with at least a getSecret method');
    expect(() => resolveProviderServerOptions({ implementation: minimal, port: 9000, healthPort: 9000 })).toThrow('healthPort=9000 must differ');
    expect(resolveProviderServerOptions({ implementation: minimal })).toMatchObject({
      certDir: '/etc/provider/certs',
      port: 8080,
      healthPort: 8081,
      maxConnectionAgeMs: 1_200_000,
      maxConnectionAgeGraceMs: 600_000,
      requireClientIdentity: {},
      minTlsVersion: 'TLSv1.3',
    });
  });

  it('accept TLSv1.3 and TLSv1.2 as the TLS floor, and nothing lower, naming the value', () => {
    expect(resolveProviderServerOptions({ implementation: minimal, minTlsVersion: 'TLSv1.2' }).minTlsVersion).toBe('TLSv1.2');
    for (const floor of ['TLSv1.1', 'TLSv1', '1.2']) {
      expect(() => resolveProviderServerOptions({ implementation: minimal, minTlsVersion: floor as never })).toThrow(
        `startProviderServer: minTlsVersion="${floor}" is not one of TLSv1.3, TLSv1.2`,
      );
    }
  });

  it('waits for a good certificate pair, not ready meanwhile and naming the problem, then serves', async () => {
    const certDir = mkdtempSync(join(tmpdir(), 'certs-later-'));
    const healthPort = await freePort();
    const controller = new AbortController();
    const starting = startProviderServer({
      implementation: minimal,
      certDir,
      host: '127.0.0.1',
      port: 0,
      healthPort,
      metrics: { namespace: 'provider-system', service: 'late' },
      signal: controller.signal,
    });
    starting.catch(() => undefined);
    const readyz = async () => {
      const r = await fetch(`http://127.0.0.1:${healthPort}/readyz`);
      return [r.status, await r.text()] as const;
    };
    const untilReadyzSays = (fragment: string) =>
      eventually(async () => {
        const r = await readyz();
        if (!r[1].includes(fragment)) throw new Error(`/readyz does not say ${fragment} yet: ${r[1]}`);
        return r;
      });
    try {
      const [missingStatus, missing] = await untilReadyzSays('last attempt');
      expect(missingStatus).toBe(503);
      expect(missing).toContain(`not ready: waiting for a good certificate pair in ${certDir} (last attempt: `);
      expect(missing).toContain(`cannot read ${join(certDir, 'tls.crt')}`);
      // A key that does not belong to the certificate is refused and named.
      await writeAtomically(certDir, { 'ca.crt': pki.ca.cert, 'tls.crt': pki.server.cert, 'tls.key': pki.client.key });
      expect((await untilReadyzSays('is not the private key of'))[0]).toBe(503);
      await writeAtomically(certDir, { 'ca.crt': pki.ca.cert, 'tls.crt': pki.server.cert, 'tls.key': pki.server.key });
      const server = await starting;
      try {
        expect(await readyz()).toEqual([200, 'ready\n']);
        const metrics = await (await fetch(`http://127.0.0.1:${healthPort}/metrics`)).text();
        expect(metrics).toMatch(/eso_provider_certificate_hot_reload_failures_total\{namespace="provider-system",service="late"\} [1-9]/);
        expect(metrics).toMatch(/eso_provider_certificate_hot_reload_total\{namespace="provider-system",service="late"\} 0/);
        const ch = clientChannel(`127.0.0.1:${server.port}`, pki.ca.cert, pki.client);
        expect(await createSecretStoreProviderClient(ch).getSecret({})).toEqual(Buffer.from('v'));
        ch.close();
      } finally {
        await server.close();
      }
    } finally {
      controller.abort();
      rmSync(certDir, { recursive: true, force: true });
    }
  });

  it('an abort while waiting for certificates rejects and frees the health port', async () => {
    const certDir = mkdtempSync(join(tmpdir(), 'certs-never-'));
    const healthPort = await freePort();
    const controller = new AbortController();
    const starting = startProviderServer({ implementation: minimal, certDir, host: '127.0.0.1', port: 0, healthPort, signal: controller.signal });
    await eventually(() => fetch(`http://127.0.0.1:${healthPort}/healthz`));
    controller.abort();
    await expect(starting).rejects.toThrow(`startProviderServer aborted while waiting for certificates in ${certDir}`);
    await expect(fetch(`http://127.0.0.1:${healthPort}/healthz`)).rejects.toThrow();
    rmSync(certDir, { recursive: true, force: true });
  });
});

describe('a running provider server', () => {
  let provider: RunningProvider;
  let channel: grpc.Channel;
  let health: HealthClient;
  const slow: { release?: () => void; context?: CallContext } = {};

  beforeAll(async () => {
    provider = await startTestProvider(pki, {
      metrics: { namespace: 'provider-system', service: 'file-provider' },
      shutdownTimeoutMs: 5_000,
      implementation: {
        ...minimal,
        getSecretMap: (_request, context) =>
          new Promise((resolve) => {
            slow.context = context;
            slow.release = () => resolve({ secrets: { done: Buffer.from('yes') } });
          }),
      },
    });
    channel = clientChannel(provider.address, pki.ca.cert, pki.client);
    const Health = grpc.makeClientConstructor(healthServiceDefinition(), 'grpc.health.v1.Health');
    health = new Health(provider.address, grpc.credentials.createSsl(), { channelOverride: channel }) as unknown as HealthClient;
  });

  afterAll(async () => {
    await provider?.stop();
    channel?.close();
  });

  const check = (service: string) => new Promise<unknown>((resolve, reject) => health.Check({ service }, (e, r) => (e ? reject(e) : resolve(r))));

  it('serves grpc.health.v1 Check and List over mTLS', async () => {
    expect(await check('')).toEqual({ status: 'SERVING' });
    expect(await check('provider.v1.SecretStoreProvider')).toEqual({ status: 'SERVING' });
    expect(await failureOf<grpc.ServiceError>(check('no.such.Service'))).toMatchObject({ code: grpc.status.NOT_FOUND });
    const list = await new Promise<unknown>((resolve, reject) => health.List({}, (e, r) => (e ? reject(e) : resolve(r))));
    expect(list).toEqual({ statuses: { '': { status: 'SERVING' }, 'provider.v1.SecretStoreProvider': { status: 'SERVING' } } });
  });

  it('Watch streams status changes', async () => {
    const stream = health.Watch({ service: 'provider.v1.SecretStoreProvider' });
    const statuses: string[] = [];
    stream.on('error', () => undefined); // the CANCELLED that our own cancel() causes
    await new Promise<void>((resolve) => {
      stream.on('data', (m: { status: string }) => {
        statuses.push(m.status);
        if (statuses.length === 1) provider.server.health.set('provider.v1.SecretStoreProvider', 'NOT_SERVING');
        if (statuses.length === 2) provider.server.health.set('provider.v1.SecretStoreProvider', 'SERVING');
        if (statuses.length === 3) resolve();
      });
    });
    stream.cancel();
    expect(statuses).toEqual(['SERVING', 'NOT_SERVING', 'SERVING']);
  });

  it('answers /healthz, /readyz and /metrics on the plain-HTTP health port', async () => {
    const base = `http://127.0.0.1:${provider.server.healthPort}`;
    expect([(await fetch(`${base}/healthz`)).status, (await fetch(`${base}/readyz`)).status]).toEqual([200, 200]);
    expect((await fetch(`${base}/elsewhere`)).status).toBe(404);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    const labels = '{namespace="provider-system",service="file-provider"}';
    expect(metrics).toContain(`eso_provider_certificate_hot_reload_total${labels} 0`);
    expect(metrics).toContain(`eso_provider_certificate_hot_reload_failures_total${labels} 0`);
    const servedLabels = '{namespace="provider-system",service="file-provider",source="secret"}';
    const expiry = Number(new RegExp(`eso_provider_served_certificate_expiry_seconds${servedLabels} (\\S+)`).exec(metrics)?.[1]);
    const served = new X509Certificate(pki.server.cert);
    const notAfter = Date.parse(served.validTo);
    expect(Math.abs(expiry - (notAfter - Date.now()) / 1000)).toBeLessThan(60);
    // The served certificate's whole validity, from the same pair: exact.
    expect(metrics).toContain(`eso_provider_served_certificate_lifetime_seconds${servedLabels} ${(notAfter - Date.parse(served.validFrom)) / 1000}\n`);
  });

  it('refuses a plaintext client: there is no TLS-off mode', async () => {
    const plain = new grpc.Channel(provider.address, grpc.credentials.createInsecure(), {});
    try {
      const error = await failureOf(createSecretStoreProviderClient(plain, { retry: false, timeoutMs: 3000 }).getSecret({}));
      expect(error.code).toBe(grpc.status.UNAVAILABLE);
    } finally {
      plain.close();
    }
  });

  it("a cancelled call aborts the provider's signal", async () => {
    const call = createSecretStoreProviderClient(channel, { retry: false })
      .raw()
      .GetSecretMap({}, new grpc.Metadata(), {}, () => undefined);
    while (slow.context === undefined) await new Promise((r) => setTimeout(r, 5));
    const aborted = new Promise((resolve) => slow.context!.signal.addEventListener('abort', () => resolve(slow.context!.signal.reason)));
    call.cancel();
    expect(String(await aborted)).toContain('GetSecretMap cancelled by the client');
    slow.context = undefined;
  });

  it('close() is graceful: NOT_SERVING and not ready at once, the call in flight still completes', async () => {
    const inFlight = createSecretStoreProviderClient(channel, { retry: false }).getSecretMap({});
    while (slow.context === undefined) await new Promise((r) => setTimeout(r, 5));
    const closed = provider.server.close();
    expect(provider.server.health.get('')).toBe('NOT_SERVING');
    const ready = await fetch(`http://127.0.0.1:${provider.server.healthPort}/readyz`);
    expect([ready.status, await ready.text()]).toEqual([503, 'not ready: shutting down\n']);
    slow.release!();
    expect(await inFlight).toEqual({ done: Buffer.from('yes') });
    await closed;
  });
});

describe('connection lifetime and forced shutdown', () => {
  it('closes connections at maxConnectionAgeMs, so clients reconnect (new peer port)', async () => {
    const peers: string[] = [];
    const p = await startTestProvider(pki, {
      // Long enough that the first two calls share a connection on a loaded machine too.
      maxConnectionAgeMs: 3000,
      maxConnectionAgeGraceMs: 1000,
      longestCallDeadlineMs: 1000,
      implementation: { ...minimal, getSecret: (_r, context) => (peers.push(context.peer), { value: Buffer.from('v') }) },
    });
    const ch = clientChannel(p.address, pki.ca.cert, pki.client);
    try {
      const client = createSecretStoreProviderClient(ch, { waitForReady: true });
      await client.getSecret({});
      await client.getSecret({});
      await new Promise((r) => setTimeout(r, 3600)); // past the age, +10% jitter
      await client.getSecret({});
      expect(peers[0]).toBe(peers[1]);
      expect(peers[2]).not.toBe(peers[0]);
    } finally {
      ch.close();
      await p.stop();
    }
  });

  it('after shutdownTimeoutMs, close() cancels calls that are still running', async () => {
    let signal: AbortSignal | undefined;
    const p = await startTestProvider(pki, {
      shutdownTimeoutMs: 200,
      implementation: { ...minimal, getSecret: (_r, context) => ((signal = context.signal), new Promise(() => undefined)) },
    });
    const ch = clientChannel(p.address, pki.ca.cert, pki.client);
    try {
      const hung = failureOf(createSecretStoreProviderClient(ch, { retry: false }).getSecret({}));
      while (signal === undefined) await new Promise((r) => setTimeout(r, 5));
      await p.stop();
      expect((await hung).code).toBe(grpc.status.CANCELLED);
      expect(signal.aborted).toBe(true);
    } finally {
      ch.close();
    }
  });
});

it('the test server name matches the certificate, so verification is real', () => {
  expect(new X509Certificate(pki.server.cert).checkHost(TEST_SERVER_NAME)).toBe(TEST_SERVER_NAME);
});
