import { describe, expect, it } from '@jest/globals';
import { DEFAULT_POLICY, type Policy, PolicyError, days, hours, minutes, resolvePolicy } from '@eso-mtls/core';

/** The PolicyError thrown for `overrides`, or a failure if none is. */
function rejection(overrides: Partial<Record<keyof Policy, unknown>>): PolicyError {
  try {
    resolvePolicy(overrides as Partial<Policy>);
  } catch (e) {
    expect(e).toBeInstanceOf(PolicyError);
    return e as PolicyError;
  }
  throw new Error(`accepted ${JSON.stringify(overrides)}`);
}

describe('resolvePolicy', () => {
  it('gives the design defaults, frozen', () => {
    const p = resolvePolicy();
    expect(p).toEqual(DEFAULT_POLICY);
    expect(p).toMatchObject({
      caValidity: days(365),
      caLookahead: days(60),
      leafValidity: days(90),
      leafLookahead: days(35),
      reconcileInterval: minutes(10),
      clusterDomain: 'cluster.local',
      keyAlgorithm: 'ECDSA-P256',
    });
    expect(Object.isFrozen(p)).toBe(true);
  });

  it('applies overrides and ignores undefined ones', () => {
    expect(resolvePolicy({ keyAlgorithm: 'RSA-3072', clusterDomain: 'example.internal', reconcileInterval: undefined })).toMatchObject({
      keyAlgorithm: 'RSA-3072',
      clusterDomain: 'example.internal',
      reconcileInterval: minutes(10),
    });
  });

  // Each rejection names the field, shows the value, and says the rule.
  const cases: [string, Partial<Record<keyof Policy, unknown>>, keyof Policy, RegExp][] = [
    ['a negative duration', { leafJitter: -1 }, 'leafJitter', /leafJitter=-1ms: must be a non-negative whole number/],
    ['a fractional duration', { propagationDelay: 1.5 }, 'propagationDelay', /propagationDelay=1\.5ms/],
    ['a duration that is not a number', { maxConnectionAge: '30m' }, 'maxConnectionAge', /maxConnectionAge="30m"/],
    ['an infinite duration', { notBeforeBackdate: Infinity }, 'notBeforeBackdate', /notBeforeBackdate=Infinity: must be/],
    ['a reconcile interval under a second', { reconcileInterval: 999 }, 'reconcileInterval', /reconcileInterval=999ms: must be at least one second/],
    ['a cluster domain that is not a DNS name', { clusterDomain: 'Cluster.Local' }, 'clusterDomain', /clusterDomain="Cluster.Local": must be a DNS name/],
    ['a cluster domain with an empty label', { clusterDomain: 'cluster..local' }, 'clusterDomain', /"cluster..local"/],
    ['a namespace that is not a label', { esoNamespace: 'eso.system' }, 'esoNamespace', /esoNamespace="eso.system"/],
    ['a service account that is not a name', { serviceAccount: 'ESO' }, 'serviceAccount', /serviceAccount="ESO"/],
    ['an unknown key algorithm', { keyAlgorithm: 'ECDSA-P384' }, 'keyAlgorithm', /keyAlgorithm="ECDSA-P384": must be one of ECDSA-P256, RSA-2048, RSA-3072/],
    ['a leaf validity above the CA validity', { leafValidity: days(400) }, 'leafValidity', /leafValidity=400d: must not exceed caValidity \(365d\)/],
    [
      'a lookahead that makes every leaf due at birth',
      { leafLookahead: days(88) },
      'leafLookahead',
      /leafLookahead=88d: plus leafJitter must be below leafValidity \(90d\)/,
    ],
    [
      'a leaf lookahead minus jitter below 1 day + reconcile interval + propagation delay',
      { leafLookahead: days(4), leafJitter: days(3) },
      'leafLookahead',
      /leafLookahead=4d: minus leafJitter \(3d\) must be at least 1 day plus reconcileInterval plus propagationDelay \(1455m\)/,
    ],
    [
      'a CA lookahead shorter than a leaf overlap',
      { caLookahead: days(38) },
      'caLookahead',
      /caLookahead=38d: must be at least leafLookahead \+ leafJitter \+ propagationDelay \+ maxConnectionAge \+ reconcileInterval/,
    ],
    ['a CA lookahead as long as the CA lives', { caLookahead: days(365) }, 'caLookahead', /caLookahead=365d: must be below caValidity/],
    ['a backdate as long as a leaf lives', { notBeforeBackdate: days(90) }, 'notBeforeBackdate', /notBeforeBackdate=90d/],
  ];
  it.each(cases)('rejects %s, naming the field and the value', (_what, overrides, field, message) => {
    const e = rejection(overrides);
    expect(e.field).toBe(field);
    expect(e.value).toEqual(overrides[field]);
    expect(e.message).toMatch(/^invalid policy: /);
    expect(e.message).toMatch(message);
  });

  it('accepts values exactly at the limits', () => {
    const reconcileInterval = hours(1);
    const leafJitter = hours(2);
    const leafLookahead = days(1) + reconcileInterval + DEFAULT_POLICY.propagationDelay + leafJitter;
    const caLookahead = leafLookahead + leafJitter + DEFAULT_POLICY.propagationDelay + DEFAULT_POLICY.maxConnectionAge + reconcileInterval;
    expect(() => resolvePolicy({ reconcileInterval, leafJitter, leafLookahead, caLookahead })).not.toThrow();
    expect(() => resolvePolicy({ reconcileInterval, leafJitter, leafLookahead: leafLookahead - 1, caLookahead })).toThrow(PolicyError);
    expect(() => resolvePolicy({ reconcileInterval, leafJitter, leafLookahead, caLookahead: caLookahead - 1 })).toThrow(PolicyError);
    expect(() => resolvePolicy({ leafValidity: days(365), leafLookahead: days(35) })).not.toThrow();
  });
});
