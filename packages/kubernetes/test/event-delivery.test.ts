// Events that must not be lost: a write the apiserver did not answer (restarting, 429, 5xx) is sent
// again within a bound, one it refused for good is not, stop gives up what waits, and a failure's
// counter and its Event are both kept or both left to the new leader. Against a real kube-apiserver;
// a transport that loses one answer or answers 429 stands in for those rare faults.
import { describe, expect, it } from '@jest/globals';
import type { CryptoBackend } from '@eso-mtls/core';
import { ProviderCertificateAdapter } from '../src/index.js';
import { connectionFromKubeConfig } from '../src/client/connection.js';
import { EventRecorder, type EventRecorderOptions } from '../src/events/event-recorder.js';
import type { InvolvedObject } from '../src/events/involved-object.js';
import { KubeApiError, KubeRestClient } from '../src/client/rest-client.js';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { useControlPlane } from '@eso-mtls/test-kit/installations';
import { RecordingLogger } from '@eso-mtls/test-kit/logger';
import { freePort } from '@eso-mtls/test-kit/ports';
import { FailingCrypto } from './support/failing-crypto.js';
import { FakeTimers } from './support/fake-timers.js';

const suite = useControlPlane();

async function recorder(options: Partial<EventRecorderOptions> = {}, server?: string) {
  const connection = await connectionFromKubeConfig(suite.plane.adminKubeConfig);
  const api = new KubeRestClient(server ? { ...connection, server } : connection);
  const logger = new RecordingLogger();
  const events = new EventRecorder(api, { now: Date.now, logger, ...options });
  return { api, events, logger };
}

const provider = (namespace: string, name = 'provider'): InvolvedObject => ({ namespace, name });
const couldNot = (logger: RecordingLogger) => logger.lines.filter((l) => l.message.startsWith('could not record Event'));

describe('Event writes that get no answer are retried', () => {
  it('writes an Event recorded while the kube-apiserver is down once it is back, once', async () => {
    const ns = await suite.cluster.namespace('ev-down');
    const { api, events, logger } = await recorder();
    await suite.plane.stopApiServer({ crash: true });
    try {
      events.record(provider(ns), 'Warning', 'Failed', 'recorded while the apiserver was down');
      await eventually(() => events.stats.retried > 0, 60_000, 'the first attempt to fail and wait for a retry');
    } finally {
      await suite.plane.startApiServer();
    }
    await events.flush();
    expect(events.stats).toMatchObject({ created: 1, failed: 0, dropped: 0 });
    expect(await suite.cluster.events(ns, 'provider')).toEqual([
      { type: 'Warning', reason: 'Failed', message: 'recorded while the apiserver was down', count: 1 },
    ]);
    expect(couldNot(logger)).toEqual([]);
    await events.stop();
    api.close();
  }, 240_000);

  it('takes AlreadyExists on a retried create as the lost first answer: one Event, no failure', async () => {
    const ns = await suite.cluster.namespace('ev-lost-answer');
    const { api, events, logger } = await recorder();
    const create = api.create.bind(api);
    let lose = 1;
    // The apiserver stored the Event, but its answer never arrived.
    api.create = async <T>(path: string, body: unknown): Promise<T> => {
      const answer = await create<T>(path, body);
      if (lose-- > 0) throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
      return answer;
    };
    events.record(provider(ns), 'Warning', 'Failed', 'answer lost once');
    await events.flush();
    expect(events.stats).toMatchObject({ created: 1, failed: 0, retried: 1 });
    expect(api.counter.count('create', 'events')).toBe(2);
    expect((await suite.cluster.events(ns, 'provider')).map((e) => e.count)).toEqual([1]);
    expect(couldNot(logger)).toEqual([]);
    await events.stop();
    api.close();
  });

  it("waits at least a 429's retryAfterSeconds before the next attempt", async () => {
    const ns = await suite.cluster.namespace('ev-throttled');
    const timers = new FakeTimers();
    const { api, events } = await recorder({ timers });
    const create = api.create.bind(api);
    let throttle = 1;
    api.create = async <T>(path: string, body: unknown): Promise<T> => {
      if (throttle-- > 0) {
        throw new KubeApiError(
          429,
          JSON.stringify({ kind: 'Status', reason: 'TooManyRequests', message: 'slow down', details: { retryAfterSeconds: 7 } }),
          'POST',
          path,
        );
      }
      return create<T>(path, body);
    };
    events.record(provider(ns), 'Warning', 'Failed', 'throttled once');
    await eventually(() => timers.pending().length === 1, 20_000, 'the retry to be scheduled');
    expect(timers.pending()[0]!.inMs).toBeGreaterThanOrEqual(7000);
    timers.advance(timers.pending()[0]!.inMs);
    await events.flush();
    expect(events.stats).toMatchObject({ created: 1, failed: 0, retried: 1 });
    expect((await suite.cluster.events(ns, 'provider')).map((e) => e.message)).toEqual(['throttled once']);
    await events.stop();
    api.close();
  });
});

