import { describe, expect, it } from '@jest/globals';
import { ROTATION_REASONS, type CertificateView, days, hours, minutes, resolvePolicy, seconds } from '@eso-mtls/core';
import {
  LEAF_RULES,
  type LeafRuleContext,
  caMismatchRule,
  caRotatedRule,
  dnsChangedRule,
  evaluateLeafRules,
  expiringRule,
  forcedRule,
  initialRule,
  invalidRule,
  issuedNoLaterThan,
  renewalTime,
  rotationJitter,
  secretMissingRule,
} from '../../src/policy/rules.js';
import { T0, policy, view } from '../support/planner.js';

const active = view({ serialNumber: 'ac', subject: 'CN=active', isCa: true });
const retired = view({ serialNumber: 'ae', subject: 'CN=retired', isCa: true });
const names = ['p', 'p.ns', 'p.ns.svc', 'p.ns.svc.cluster.local'];
const leaf = (fields: Partial<CertificateView> = {}): CertificateView =>
  view({ serialNumber: '01', issuer: 'CN=active', dnsNames: names, notBefore: T0, notAfter: T0 + days(90), ...fields });

/** A healthy server leaf at T0; each test breaks one thing. */
function ctx(overrides: Partial<LeafRuleContext> = {}, certificate = leaf()): LeafRuleContext {
  return {
    now: T0,
    policy,
    subject: 'namespace ns',
    presence: 'present',
    previouslyIssued: true,
    leaf: { ok: true, value: { certificate, privateKeyPem: 'key' } },
    trust: { active, retired: [retired] },
    isSignedBy: (l, ca) => l.issuer === ca.subject,
    identity: { kind: 'server', dnsNames: names },
    ...overrides,
  };
}

describe('leaf rules', () => {
  it('are listed in the precedence order of ROTATION_REASONS', () => {
    expect(ROTATION_REASONS).toEqual(['invalid', 'secret_missing', 'forced', 'ca_rotated', 'ca_mismatch', 'dns_changed', 'expiring', 'initial']);
    expect(LEAF_RULES).toEqual([invalidRule, secretMissingRule, forcedRule, caRotatedRule, caMismatchRule, dnsChangedRule, expiringRule, initialRule]);
  });

  it('a healthy leaf triggers nothing', () => {
    for (const rule of LEAF_RULES) expect(rule(ctx())).toBeUndefined();
    expect(evaluateLeafRules(ctx())).toBeUndefined();
  });

  it('invalid: our Secret holds unusable data, with the problem in the message', () => {
    const t = invalidRule(ctx({ leaf: { ok: false, problem: 'key_mismatch', detail: 'tls.key is not the key of tls.crt' } }));
    expect(t).toEqual({ reason: 'invalid', message: 'namespace ns: key_mismatch: tls.key is not the key of tls.crt' });
    expect(invalidRule(ctx({ presence: 'absent', leaf: undefined }))).toBeUndefined();
  });

  it('secret_missing vs initial: an absent Secret is missing only when it was issued before', () => {
    const absent = { presence: 'absent' as const, leaf: undefined };
    expect(secretMissingRule(ctx({ ...absent, previouslyIssued: true }))?.reason).toBe('secret_missing');
    expect(initialRule(ctx({ ...absent, previouslyIssued: true }))).toBeUndefined();
    expect(secretMissingRule(ctx({ ...absent, previouslyIssued: false }))).toBeUndefined();
    expect(initialRule(ctx({ ...absent, previouslyIssued: false }))?.reason).toBe('initial');
  });

  it('initial: an empty placeholder Secret is adopted', () => {
    expect(initialRule(ctx({ presence: 'placeholder', leaf: undefined }))).toEqual({
      reason: 'initial',
      message: 'namespace ns: adopting an empty placeholder Secret',
    });
  });

  it('forced: only for an existing Secret', () => {
    expect(forcedRule(ctx({ forcedBy: 'Service annotation (t1)' }))).toEqual({
      reason: 'forced',
      message: 'namespace ns: rotation requested by Service annotation (t1)',
    });
    expect(evaluateLeafRules(ctx({ forcedBy: 'x', presence: 'absent', leaf: undefined, previouslyIssued: false }))?.reason).toBe('initial');
  });

  it('ca_rotated: signed by a retired CA', () => {
    const t = caRotatedRule(ctx({}, leaf({ issuer: 'CN=retired' })));
    expect(t?.reason).toBe('ca_rotated');
    expect(t?.message).toContain('CN=retired');
    expect(caMismatchRule(ctx({}, leaf({ issuer: 'CN=retired' })))).toBeUndefined();
  });

  it('ca_mismatch: signed by none of our CAs, or while a new CA is yet to be generated', () => {
    expect(caMismatchRule(ctx({}, leaf({ issuer: 'CN=intruder' })))?.reason).toBe('ca_mismatch');
    expect(caRotatedRule(ctx({}, leaf({ issuer: 'CN=intruder' })))).toBeUndefined();
    expect(caMismatchRule(ctx({ trust: { retired: [] } }))?.reason).toBe('ca_mismatch');
    // A leaf signed by the next CA (which never signs) is not one of ours either.
    expect(caMismatchRule(ctx({ trust: { active, next: retired, retired: [] } }, leaf({ issuer: 'CN=retired' })))?.reason).toBe('ca_mismatch');
  });

  it('dns_changed: compares the name sets, ignoring order and duplicates', () => {
    expect(dnsChangedRule(ctx({}, leaf({ dnsNames: [...names].reverse().concat('p') })))).toBeUndefined();
    const t = dnsChangedRule(ctx({ identity: { kind: 'server', dnsNames: names.slice(0, 2) } }));
    expect(t?.reason).toBe('dns_changed');
    expect(t?.message).toBe('namespace ns: DNS names changed from 4 to 2: removed [p.ns.svc, p.ns.svc.cluster.local]');
  });

  it('dns_changed: the client identity must match the policy', () => {
    const identity = { kind: 'client' as const, uri: 'spiffe://cluster.local/ns/eso/sa/eso', commonName: 'external-secrets-core' };
    const client = leaf({ dnsNames: [], uris: [identity.uri], subjectCommonName: identity.commonName });
    expect(dnsChangedRule(ctx({ identity }, client))).toBeUndefined();
    expect(
      dnsChangedRule(ctx({ identity }, leaf({ dnsNames: [], uris: ['spiffe://cluster.local/ns/other/sa/eso'], subjectCommonName: identity.commonName })))
        ?.reason,
    ).toBe('dns_changed');
    expect(dnsChangedRule(ctx({ identity }, leaf({ dnsNames: [], uris: [identity.uri], subjectCommonName: 'someone' })))?.reason).toBe('dns_changed');
  });

  it('expiring: fires exactly at the renewal time', () => {
    const l = leaf();
    const due = renewalTime(l, policy);
    expect(expiringRule(ctx({ now: due - 1 }, l))).toBeUndefined();
    expect(expiringRule(ctx({ now: due }, l))?.reason).toBe('expiring');
  });

  it('precedence: the first matching rule wins', () => {
    const everything = leaf({ issuer: 'CN=retired', dnsNames: ['old'], notAfter: T0 + hours(1) });
    expect(evaluateLeafRules(ctx({ forcedBy: 'x' }, everything))?.reason).toBe('forced');
    expect(evaluateLeafRules(ctx({}, everything))?.reason).toBe('ca_rotated');
    expect(evaluateLeafRules(ctx({}, leaf({ issuer: 'CN=x', dnsNames: ['old'] })))?.reason).toBe('ca_mismatch');
    expect(evaluateLeafRules(ctx({}, leaf({ dnsNames: ['old'], notAfter: T0 + hours(1) })))?.reason).toBe('dns_changed');
    expect(evaluateLeafRules(ctx({ leaf: { ok: false, problem: 'empty', detail: 'empty' }, forcedBy: 'x' }))?.reason).toBe('invalid');
  });
});

