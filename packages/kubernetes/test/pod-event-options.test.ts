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