describe('Event writes that cannot succeed', () => {
  it('are not retried when the apiserver refuses them (403, 422), and are counted and logged once with namespace and service', async () => {
    // Without a namespace controller a deleted namespace stays Terminating: creates there get 403 NamespaceTerminating.
    const gone = await suite.cluster.namespace('ev-terminating');
    await suite.cluster.core.deleteNamespace({ name: gone });
    const ns = await suite.cluster.namespace('ev-invalid');
    const { api, events, logger } = await recorder();
    const create = api.create.bind(api);
    // The apiserver's validation of v1 Events accepts all the recorder sends; a 422 is forced here.
    api.create = async <T>(path: string, body: unknown): Promise<T> => {
      if (path.includes(`/${ns}/`))
        throw new KubeApiError(422, JSON.stringify({ kind: 'Status', reason: 'Invalid', message: 'Event is invalid' }), 'POST', path);
      return create<T>(path, body);
    };
    events.record(provider(gone), 'Warning', 'Failed', 'in a namespace being deleted');
    events.record(provider(ns), 'Warning', 'Failed', 'cannot be stored');
    await events.flush();
    expect(events.stats).toMatchObject({ created: 0, failed: 2, retried: 0, dropped: 0 });
    expect(api.counter.count('create', 'events')).toBe(1); // the one that reached the apiserver, once
    expect(couldNot(logger).map((l) => l.fields)).toEqual(
      expect.arrayContaining([
        { namespace: gone, service: 'provider', reason: 'Failed', error: expect.stringContaining('403 Forbidden') },
        { namespace: ns, service: 'provider', reason: 'Failed', error: expect.stringContaining('422 Invalid') },
      ]),
    );
    expect(couldNot(logger)).toHaveLength(2);
    await events.stop();
    api.close();
  });

  it('are given up beyond the bound on Events waiting, and at stop, which does not wait out the retry bound', async () => {
    // Nothing listens on this port: every attempt is refused. The fake timers never fire, so only stop() ends the waits.
    const timers = new FakeTimers();
    const { api, events, logger } = await recorder({ timers, maxWaiting: 2 }, `https://127.0.0.1:${await freePort()}`);
    for (const name of ['a', 'b', 'c']) events.record(provider('ev-unreachable', name), 'Warning', 'Failed', `about ${name}`);
    await eventually(() => events.stats.retried === 2 && events.stats.failed === 1, 20_000, 'two Events waiting and one given up');
    // The third found two waiting: given up at once, and said so with its namespace and service.
    expect(couldNot(logger).map((l) => l.fields)).toEqual([
      { namespace: 'ev-unreachable', service: 'c', reason: 'Failed', error: expect.stringContaining('2 Events already wait to be retried') },
    ]);
    await events.stop();
    expect(events.stats).toMatchObject({ created: 0, failed: 3, dropped: 3, retried: 2 });
    expect(timers.pending()).toEqual([]);
    // The two waiting at stop: one line for both.
    expect(couldNot(logger).slice(1)).toEqual([
      expect.objectContaining({
        level: 'warn',
        fields: { events: 2, objects: ['Service ev-unreachable/a', 'Service ev-unreachable/b'], error: 'stopping while they waited to be retried' },
      }),
    ]);
    api.close();
  });
});

describe("a failure's counter and its Warning Event under the leadership fence", () => {
  /** An adapter whose leaf signing fails for `ns`, with leadership a variable the test (or the fault) turns off. */
  async function failingAdapter(eso: string, ns: string, loseLease: 'after counting' | 'before reporting') {
    const fence = { leading: true };
    const failing = new FailingCrypto();
    failing.failNamespaces.add(ns);
    const crypto: CryptoBackend = {
      ...failing,
      signer: {
        generateKey: failing.signer.generateKey,
        sign: async (key, data) => {
          try {
            return await failing.signer.sign(key, data);
          } catch (e) {
            if (loseLease === 'before reporting') fence.leading = false;
            throw e;
          }
        },
      },
    };
    const failures: string[] = [];
    const logger = new RecordingLogger();
    const adapter = await ProviderCertificateAdapter.create({
      kubeConfig: suite.plane.adminKubeConfig,
      crypto,
      logger,
      debounceMs: 20,
      policy: { esoNamespace: eso },
      writesAllowed: () => fence.leading,
      hooks: {
        onRotationFailure: (namespace, services) => {
          failures.push(`${namespace}/${services.join(',')}`);
          if (loseLease === 'after counting') fence.leading = false;
        },
      },
    });
    return { adapter, failures, logger };
  }

  const warnings = async (ns: string) => (await suite.cluster.events(ns, 'p')).filter((e) => e.type === 'Warning').map((e) => [e.reason, e.count]);

  it('keeps both when the Lease is lost right after the failure was counted: the Event still goes out', async () => {
    const eso = await suite.cluster.namespace('eso-ev-after');
    const ns = await suite.cluster.namespace('ev-fence-after');
    await suite.cluster.labelledService(ns, 'p');
    const { adapter, failures } = await failingAdapter(eso, ns, 'after counting');
    try {
      await adapter.start();
      await eventually(() => failures.length > 0, 60_000, 'the failure to be counted');
      await adapter.flushEvents();
      expect(failures).toEqual([`${ns}/p`]);
      expect(await warnings(ns)).toEqual([['Failed', 1]]);
    } finally {
      await adapter.stop();
      await suite.cluster.deleteService(ns, 'p');
    }
  });

  it('keeps neither when the Lease was lost before the failure was reported: the new leader reports', async () => {
    const eso = await suite.cluster.namespace('eso-ev-before');
    const ns = await suite.cluster.namespace('ev-fence-before');
    await suite.cluster.labelledService(ns, 'p');
    const { adapter, failures, logger } = await failingAdapter(eso, ns, 'before reporting');
    try {
      await adapter.start();
      await eventually(() => logger.lines.some((l) => l.message === 'issuing a certificate failed'), 60_000, 'the signing failure');
      await adapter.flushEvents();
      expect(failures).toEqual([]);
      expect(await warnings(ns)).toEqual([]);
    } finally {
      await adapter.stop();
      await suite.cluster.deleteService(ns, 'p');
    }
  });
});
