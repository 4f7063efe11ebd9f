import { beforeEach, describe, expect, it } from '@jest/globals';
import {
  type Instant,
  MemoryStore,
  type Plan,
  type PublishedBundle,
  days,
  executePlan,
  hours,
  materializeCaChange,
  observePublishedBundle,
  planRotation,
  publishedBundleWrite,
} from '@eso-mtls/core';
import { Pki, convergedCluster, text } from '../support/planner.js';

// Pod-certificate mode's side of the CA rotation: a published trust bundle (a ClusterTrustBundle)
// gates the next CA's activation like every Secret's ca.crt, and a retired CA stays until every
// pod certificate it can have signed has expired.

const POD_VALIDITY = days(1);
let pki: Pki;
let store: MemoryStore;
let published: PublishedBundle | undefined;
beforeEach(async () => {
  ({ pki, store } = await convergedCluster());
  published = undefined;
});

function plan(now: Instant, pods: boolean): Plan {
  const snapshot = pods ? { ...store.snapshot(), trustBundles: [observePublishedBundle(published, pki.cache)] } : store.snapshot();
  return planRotation(snapshot, { now, policy: pki.policy, cache: pki.cache, ...(pods ? { podCertificateMaxValidity: POD_VALIDITY } : {}) });
}

/** One round: the Secret writes, then (when `publish`) the trust bundle follows the CA, as the adapter does. */
async function round(now: Instant, options: { pods: boolean; publish: boolean }): Promise<string[]> {
  const p = plan(now, options.pods);
  const writes = await executePlan(p, { crypto: pki.crypto });
  for (const w of writes) store.apply(w);
  if (options.publish) {
    const ca = await materializeCaChange(plan(now, options.pods), { crypto: pki.crypto });
    const write = publishedBundleWrite(published, ca, pki.cache, now);
    if (write) published = { text: write.text, annotations: { ...(published?.annotations ?? {}), ...write.annotations } };
  }
  return writes.filter((w) => w.kind === 'ca').flatMap((w) => w.phases ?? []);
}

const activeSerial = (): string => pki.cache.parse(text(store.get('ca'), 'ca.crt')).serialNumber;
const caSerialsIn = (bundle: PublishedBundle | undefined): string[] => (bundle ? pki.cache.parseBundle(bundle.text).map((c) => c.serialNumber) : []);

/** Rounds every minute from `from` until the CA phase `phase` is written; its instant. */
async function until(phase: string, from: Instant, limit: Instant, options: { pods: boolean; publish: (now: Instant) => boolean }): Promise<Instant> {
  for (let now = from; now <= limit; now += 60_000) {
    if ((await round(now, { pods: options.pods, publish: options.publish(now) })).includes(phase)) return now;
  }
  throw new Error(`no ${phase} before ${new Date(limit).toISOString()}`);
}

describe('planner, pod-certificate mode: the CA overlap with a published trust bundle', () => {
  it('the next CA signs only once the published bundle has held it for propagationDelay', async () => {
    const { policy } = pki;
    const prepareAt = pki.cache.parse(text(store.get('ca'), 'ca.crt')).notAfter - policy.caLookahead;
    await round(prepareAt - days(1), { pods: true, publish: true });
    expect(caSerialsIn(published)).toEqual([activeSerial()]);
    // The bundle is written an hour late: the Secrets alone would activate after propagationDelay.
    const publishedAt = prepareAt + hours(1);
    const prepared = await until('prepare', prepareAt, prepareAt, { pods: true, publish: () => false });
    const activated = await until('activate', prepared + 60_000, prepareAt + days(2), { pods: true, publish: (now) => now >= publishedAt });
    expect(activated).toBeGreaterThanOrEqual(publishedAt + policy.propagationDelay);
    expect(activated).toBeLessThanOrEqual(publishedAt + policy.propagationDelay + 2 * 60_000);
    expect(store.get('ca')!.annotations['eso-mtls.io/active-since']).toBe(new Date(activated).toISOString());
  });

  it('a retired CA stays trusted until the last pod certificate it signed has expired, then leaves the bundle', async () => {
    const { policy } = pki;
    const oldSerial = activeSerial();
    const prepareAt = pki.cache.parse(text(store.get('ca'), 'ca.crt')).notAfter - policy.caLookahead;
    const always = { pods: true, publish: () => true };
    const activated = await until('activate', prepareAt, prepareAt + days(1), always);
    const retired = await until('retire', activated + 60_000, activated + days(3), always);
    const podEnd = activated + POD_VALIDITY + policy.propagationDelay + policy.maxConnectionAge;
    expect(retired).toBeGreaterThanOrEqual(podEnd);
    expect(retired).toBeLessThanOrEqual(podEnd + 60_000);
    expect(caSerialsIn(published)).toEqual([activeSerial()]);
    expect(caSerialsIn(published)).not.toContain(oldSerial);
  });

  it('without pod certificates the same rotation retires after propagationDelay + maxConnectionAge (unchanged)', async () => {
    const { policy } = pki;
    const prepareAt = pki.cache.parse(text(store.get('ca'), 'ca.crt')).notAfter - policy.caLookahead;
    const secrets = { pods: false, publish: () => false };
    const activated = await until('activate', prepareAt, prepareAt + days(1), secrets);
    const retired = await until('retire', activated + 60_000, activated + days(3), secrets);
    expect(retired - activated).toBeLessThan(POD_VALIDITY);
    expect(retired - activated).toBeGreaterThanOrEqual(policy.propagationDelay + policy.maxConnectionAge);
  });

  it('with no record of when the active CA began to sign, a retired CA stays until it expires', async () => {
    const { policy } = pki;
    const prepareAt = pki.cache.parse(text(store.get('ca'), 'ca.crt')).notAfter - policy.caLookahead;
    const always = { pods: true, publish: () => true };
    const activated = await until('activate', prepareAt, prepareAt + days(1), always);
    const ca = store.get('ca')!;
    const { ['eso-mtls.io/active-since']: _dropped, ...rest } = ca.annotations;
    store.put('ca', { ...ca, annotations: rest });
    const p = plan(activated + days(5), true);
    expect(p.trust.retired.length).toBe(1);
    expect(p.nextDueAt).toBeDefined();
  });
});
