// The pod signer's Event settings (issue 25): what validateAdapterOptions accepts; no server needed.
import { describe, expect, it } from '@jest/globals';
import { AdapterOptionsError, validateAdapterOptions } from '../src/options.js';

const pods = { serverSignerName: 'eso-mtls.io/provider-server', clientSignerName: 'eso-mtls.io/eso-client', maxValidity: 86_400_000 };
const withEvents = (podEvents: { concurrency?: number; windowMs?: number }) => ({ kubeConfig: {}, secretMode: false, podCertificates: pods, podEvents });

describe('podEvents options', () => {
  it('accepts whole numbers in range', () => {
    expect(() => validateAdapterOptions(withEvents({ concurrency: 1, windowMs: 0 }))).not.toThrow();
    expect(() => validateAdapterOptions(withEvents({ concurrency: 64, windowMs: 60_000 }))).not.toThrow();
  });

  it.each([
    [{ concurrency: 0 }, 'podEvents.concurrency', 'from 1 to 64'],
    [{ concurrency: 2.5 }, 'podEvents.concurrency', 'from 1 to 64'],
    [{ windowMs: -1 }, 'podEvents.windowMs', 'from 0 to 60000'],
    [{ windowMs: 60_001 }, 'podEvents.windowMs', 'from 0 to 60000'],
  ])('refuses %j, naming %s', (podEvents, option, accepted) => {
    const thrown = (() => {
      try {
        validateAdapterOptions(withEvents(podEvents));
      } catch (e) {
        return e;
      }
    })();
    expect(thrown).toBeInstanceOf(AdapterOptionsError);
    expect((thrown as AdapterOptionsError).option).toBe(option);
    expect((thrown as Error).message).toContain(accepted);
  });
});

describe('the pending bound and the relist for room', () => {
  const withBound = (extra: Record<string, unknown>, pendingBound?: { perNamespace: number; total: number }) => ({
    kubeConfig: {},
    secretMode: false,
    podCertificates: { ...pods, ...(pendingBound ? { pendingBound } : {}) },
    ...extra,
  });
  const refusal = (options: ReturnType<typeof withBound>): unknown => {
    try {
      validateAdapterOptions(options);
    } catch (e) {
      return e;
    }
    return undefined;
  };

  it('accepts whole numbers in range', () => {
    expect(refusal(withBound({ relistForRoomMs: 0 }, { perNamespace: 1, total: 1 }))).toBeUndefined();
    expect(refusal(withBound({ relistForRoomMs: 600_000 }, { perNamespace: 1_000_000, total: 1_000_000 }))).toBeUndefined();
    expect(refusal(withBound({ unservedRelistMs: 100 }))).toBeUndefined();
    expect(refusal(withBound({ unservedRelistMs: 600_000 }))).toBeUndefined();
  });

  it.each([
    [withBound({}, { perNamespace: 0, total: 10 }), 'podCertificates.pendingBound.perNamespace', 'from 1 to 1000000'],
    [withBound({}, { perNamespace: 10, total: 1.5 }), 'podCertificates.pendingBound.total', 'from 1 to 1000000'],
    [withBound({}, { perNamespace: 10, total: 1_000_001 }), 'podCertificates.pendingBound.total', 'from 1 to 1000000'],
    [withBound({ relistForRoomMs: -1 }), 'relistForRoomMs', 'from 0 to 600000'],
    [withBound({ relistForRoomMs: 600_001 }), 'relistForRoomMs', 'from 0 to 600000'],
    // An upstream source's look for its unserved API: never a hot loop.
    [withBound({ unservedRelistMs: 0 }), 'unservedRelistMs', 'from 100 to 600000'],
    [withBound({ unservedRelistMs: 2.5 }), 'unservedRelistMs', 'from 100 to 600000'],
    [withBound({ unservedRelistMs: 600_001 }), 'unservedRelistMs', 'from 100 to 600000'],
  ])('refuses a bad value, naming %#: %s', (options, option, accepted) => {
    const thrown = refusal(options);
    expect(thrown).toBeInstanceOf(AdapterOptionsError);
    expect((thrown as AdapterOptionsError).option).toBe(option);
    expect((thrown as Error).message).toContain(accepted);
  });
});
