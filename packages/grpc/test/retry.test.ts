import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import {
  createSecretStoreProviderClient,
  DEFAULT_RETRY_POLICY,
  ProviderError,
  resolveRetryPolicy,
  SecretNotFoundError,
  type RetryEnvironment,
} from '@eso-mtls/grpc';
import { backoffDelay } from '../src/client/retry.js';
import { failureOf } from '@eso-mtls/test-kit/failure';
import { clientChannel, createTestPkiSet, startTestProvider, type RunningProvider } from '@eso-mtls/test-kit/provider-fixture';

/** A clock that only moves when the retry loop sleeps, and records the sleeps. */
function fakeTime(random = 0.5): RetryEnvironment & { sleeps: number[] } {
  let t = 1_000_000;
  const sleeps: number[] = [];
  return {
    sleeps,
    random: () => random,
    now: () => t,
    sleep: async (ms) => {
      sleeps.push(ms);
      t += ms;
    },
  };
}

describe('backoff', () => {
  it('grows by the multiplier, is capped, and is jittered over [0, bound)', () => {
    const p = resolveRetryPolicy({ initialBackoffMs: 100, backoffMultiplier: 2, maxBackoffMs: 500 });
    expect([1, 2, 3, 4, 5].map((n) => backoffDelay(n, p, () => 0.999999))).toEqual([99, 199, 399, 499, 499]);
    expect(backoffDelay(3, p, () => 0)).toBe(0);
    expect(backoffDelay(2, p, () => 0.5)).toBe(100);
  });

  it('rejects policies that would retry what the contract calls final, naming the field', () => {
    expect(() => resolveRetryPolicy({ retryableCodes: [grpc.status.UNAVAILABLE, grpc.status.NOT_FOUND] })).toThrow('must not include NOT_FOUND');
    expect(() => resolveRetryPolicy({ maxAttempts: 0 })).toThrow('retry.maxAttempts=0');
    expect(resolveRetryPolicy(false).maxAttempts).toBe(1);
    expect(resolveRetryPolicy(undefined)).toEqual(DEFAULT_RETRY_POLICY);
  });
});

describe('retries over mTLS against a flaky provider', () => {
  let provider: RunningProvider;
  let channel: grpc.Channel;
  const attempts = new Map<string, number>();
  // Each key fails with its code the first `failures` times it is read.
  const script: Record<string, { code: grpc.status; failures: number }> = {
    flaky: { code: grpc.status.UNAVAILABLE, failures: 2 },
    exhausted: { code: grpc.status.RESOURCE_EXHAUSTED, failures: 100 },
    aborted: { code: grpc.status.ABORTED, failures: 1 },
    deadline: { code: grpc.status.DEADLINE_EXCEEDED, failures: 1 },
    invalid: { code: grpc.status.INVALID_ARGUMENT, failures: 100 },
    denied: { code: grpc.status.PERMISSION_DENIED, failures: 100 },
    unauthenticated: { code: grpc.status.UNAUTHENTICATED, failures: 100 },
  };

  beforeAll(async () => {
    const pki = await createTestPkiSet();
    provider = await startTestProvider(pki, {
      implementation: {
        getSecret(request) {
          const key = request.remoteRef?.key ?? '';
          const n = (attempts.get(key) ?? 0) + 1;
          attempts.set(key, n);
          if (key === 'missing') throw new SecretNotFoundError('no secret missing');
          const s = script[key];
          if (s !== undefined && n <= s.failures) throw new ProviderError(s.code, `${key} attempt ${n} failed`);
          return { value: Buffer.from(`${key} after ${n}`) };
        },
        getSecretMap: () => ({}),
      },
    });
    channel = clientChannel(provider.address, pki.ca.cert, pki.client);
  });

  afterAll(async () => {
    channel?.close();
    await provider?.stop();
  });

  it('UNAVAILABLE twice, then the value: three attempts with jittered exponential waits', async () => {
    const time = fakeTime(0.5);
    const client = createSecretStoreProviderClient(channel, { retryEnvironment: time });
    expect(await client.getSecret({ remoteRef: { key: 'flaky' } })).toEqual(Buffer.from('flaky after 3'));
    expect(attempts.get('flaky')).toBe(3);
    expect(time.sleeps).toEqual([50, 100]);
  });

  it('ABORTED and DEADLINE_EXCEEDED are retried too', async () => {
    const client = createSecretStoreProviderClient(channel, { retryEnvironment: fakeTime() });
    expect(await client.getSecret({ remoteRef: { key: 'aborted' } })).toEqual(Buffer.from('aborted after 2'));
    expect(await client.getSecret({ remoteRef: { key: 'deadline' } })).toEqual(Buffer.from('deadline after 2'));
  });

  it('RESOURCE_EXHAUSTED gives up after maxAttempts and reports them', async () => {
    const client = createSecretStoreProviderClient(channel, { retry: { maxAttempts: 3 }, retryEnvironment: fakeTime() });
    const error = await failureOf(client.getSecret({ remoteRef: { key: 'exhausted' } }));
    expect([error.code, error.attempts, error.details]).toEqual([grpc.status.RESOURCE_EXHAUSTED, 3, 'exhausted attempt 3 failed']);
    expect(attempts.get('exhausted')).toBe(3);
  });

  it('stops retrying when the next wait would pass the call deadline', async () => {
    const time = fakeTime(0.999);
    const client = createSecretStoreProviderClient(channel, { retry: { maxAttempts: 10, initialBackoffMs: 1000 }, timeoutMs: 2500, retryEnvironment: time });
    attempts.delete('exhausted');
    const error = await failureOf(client.getSecret({ remoteRef: { key: 'exhausted' } }));
    // Waits of 999 and 1998 ms: the second would end past 2500 ms, so two attempts in all.
    expect([error.attempts, time.sleeps]).toEqual([2, [999]]);
  });

  it('never retries NOT_FOUND, INVALID_ARGUMENT, PERMISSION_DENIED or UNAUTHENTICATED', async () => {
    const time = fakeTime();
    const client = createSecretStoreProviderClient(channel, { retryEnvironment: time });
    await expect(client.getSecret({ remoteRef: { key: 'missing' } })).rejects.toBeInstanceOf(SecretNotFoundError);
    for (const key of ['invalid', 'denied', 'unauthenticated']) {
      const error = await failureOf(client.getSecret({ remoteRef: { key } }));
      expect([key, error.code, error.attempts]).toEqual([key, script[key]!.code, 1]);
    }
    expect(['missing', 'invalid', 'denied', 'unauthenticated'].map((k) => attempts.get(k))).toEqual([1, 1, 1, 1]);
    expect(time.sleeps).toEqual([]);
  });

  it('with retries off, UNAVAILABLE fails at once', async () => {
    attempts.delete('flaky');
    const client = createSecretStoreProviderClient(channel, { retry: false, retryEnvironment: fakeTime() });
    const error = await failureOf(client.getSecret({ remoteRef: { key: 'flaky' } }));
    expect([error.code, error.attempts, attempts.get('flaky')]).toEqual([grpc.status.UNAVAILABLE, 1, 1]);
  });
});
