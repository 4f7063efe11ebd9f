import { describe, expect, it } from '@jest/globals';
import { hasReplicaIdentityForm, identityStem, judgeLeaseHolder, maxLeaseDurationSeconds } from '../src/lease-holder.js';
import { LeaseHolderWatch } from '../src/lease-holder-watch.js';
import { createLogger } from '../src/logger.js';
import type { LeaseRecord } from '../src/lease-lock.js';

// The rule every replica and `eso-mtls status` judge the leader election Lease's holder by.
const POD = 'eso-mtls-controller-7d9f8b6c5-x2k9z';
const UUID = '0f8fad5b-d9cb-469f-a165-70867728950e';
const record = (holderIdentity: string, leaseDurationSeconds = 15): LeaseRecord => ({
  holderIdentity,
  leaseDurationSeconds,
  acquireTime: undefined,
  renewTime: undefined,
  leaseTransitions: 0,
});
const rule = { identity: POD, leaseDuration: 15_000 };

describe('identityStem', () => {
  it('drops the ReplicaSet hash and random suffix of a Deployment pod, and the CLI default _<uuid>', () => {
    expect(identityStem(POD)).toBe('eso-mtls-controller');
    expect(identityStem('eso-mtls-controller-5c6b7d8f9-q4w7r')).toBe('eso-mtls-controller');
    expect(identityStem(`eso-mtls-controller-5c6b7d8f9-q4w7r_${UUID}`)).toBe('eso-mtls-controller');
    expect(identityStem(`laptop_${UUID}`)).toBe('laptop');
    expect(identityStem(`my-laptop_${UUID}`)).toBe('my-laptop');
    // Not a pod name (vowels and 0, 1, 3 are outside Kubernetes' safe alphabet): only its last segment goes.
    expect(identityStem('eso-mtls-controller-abcde-x2k9z')).toBe('eso-mtls-controller-abcde');
    // A StatefulSet's pods, and identities numbered by hand.
    expect([identityStem('eso-mtls-0'), identityStem('eso-mtls-1')]).toEqual(['eso-mtls', 'eso-mtls']);
    expect([identityStem('replica-a'), identityStem('replica-b')]).toEqual(['replica', 'replica']);
    expect(identityStem('mallory')).toBe('mallory');
  });

  it('knows our identity forms without an identity of its own', () => {
    expect(hasReplicaIdentityForm(POD)).toBe(true);
    expect(hasReplicaIdentityForm(`host_${UUID}`)).toBe(true);
    expect(hasReplicaIdentityForm('mallory')).toBe(false);
  });
});

describe('judgeLeaseHolder', () => {
  it('passes an absent or released Lease, ourselves, and another replica of our Deployment (a rollout too)', () => {
    expect(judgeLeaseHolder(undefined, rule)).toBeUndefined();
    expect(judgeLeaseHolder(record('', 3600), rule)).toBeUndefined();
    expect(judgeLeaseHolder(record(POD), rule)).toBeUndefined();
    expect(judgeLeaseHolder(record('eso-mtls-controller-5c6b7d8f9-q4w7r'), rule)).toBeUndefined();
  });

  it('names a holder that is no replica of ours, and a duration far above ours, with the holder and the duration', () => {
    const forged = judgeLeaseHolder(record('mallory', 3600), rule)!;
    expect(forged.reasons).toEqual(['unknown_holder', 'duration_too_long']);
    expect(forged.message).toContain('holder "mallory" is not a replica of "eso-mtls-controller"');
    expect(forged.message).toContain('leaseDurationSeconds 3600 is above the 75 s our replicas may write (--leader-election-lease-duration 15s)');
    expect(judgeLeaseHolder(record('other-release-7d9f8b6c5-x2k9z'), rule)!.reasons).toEqual(['unknown_holder']);
    expect(judgeLeaseHolder(record('eso-mtls-controller-5c6b7d8f9-q4w7r', 3600), rule)!.reasons).toEqual(['duration_too_long']);
  });

  it('allows up to twice the configured duration, and at least a minute more', () => {
    expect(maxLeaseDurationSeconds(15_000)).toBe(75);
    expect(maxLeaseDurationSeconds(120_000)).toBe(240);
    expect(judgeLeaseHolder(record(POD, 75), rule)).toBeUndefined();
    expect(judgeLeaseHolder(record(POD, 76), rule)!.reasons).toEqual(['duration_too_long']);
  });

  it('without an identity (eso-mtls status) judges the form only', () => {
    const status = { leaseDuration: 15_000 };
    expect(judgeLeaseHolder(record('other-release-7d9f8b6c5-x2k9z'), status)).toBeUndefined();
    const found = judgeLeaseHolder(record('mallory'), status)!;
    expect(found.reasons).toEqual(['unknown_holder']);
    expect(found.message).toContain(`holder "mallory" is not of our replicas' identity form`);
  });
});

describe('LeaseHolderWatch', () => {
  it('says the start and the end of a foreign hold once each, however many reads see it', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger('info', { destination: { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) } });
    const events: { reason: string; type: string; involvedObject: unknown }[] = [];
    const create = async <T>(_path: string, body: unknown): Promise<T> => {
      events.push(body as (typeof events)[number]);
      return body as T;
    };
    const watch = new LeaseHolderWatch({
      lease: { namespace: 'eso', name: 'eso-mtls-controller' },
      identity: POD,
      leaseDuration: 15_000,
      logger,
      events: { create },
    });
    watch.observe(record(POD));
    expect(watch.reasons()).toEqual([]);
    for (let i = 0; i < 5; i++) watch.observe(record('mallory', 3600));
    expect(watch.reasons()).toEqual(['unknown_holder', 'duration_too_long']);
    // Another forged holder is a new state, said again.
    watch.observe(record('eve', 3600));
    for (let i = 0; i < 3; i++) watch.observe(undefined);
    expect(watch.reasons()).toEqual([]);
    expect(lines.map((l) => [l.level, l.holder])).toEqual([
      ['error', 'mallory'],
      ['error', 'eve'],
      ['info', null],
    ]);
    expect(lines[2]!.msg).toBe('the leader election Lease is no longer held by "eve" (unknown_holder, duration_too_long): the Lease was deleted');
    expect(events.map((e) => [e.type, e.reason])).toEqual([
      ['Warning', 'LeaseHeldByForeignHolder'],
      ['Warning', 'LeaseHeldByForeignHolder'],
      ['Normal', 'LeaseForeignHolderGone'],
    ]);
    expect(events[0]!.involvedObject).toEqual({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: 'eso', name: 'eso-mtls-controller' });
  });
});
