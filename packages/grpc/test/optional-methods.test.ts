import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import { createSecretStoreProviderClient, type SecretStoreProvider } from '@eso-mtls/grpc';
import { failureOf } from '@eso-mtls/test-kit/failure';
import { clientChannel, createTestPkiSet, startTestProvider, type RunningProvider, type TestPkiSet } from '@eso-mtls/test-kit/provider-fixture';

// The README promises that every method but getSecret may be left out. The type says so too:
// this object compiles only while getSecretMap is optional in SecretStoreProvider.
const getSecretOnly: SecretStoreProvider = { getSecret: () => ({ value: Buffer.from('only-this') }) };

let pki: TestPkiSet;
let provider: RunningProvider;
let channel: grpc.Channel;

beforeAll(async () => {
  pki = await createTestPkiSet();
  provider = await startTestProvider(pki, { implementation: getSecretOnly });
  channel = clientChannel(provider.address, pki.ca.cert, pki.client);
});

afterAll(async () => {
  channel?.close();
  await provider?.stop();
});

describe('a provider with getSecret alone, over mTLS on 127.0.0.1', () => {
  it('starts, and serves GetSecret', async () => {
    const client = createSecretStoreProviderClient(channel, { retry: false });
    expect(await client.getSecret({ remoteRef: { key: 'any' } })).toEqual(Buffer.from('only-this'));
  });

  it('answers GetSecretMap with UNIMPLEMENTED naming the missing method', async () => {
    const client = createSecretStoreProviderClient(channel, { retry: false });
    const error = await failureOf(client.getSecretMap({ remoteRef: { key: 'any' } }));
    expect([error.code, error.details]).toEqual([grpc.status.UNIMPLEMENTED, 'this provider does not implement GetSecretMap (no getSecretMap method)']);
  });

  it('answers the other optional methods as the README says', async () => {
    const client = createSecretStoreProviderClient(channel, { retry: false });
    expect((await failureOf(client.getAllSecrets({}))).code).toBe(grpc.status.UNIMPLEMENTED);
    expect((await failureOf(client.pushSecret({}))).code).toBe(grpc.status.UNIMPLEMENTED);
    expect(await client.validate({})).toEqual({ valid: true, error: '', warnings: [] });
    expect(await client.capabilities({})).toBe('READ_ONLY');
  });
});