describe('renewal time and jitter', () => {
  it('jitter is deterministic, within [0, leafJitter], whole seconds, and spreads serials', () => {
    const serials = Array.from({ length: 500 }, (_, i) => (0x1000 + i * 7919).toString(16));
    const jitters = serials.map((s) => rotationJitter(s, days(3)));
    expect(serials.map((s) => rotationJitter(s, days(3)))).toEqual(jitters);
    for (const j of jitters) {
      expect(j).toBeGreaterThanOrEqual(0);
      expect(j).toBeLessThanOrEqual(days(3));
      expect(j % 1000).toBe(0);
    }
    // Leaves issued together spread over the window: every 12-hour slice gets some.
    const slices = new Set(jitters.map((j) => Math.floor(j / hours(12))));
    expect(slices.size).toBeGreaterThanOrEqual(6);
    expect(rotationJitter('abc', 0)).toBe(0);
  });

  it('renewal = notAfter − leafLookahead − jitter, truncated to the second', () => {
    const p = resolvePolicy({ leafJitter: minutes(90) });
    const l = leaf({ serialNumber: '7f3a', notAfter: T0 + days(90) + 456 });
    const due = renewalTime(l, p);
    expect(due).toBe(Math.floor((l.notAfter - p.leafLookahead - rotationJitter('7f3a', p.leafJitter)) / 1000) * 1000);
    expect(due % 1000).toBe(0);
    expect(l.notAfter - due).toBeGreaterThanOrEqual(p.leafLookahead);
    expect(l.notAfter - due).toBeLessThanOrEqual(p.leafLookahead + p.leafJitter + seconds(1));
  });

  it('issuedNoLaterThan bounds the issue time from notBefore and the backdate', () => {
    expect(issuedNoLaterThan(leaf({ notBefore: T0 }), policy)).toBe(T0 + policy.notBeforeBackdate + 1000);
  });
});
