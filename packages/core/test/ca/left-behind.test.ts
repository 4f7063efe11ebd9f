import { beforeAll, describe, expect, it } from '@jest/globals';
import { type Issued, minutes, seconds } from '@eso-mtls/core';
import { isLeftBehind, lacksSigningCa, leftBehindFrom, leftBehindMessage, refusalGrace, refusalsAreLocal } from '../../src/ca/left-behind.js';
import { issueCaGenerations } from '../support/ca-secrets.js';
import { Pki, T0 } from '../support/planner.js';

// The rules of a provider Secret the controller cannot write (docs/ca-rotation.md), each on its own.
const pki = new Pki();
const policy = { propagationDelay: seconds(10), reconcileInterval: minutes(10) };
let active: Issued, next: Issued;

beforeAll(async () => {
  ({ active, next } = await issueCaGenerations(pki));
});

const existing = (ca: Issued) => ({ kind: 'existing' as const, keyed: ca });

describe('refusalGrace, leftBehindFrom and isLeftBehind', () => {
  it('refused writes hold the rotation for one propagationDelay plus one reconcileInterval, from the first refusal', () => {
    expect(refusalGrace(policy)).toBe(seconds(10) + minutes(10));
    expect(leftBehindFrom({ refusedSince: T0 }, policy)).toBe(T0 + refusalGrace(policy));
    expect(isLeftBehind({ refusedSince: T0 }, T0 + refusalGrace(policy) - 1, policy)).toBe(false);
    expect(isLeftBehind({ refusedSince: T0 }, T0 + refusalGrace(policy), policy)).toBe(true);
  });

  it('a bundle whose writes are not refused (or only transiently, which the adapter never reports) is never left behind', () => {
    expect(leftBehindFrom({}, policy)).toBeUndefined();
    expect(isLeftBehind({}, Number.MAX_SAFE_INTEGER, policy)).toBe(false);
  });
});

describe('refusalsAreLocal', () => {
  it("is true while at least one served provider namespace is written; a refusal everywhere is the cluster's, not a tenant's", () => {
    const refused = { since: T0, reason: 'refused' as const, detail: 'forbidden' };
    expect(refusalsAreLocal([refused, undefined])).toBe(true);
    expect(refusalsAreLocal([refused, refused])).toBe(false);
    expect(refusalsAreLocal([refused])).toBe(false);
  });
});

describe('lacksSigningCa', () => {
  it('is true when the bundle lacks the active or the next CA, or a CA still to be generated', () => {
    const both = { active: existing(active), next: existing(next), retired: [] };
    expect(lacksSigningCa([active.certificate, next.certificate], both)).toBe(false);
    expect(lacksSigningCa([active.certificate], both)).toBe(true);
    expect(lacksSigningCa([next.certificate], both)).toBe(true);
    expect(lacksSigningCa([active.certificate], { active: existing(active), next: { kind: 'generate' }, retired: [] })).toBe(true);
  });

  it('a retired CA the bundle lacks does not count, and an unreadable bundle lacks everything', () => {
    expect(lacksSigningCa([next.certificate], { active: existing(next), retired: [active.certificate] })).toBe(false);
    expect(lacksSigningCa(undefined, { active: existing(next), retired: [] })).toBe(true);
  });
});

describe('leftBehindMessage', () => {
  it('names the namespace, the Secret, since when, what breaks and what to do, for each reason', () => {
    const immutable = leftBehindMessage('team-a', { since: T0, reason: 'immutable', detail: 'field is immutable' }, policy);
    expect(immutable).toContain('namespace team-a is left behind by the CA rotation');
    expect(immutable).toContain('Secret external-secrets-provider-tls is marked immutable: true');
    expect(immutable).toContain(new Date(T0).toISOString());
    expect(immutable).toContain('after 610s');
    expect(immutable).toContain("refuses ESO's client certificate");
    expect(immutable).toContain('Delete the Secret');
    const refused = leftBehindMessage('team-b', { since: T0, reason: 'refused', detail: 'admission webhook "deny.example.com" denied the request' }, policy);
    expect(refused).toContain('admission webhook "deny.example.com" denied the request');
    expect(refused).toContain('Lift the policy or permission');
  });

  it("bounds the apiserver's answer it quotes", () => {
    const long = leftBehindMessage('team-b', { since: T0, reason: 'refused', detail: 'x'.repeat(10_000) }, policy);
    expect(long.length).toBeLessThan(1200);
  });
});
