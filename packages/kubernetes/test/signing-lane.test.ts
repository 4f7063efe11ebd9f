// The signing lane's CA hand-over (issue 23, item 9): a CA write waits for the signatures made
// with the CA it replaces, and nothing starts signing with a CA once it was taken back. The
// signing passes themselves run on the real apiserver in pod-certificates.test.ts.
import { describe, expect, it } from '@jest/globals';
import type { MaterializedCa } from '@eso-mtls/core';
import { silentLogger } from '../src/runtime/logger.js';
import type { PodCertificateSigner } from '../src/pod-certificates/pod-signer.js';
import { PodSigningLane } from '../src/pod-certificates/pod-signing-lane.js';

const ca = (name: string): MaterializedCa => ({ retired: [], bundle: name });
// withCa, use and withdraw never touch the signer: passes do, and none runs here (the lane is not started).
const lane = (): PodSigningLane =>
  new PodSigningLane(undefined as unknown as PodCertificateSigner, { now: Date.now, writesAllowed: () => true, logger: silentLogger });

describe('PodSigningLane: the CA hand-over', () => {
  it('signs with no CA before one is handed over, and with the latest one after', async () => {
    const l = lane();
    expect(await l.withCa(async () => 'signed')).toBeUndefined();
    l.use(ca('first'));
    l.use(ca('second'));
    expect(await l.withCa(async (c) => c.bundle)).toBe('second');
  });

  it('withdraw resolves only once every signature in flight with the old CA is done, and none starts after it', async () => {
    const l = lane();
    l.use(ca('old'));
    const order: string[] = [];
    let finish!: () => void;
    const gate = new Promise<void>((r) => (finish = r));
    const inFlight = l.withCa(async (c) => {
      await gate;
      order.push(`signed with ${c.bundle}`);
    });
    const withdrawn = l.withdraw().then(() => order.push('withdrawn'));
    expect(await l.withCa(async () => order.push('started after withdraw'))).toBeUndefined();
    await Promise.resolve();
    expect(order).toEqual([]);
    finish();
    await Promise.all([inFlight, withdrawn]);
    expect(order).toEqual(['signed with old', 'withdrawn']);
    l.use(ca('new'));
    expect(await l.withCa(async (c) => c.bundle)).toBe('new');
  });

  it('withdraw resolves at once when nothing is in flight, and after a signature that failed', async () => {
    const l = lane();
    l.use(ca('old'));
    await expect(l.withCa(async () => Promise.reject(new Error('token gone')))).rejects.toThrow('token gone');
    await expect(l.withdraw()).resolves.toBeUndefined();
  });
});
