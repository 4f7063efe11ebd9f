import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createServer } from 'node:tls';
import { createSecretStoreProviderClient, healthServiceDefinition, SecretNotFoundError } from '@eso-mtls/grpc';
import { failureOf } from '@eso-mtls/test-kit/failure';
import { buildGoInterop, runProgram, startGoServer } from './support/go-interop.js';
import { memoryProvider, type SeenCall } from './support/memory-provider.js';
import { sClient } from './support/openssl-tls.js';
import { TEST_SERVER_NAME } from '@eso-mtls/test-kit/pki';
import { clientChannel, createTestPkiSet, startTestProvider, type TestPkiSet } from '@eso-mtls/test-kit/provider-fixture';

// A cold build downloads grpc-go from the Go proxy and compiles it: minutes, once per machine.
const BUILD_TIMEOUT = 10 * 60_000;
let bin: { client: string; server: string };
let pki: TestPkiSet;
let files: string;
const file = (name: string) => join(files, name);

beforeAll(async () => {
  [bin, pki] = await Promise.all([buildGoInterop(), createTestPkiSet()]);
  files = mkdtempSync(join(tmpdir(), 'interop-pem-'));
  for (const [name, pem] of Object.entries({
    'ca.crt': pki.ca.cert,
    'client.crt': pki.client.cert,
    'client.key': pki.client.key,
    'server.crt': pki.server.cert,
    'server.key': pki.server.key,
  }))
    writeFileSync(file(name), pem);
}, BUILD_TIMEOUT);

afterAll(() => {
  if (files) rmSync(files, { recursive: true, force: true });
});

