import { describe, expect, it } from '@jest/globals';
import type { V1Secret } from '@kubernetes/client-node';
import { WriteConflicts, replacedBy } from '../src/rounds/write-conflicts.js';

// The rule of who yields (docs/controller.md#two-controllers), without a server: a write of ours
// replaced by another writer within one reconcile interval is a conflict, reported once, and
// that Secret is left alone for one interval.
const INTERVAL = 10_000;
const ours = { identity: 'controller-a', policy: 'aaaaaaaaaaaa' };
const target = { namespace: 'team-1' };
const key = 'namespace/team-1';

function secret(resourceVersion: string, writer?: string, policy?: string): V1Secret {
  const annotations: Record<string, string> = { 'eso-mtls.io/installation': 'external-secrets-system/eso-provider-ca-internal' };
  if (writer !== undefined) annotations['eso-mtls.io/written-by'] = writer;
  if (policy !== undefined) annotations['eso-mtls.io/policy'] = policy;
  return { metadata: { name: 'external-secrets-provider-tls', namespace: 'team-1', resourceVersion, annotations } };
}

describe('replacedBy', () => {
  const write = { target, resourceVersion: '10', at: 1000 };
  it('names the other writer of a Secret replaced within the interval', () => {
    expect(replacedBy(secret('11', 'controller-b', 'bbbbbbbbbbbb'), write, ours.identity, 2000, INTERVAL)).toEqual({
      identity: 'controller-b',
      policy: 'bbbbbbbbbbbb',
    });
  });
  it('is not a conflict: our own version, our own stamp, no stamp (an earlier release, or by hand), or found after the interval', () => {
    expect(replacedBy(secret('10', 'controller-b'), write, ours.identity, 2000, INTERVAL)).toBeUndefined();
    expect(replacedBy(secret('11', 'controller-a'), write, ours.identity, 2000, INTERVAL)).toBeUndefined();
    expect(replacedBy(secret('11'), write, ours.identity, 2000, INTERVAL)).toBeUndefined();
    expect(replacedBy(secret('11', 'controller-b'), write, ours.identity, 1000 + INTERVAL + 1, INTERVAL)).toBeUndefined();
  });
  it('bounds what it repeats of a tenant-writable annotation', () => {
    const long = 'x'.repeat(100_000);
    const writer = replacedBy(secret('11', long, long), write, ours.identity, 2000, INTERVAL)!;
    expect(writer.identity.length).toBeLessThanOrEqual(128);
    expect(writer.policy!.length).toBeLessThanOrEqual(128);
  });
});

describe('WriteConflicts', () => {
  it('reports a replaced write once, holds the Secret for one interval, then lets it be written again', () => {
    const conflicts = new WriteConflicts(ours, INTERVAL);
    conflicts.wrote(target, secret('10', 'controller-a'), 1000);
    expect(conflicts.observe(new Map([[key, secret('10', 'controller-a')]]), 1500)).toEqual([]);
    expect(conflicts.holds(target, 1500)).toBe(false);

    const found = conflicts.observe(new Map([[key, secret('11', 'controller-b', 'bbbbbbbbbbbb')]]), 2000);
    expect(found.map((c) => [c.target, c.writer.identity, c.ourWriteAt, c.holdUntil])).toEqual([[target, 'controller-b', 1000, 2000 + INTERVAL]]);
    // Reported once: the same replacement seen again is not a new conflict.
    expect(conflicts.observe(new Map([[key, secret('11', 'controller-b')]]), 2500)).toEqual([]);
    expect(conflicts.holds(target, 2000 + INTERVAL - 1)).toBe(true);
    expect(conflicts.holds({ namespace: 'team-2' }, 2500)).toBe(false);
    expect(conflicts.holds(target, 2000 + INTERVAL)).toBe(false);
  });

  it('forgets writes changed without another stamp (an edit by hand keeps ours) and writes older than the interval', () => {
    const conflicts = new WriteConflicts(ours, INTERVAL);
    conflicts.wrote(target, secret('10', 'controller-a'), 1000);
    expect(conflicts.observe(new Map([[key, secret('11', 'controller-a')]]), 2000)).toEqual([]);
    // The write it remembered is gone: a later replacement of version 11 is not ours to report.
    expect(conflicts.observe(new Map([[key, secret('12', 'controller-b')]]), 3000)).toEqual([]);
    conflicts.wrote(target, secret('20', 'controller-a'), 4000);
    expect(conflicts.observe(new Map([[key, secret('21', 'controller-b')]]), 4000 + INTERVAL + 1)).toEqual([]);
    expect(conflicts.holds(target, 4000 + INTERVAL + 1)).toBe(false);
  });
});
