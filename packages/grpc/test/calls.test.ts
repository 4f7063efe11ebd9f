import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import { createSecretStoreProviderClient, ProviderCallError, SecretNotFoundError, type SecretStoreProviderClient } from '@eso-mtls/grpc';
import { failureOf } from '@eso-mtls/test-kit/failure';
import { memoryProvider, type SeenCall } from './support/memory-provider.js';
import { clientChannel, createTestPkiSet, startTestProvider, type RunningProvider, type TestPkiSet } from '@eso-mtls/test-kit/provider-fixture';
import { TEST_CLIENT_SPIFFE_ID } from '@eso-mtls/test-kit/pki';

export const providerRef = { apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', name: 'mem', namespace: 'apps', storeRefKind: 'SecretStoreRef' };

let pki: TestPkiSet;
let provider: RunningProvider;
let channel: grpc.Channel;
let client: SecretStoreProviderClient;
const seen: SeenCall[] = [];

beforeAll(async () => {
  pki = await createTestPkiSet();
  provider = await startTestProvider(pki, { implementation: memoryProvider(seen) });
  channel = clientChannel(provider.address, pki.ca.cert, pki.client);
  client = createSecretStoreProviderClient(channel, { retry: false, waitForReady: false });
});

afterAll(async () => {
  channel?.close();
  await provider?.stop();
});

describe('every provider.v1 method over mTLS on 127.0.0.1', () => {
  it('GetSecret returns the bytes and the provider sees the full request and the client identity', async () => {
    expect(await client.getSecret({ remoteRef: { key: 'db/password', version: 'v1' }, providerRef, sourceNamespace: 'apps' })).toEqual(Buffer.from('hunter2'));
    const last = seen.at(-1)!;
    expect(last.request).toEqual({
      remoteRef: { key: 'db/password', version: 'v1', property: '', decodingStrategy: '', metadataPolicy: '' },
      providerRef,
      sourceNamespace: 'apps',
    });
    expect(last.context.client.subjectCommonName).toBe('external-secrets-core');
    expect(last.context.client.uris).toEqual([TEST_CLIENT_SPIFFE_ID]);
    expect(last.context.peer).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(last.context.signal.aborted).toBe(false);
  });

  it('GetSecretMap, PushSecret, SecretExists, GetAllSecrets and DeleteSecret', async () => {
    expect(await client.getSecretMap({ remoteRef: { key: 'db/user' } })).toEqual({ 'db/user': Buffer.from('admin') });
    await client.pushSecret({ providerRef, secretData: { key: Buffer.from('pushed') }, pushSecretData: { remoteKey: 'new', secretKey: 'key' } });
    expect(await client.getSecret({ remoteRef: { key: 'new/key' } })).toEqual(Buffer.from('pushed'));
    expect(await client.secretExists({ remoteRef: { remoteKey: 'new/key' } })).toBe(true);
    expect(await client.getAllSecrets({ find: { path: 'db/' } })).toEqual({ 'db/password': Buffer.from('hunter2'), 'db/user': Buffer.from('admin') });
    await client.deleteSecret({ remoteRef: { remoteKey: 'new/key' } });
    expect(await client.secretExists({ remoteRef: { remoteKey: 'new/key' } })).toBe(false);
  });

  it('Validate and Capabilities (derived READ_WRITE from pushSecret + deleteSecret)', async () => {
    expect(await client.validate({ sourceNamespace: 'apps' })).toEqual({ valid: true, error: '', warnings: [] });
    expect(await client.validate({ sourceNamespace: 'forbidden' })).toEqual({
      valid: false,
      error: 'namespace forbidden may not use this store',
      warnings: ['w'],
    });
    expect(await client.capabilities({ providerRef })).toBe('READ_WRITE');
  });

  it('raw grpc-js client and the generic call() reach the same server', async () => {
    const response = await new Promise<unknown>((resolve, reject) => {
      client.raw().GetSecret({ remoteRef: { key: 'web/token' } }, new grpc.Metadata(), {}, (e, r) => (e ? reject(e) : resolve(r)));
    });
    expect(response).toEqual({ value: Buffer.from([0, 255]) });
    expect(await client.call('SecretExists', { remoteRef: { remoteKey: 'db/user' } })).toEqual({ exists: true });
  });
});

describe('errors become gRPC statuses and client errors', () => {
  it('NOT_FOUND surfaces as SecretNotFoundError with the provider message', async () => {
    const error = await failureOf(client.getSecret({ remoteRef: { key: 'missing' } }));
    expect(error).toBeInstanceOf(SecretNotFoundError);
    expect((error as Error).message).toBe('secret missing does not exist');
    expect(((error as Error).cause as grpc.ServiceError).code).toBe(grpc.status.NOT_FOUND);
    await expect(client.deleteSecret({ remoteRef: { remoteKey: 'missing' } })).rejects.toBeInstanceOf(SecretNotFoundError);
  });

  it('an error with a gRPC code keeps it; any other error is INTERNAL with its message and no stack', async () => {
    const invalid = await failureOf(client.getSecret({ remoteRef: { key: 'invalid' } }));
    expect(invalid).toBeInstanceOf(ProviderCallError);
    expect([invalid.code, invalid.details, invalid.attempts]).toEqual([grpc.status.INVALID_ARGUMENT, 'key "invalid" is not allowed', 1]);
    const internal = await failureOf(client.getSecret({ remoteRef: { key: 'explode' } }));
    expect([internal.code, internal.details]).toEqual([grpc.status.INTERNAL, 'backend exploded']);
    expect(internal.message).toBe('provider.v1 GetSecret failed with INTERNAL after 1 attempt: backend exploded');
  });

  it('a response of the wrong type is INTERNAL naming the field, not silently re-encoded', async () => {
    const error = await failureOf(client.getSecret({ remoteRef: { key: 'string' } }));
    expect([error.code, error.details]).toEqual([grpc.status.INTERNAL, 'GetSecret returned value of type string; return bytes (Buffer or Uint8Array)']);
  });

  it('a method the provider lacks is UNIMPLEMENTED; Capabilities of a read-only provider is READ_ONLY', async () => {
    const readOnly = await startTestProvider(pki, { implementation: { getSecret: () => ({}), getSecretMap: () => ({}) } });
    const ch = clientChannel(readOnly.address, pki.ca.cert, pki.client);
    try {
      const c = createSecretStoreProviderClient(ch, { retry: false });
      const error = await failureOf(c.pushSecret({}));
      expect([error.code, error.details]).toEqual([grpc.status.UNIMPLEMENTED, 'this provider does not implement PushSecret (no pushSecret method)']);
      expect(await c.capabilities({})).toBe('READ_ONLY');
      expect(await c.validate({})).toEqual({ valid: true, error: '', warnings: [] });
      expect(await c.getSecret({})).toEqual(Buffer.alloc(0));
    } finally {
      ch.close();
      await readOnly.stop();
    }
  });
});

describe('the client identity is checked on every call, from the auth context', () => {
  const denied = async (requireClientIdentity: { commonName?: string; spiffeId?: string }): Promise<ProviderCallError> => {
    const strict = await startTestProvider(pki, { implementation: memoryProvider([]), requireClientIdentity });
    const ch = clientChannel(strict.address, pki.ca.cert, pki.client);
    try {
      // Retries on: PERMISSION_DENIED must still end after one attempt.
      const c = createSecretStoreProviderClient(ch, { retry: { initialBackoffMs: 1 } });
      return await failureOf(c.getSecret({ remoteRef: { key: 'db/user' } }));
    } finally {
      ch.close();
      await strict.stop();
    }
  };

  it('PERMISSION_DENIED names the required and the presented common name', async () => {
    const error = await denied({ commonName: 'someone-else' });
    expect([error.code, error.attempts]).toEqual([grpc.status.PERMISSION_DENIED, 1]);
    expect(error.details).toMatch(/^client certificate subject CN "external-secrets-core" \(serial [0-9a-f]+\) is not the required "someone-else"$/);
  });

  it('PERMISSION_DENIED names the required and the presented SPIFFE ID', async () => {
    const error = await denied({ spiffeId: 'spiffe://cluster.local/ns/other/sa/intruder' });
    expect(error.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(error.details).toContain(`does not carry the required URI SAN spiffe://cluster.local/ns/other/sa/intruder; presented [${TEST_CLIENT_SPIFFE_ID}]`);
  });

  it('the matching SPIFFE ID and the default common name are accepted', async () => {
    const strict = await startTestProvider(pki, { implementation: memoryProvider([]), requireClientIdentity: { spiffeId: TEST_CLIENT_SPIFFE_ID } });
    const ch = clientChannel(strict.address, pki.ca.cert, pki.client);
    try {
      expect(await createSecretStoreProviderClient(ch).getSecret({ remoteRef: { key: 'db/user' } })).toEqual(Buffer.from('admin'));
    } finally {
      ch.close();
      await strict.stop();
    }
  });
});