describe('a grpc-go client (crypto/tls, code generated from our .proto) calls our provider server', () => {
  const clientArgs = (address: string, serverName = TEST_SERVER_NAME) => [
    '-addr',
    address,
    '-server-name',
    serverName,
    '-ca',
    file('ca.crt'),
    '-cert',
    file('client.crt'),
    '-key',
    file('client.key'),
  ];

  it('every method succeeds with a client certificate issued by our core, NOT_FOUND included', async () => {
    const seen: SeenCall[] = [];
    const provider = await startTestProvider(pki, { implementation: memoryProvider(seen) });
    try {
      const result = await runProgram(bin.client, clientArgs(provider.address));
      expect(result).toMatchObject({ code: 0, stderr: '' });
      const b64 = (s: string | number[]) => Buffer.from(s as string).toString('base64');
      expect(JSON.parse(result.stdout)).toEqual({
        getSecret: b64('hunter2'),
        serverCertificate: { commonName: TEST_SERVER_NAME, dnsNames: [TEST_SERVER_NAME], verifiedChains: 1 },
        getSecretMap: { 'db/user': b64('admin') },
        missing: { code: 'NotFound', message: 'secret missing does not exist' },
        existsAfterPush: true,
        getAllSecrets: { 'db/password': b64('hunter2'), 'db/user': b64('admin') },
        existsAfterDelete: false,
        validate: { valid: false, error: 'namespace forbidden may not use this store', warnings: ['w'] },
        capabilities: 'READ_WRITE',
      });
      // What grpc-go encoded, decoded by us field for field.
      expect(seen.find((c) => c.method === 'pushSecret')?.request).toEqual({
        providerRef: { apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', name: 'go', namespace: 'apps', storeRefKind: 'SecretStoreRef' },
        secretData: { token: Buffer.from([0, 1, 2, 255]) },
        pushSecretData: {
          metadata: Buffer.from('{"apiVersion":"kubernetes.external-secrets.io/v1alpha1"}'),
          secretKey: 'token',
          remoteKey: 'pushed',
          property: 'p',
        },
        sourceNamespace: 'apps',
        secretType: 'Opaque',
        secretLabels: { team: 'a' },
        secretAnnotations: { owner: 'ops' },
      });
      expect(seen[0]?.context.client.subjectCommonName).toBe('external-secrets-core');
    } finally {
      await provider.stop();
    }
  });

  it('the Go client asks for TLS 1.3: a server offering only TLS 1.2 gets alert protocol_version', async () => {
    const tls12Only = createServer({ cert: pki.server.cert, key: pki.server.key, maxVersion: 'TLSv1.2', ALPNProtocols: ['h2'] });
    await new Promise<void>((resolve) => tls12Only.listen(0, '127.0.0.1', resolve));
    try {
      const result = await runProgram(bin.client, clientArgs(`127.0.0.1:${(tls12Only.address() as AddressInfo).port}`));
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain('tls: protocol version not supported');
    } finally {
      tls12Only.close();
    }
  });

  it('the Go client refuses our server when it expects another name', async () => {
    const provider = await startTestProvider(pki, { implementation: memoryProvider([]) });
    try {
      const result = await runProgram(bin.client, clientArgs(provider.address, 'other-provider.provider-system.svc'));
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain(`x509: certificate is valid for ${TEST_SERVER_NAME}, not other-provider.provider-system.svc`);
    } finally {
      await provider.stop();
    }
  });
});

describe('our client calls a grpc-go provider server holding a server certificate from our core', () => {
  let server: Awaited<ReturnType<typeof startGoServer>>;
  let channel: grpc.Channel;

  beforeAll(async () => {
    server = await startGoServer(bin.server, ['-addr', '127.0.0.1:0', '-ca', file('ca.crt'), '-cert', file('server.crt'), '-key', file('server.key')]);
    channel = clientChannel(server.address, pki.ca.cert, pki.client);
  });

  afterAll(async () => {
    channel?.close();
    await server?.stop();
  });

  it('every method, with NOT_FOUND mapped to SecretNotFoundError', async () => {
    const client = createSecretStoreProviderClient(channel, { retry: false });
    expect(await client.getSecret({ remoteRef: { key: 'db/password' } })).toEqual(Buffer.from('hunter2'));
    expect(await client.getSecretMap({ remoteRef: { key: 'web/token' } })).toEqual({ 'web/token': Buffer.from([0, 255]) });
    const missing = await failureOf(client.getSecret({ remoteRef: { key: 'missing' } }));
    expect(missing).toBeInstanceOf(SecretNotFoundError);
    expect((missing as Error).message).toBe('secret missing does not exist');
    await client.pushSecret({ secretData: { k: Buffer.from([9, 8]) }, pushSecretData: { remoteKey: 'pushed' }, secretLabels: { a: 'b' } });
    expect(await client.secretExists({ remoteRef: { remoteKey: 'pushed/k' } })).toBe(true);
    expect(await client.getAllSecrets({ find: { path: 'pushed/', name: { regexp: 'k$' } } })).toEqual({ 'pushed/k': Buffer.from([9, 8]) });
    await client.deleteSecret({ remoteRef: { remoteKey: 'pushed/k' } });
    expect(await client.secretExists({ remoteRef: { remoteKey: 'pushed/k' } })).toBe(false);
    await expect(client.deleteSecret({ remoteRef: { remoteKey: 'pushed/k' } })).rejects.toBeInstanceOf(SecretNotFoundError);
    expect(await client.validate({ sourceNamespace: 'forbidden' })).toEqual({
      valid: false,
      error: 'namespace forbidden may not use this store',
      warnings: ['w1', 'w2'],
    });
    expect(await client.capabilities({})).toBe('READ_WRITE');
    const invalid = await failureOf(client.getAllSecrets({ find: { name: { regexp: '(' } } }));
    expect(invalid.code).toBe(grpc.status.INVALID_ARGUMENT);
  });

  it('the Go server accepts TLS 1.3 only: openssl s_client over TLS 1.2 gets alert protocol_version', async () => {
    const port = Number(server.address.split(':').pop());
    const sClientFiles = { caFile: file('ca.crt'), certFile: file('client.crt'), keyFile: file('client.key') };
    const v13 = await sClient(port, sClientFiles, TEST_SERVER_NAME, ['-tls1_3']);
    expect(v13.accepted).toBe(true);
    const v12 = await sClient(port, sClientFiles, TEST_SERVER_NAME, ['-tls1_2']);
    expect(v12.accepted).toBe(false);
    expect(v12.stderr).toMatch(/alert protocol version|alert number 70/);
  });

  it("grpc-go's health service answers our grpc.health.v1 definition", async () => {
    const Health = grpc.makeClientConstructor(healthServiceDefinition(), 'grpc.health.v1.Health');
    const health = new Health(server.address, grpc.credentials.createSsl(), { channelOverride: channel }) as unknown as {
      Check(r: object, cb: (e: grpc.ServiceError | null, r?: unknown) => void): void;
    };
    const reply = await new Promise((resolve, reject) => health.Check({ service: 'provider.v1.SecretStoreProvider' }, (e, r) => (e ? reject(e) : resolve(r))));
    expect(reply).toEqual({ status: 'SERVING' });
  });
});
