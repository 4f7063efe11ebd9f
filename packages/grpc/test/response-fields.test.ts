import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import { createSecretStoreProviderClient, ProviderCallError, type ProviderLogRecord, type SecretStoreProviderClient } from '@eso-mtls/grpc';
import { failureOf } from '@eso-mtls/test-kit/failure';
import { clientChannel, createTestPkiSet, startTestProvider, type RunningProvider } from '@eso-mtls/test-kit/provider-fixture';

// A provider's response with a field its message does not have (`{ data }` from GetSecretMap,
// whose message has `secrets`): protobufjs would drop it and ESO would get an empty map. The real
// server refuses it with INTERNAL naming the method and the fields, which the real client gets,
// and logs it once.

let provider: RunningProvider;
let channel: grpc.Channel;
let client: SecretStoreProviderClient;
const logged: ProviderLogRecord[] = [];

beforeAll(async () => {
  const pki = await createTestPkiSet();
  provider = await startTestProvider(pki, {
    implementation: {
      getSecret: () => ({ value: Buffer.from('v') }),
      // The bug: ESO's Go field is Data in other messages; this message's field is secrets.
      getSecretMap: () => ({ data: { user: Buffer.from('admin') } }) as never,
      getAllSecrets: () => ({ secrets: {}, found: 1, more: true }) as never,
      pushSecret: () => ({ ok: true }) as never,
      deleteSecret: () => ({ ok: undefined }) as never,
    },
    log: (r) => void logged.push(r),
    metrics: { namespace: 'provider-system', service: 'my-provider' },
  });
  channel = clientChannel(provider.address, pki.ca.cert, pki.client);
  client = createSecretStoreProviderClient(channel, { retry: false, waitForReady: false });
});

afterAll(async () => {
  channel?.close();
  await provider?.stop();
});

const refusals = (): ProviderLogRecord[] => logged.filter((r) => r.reason === 'invalid_response');

describe('a response with a field its message does not have', () => {
  it('fails the call with INTERNAL naming the method, the unknown field and the fields the message has, logged once', async () => {
    const details = 'GetSecretMap returned field data, which GetSecretMapResponse does not have; it has only secrets';
    for (let i = 0; i < 3; i++) {
      const error = await failureOf(client.getSecretMap({ remoteRef: { key: 'db' } }));
      expect(error).toBeInstanceOf(ProviderCallError);
      expect([error.code, error.details]).toEqual([grpc.status.INTERNAL, details]);
    }
    expect(refusals()).toEqual([
      {
        level: 'warn',
        message: 'provider response refused; the call failed with INTERNAL',
        reason: 'invalid_response',
        detail: details,
        namespace: 'provider-system',
        service: 'my-provider',
      },
    ]);
  });

  it('names every unknown field, and says a message without fields takes an empty object', async () => {
    const all = await failureOf(client.getAllSecrets({}));
    expect(all.details).toBe('GetAllSecrets returned fields found, more, which GetAllSecretsResponse does not have; it has only secrets');
    const push = await failureOf(client.pushSecret({}));
    expect(push.details).toBe('PushSecret returned field ok, which PushSecretResponse does not have; it has no fields: return {} or nothing');
    expect(refusals().map((r) => r.detail)).toEqual([expect.stringMatching(/^GetSecretMap/), all.details, push.details]);
  });

  it('lets a known response through, and an unknown field left undefined', async () => {
    expect(await client.getSecret({})).toEqual(Buffer.from('v'));
    await expect(client.deleteSecret({})).resolves.toBeUndefined();
  });
});
