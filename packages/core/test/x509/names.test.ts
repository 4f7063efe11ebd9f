import { describe, expect, it } from '@jest/globals';
import { InvalidNameError, clientSpiffeId, isDnsLabel, isDnsName, namespaceDnsNames, serviceDnsNames } from '@eso-mtls/core';

describe('DNS-1123 checks', () => {
  it('labels: lower-case alphanumerics and inner dashes, 1 to 63 characters', () => {
    for (const ok of ['a', 'a1', 'my-provider', '0abc', 'x'.repeat(63)]) expect(isDnsLabel(ok)).toBe(true);
    for (const bad of ['', 'A', 'a_b', '-a', 'a-', 'a.b', 'x'.repeat(64), 'ü']) expect(isDnsLabel(bad)).toBe(false);
  });

  it('names: dot-separated labels, at most 253 characters', () => {
    expect(isDnsName('cluster.local')).toBe(true);
    expect(isDnsName(Array.from({ length: 4 }, () => 'x'.repeat(63)).join('.'))).toBe(false); // 255 characters
    expect(isDnsName([...Array.from({ length: 3 }, () => 'x'.repeat(63)), 'x'.repeat(61)].join('.'))).toBe(true); // 253
    for (const bad of ['', '.', 'a..b', 'a.', '.a', 'A.b']) expect(isDnsName(bad)).toBe(false);
  });
});

describe('serviceDnsNames', () => {
  it('gives svc, svc.ns, svc.ns.svc and svc.ns.svc.<domain>', () => {
    expect(serviceDnsNames({ namespace: 'team-a', name: 'vault' }, 'cluster.local')).toEqual([
      'vault',
      'vault.team-a',
      'vault.team-a.svc',
      'vault.team-a.svc.cluster.local',
    ]);
    expect(serviceDnsNames({ namespace: 'ns', name: 'p' }, 'corp.example')).toContain('p.ns.svc.corp.example');
  });

  it('rejects names that cannot be SANs, naming the value', () => {
    expect(() => serviceDnsNames({ namespace: 'ns', name: 'Vault' }, 'cluster.local')).toThrow(InvalidNameError);
    expect(() => serviceDnsNames({ namespace: 'ns', name: 'Vault' }, 'cluster.local')).toThrow(/Service name "Vault" in namespace "ns"/);
    expect(() => serviceDnsNames({ namespace: 'n_s', name: 'p' }, 'cluster.local')).toThrow(/namespace "n_s"/);
    expect(() => serviceDnsNames({ namespace: 'ns', name: 'p' }, 'bad..domain')).toThrow(/cluster domain "bad..domain"/);
    const longDomain = Array.from({ length: 3 }, () => 'd'.repeat(60)).join('.');
    expect(() => serviceDnsNames({ namespace: 'n'.repeat(40), name: 'p'.repeat(40) }, longDomain)).toThrow(/longer than 253 characters/);
  });
});

describe('namespaceDnsNames', () => {
  it("is the sorted, de-duplicated union of every Service's names", () => {
    const names = namespaceDnsNames(
      [
        { namespace: 'ns', name: 'b' },
        { namespace: 'ns', name: 'a' },
        { namespace: 'ns', name: 'b' },
      ],
      'cluster.local',
    );
    expect(names).toEqual(['a', 'a.ns', 'a.ns.svc', 'a.ns.svc.cluster.local', 'b', 'b.ns', 'b.ns.svc', 'b.ns.svc.cluster.local']);
    expect(namespaceDnsNames([], 'cluster.local')).toEqual([]);
  });

  it('does not depend on the order of the Services', () => {
    const services = ['z', 'm', 'a', 'k'].map((name) => ({ namespace: 'ns', name }));
    expect(namespaceDnsNames(services, 'cluster.local')).toEqual(namespaceDnsNames([...services].reverse(), 'cluster.local'));
  });
});

describe('clientSpiffeId', () => {
  it('is spiffe://<clusterDomain>/ns/<namespace>/sa/<serviceAccount>', () => {
    expect(clientSpiffeId('cluster.local', 'external-secrets-system', 'external-secrets')).toBe(
      'spiffe://cluster.local/ns/external-secrets-system/sa/external-secrets',
    );
  });
});
