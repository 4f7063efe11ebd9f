import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateKeyPairSync } from 'node:crypto';
import {
  POD_DENY_REASONS,
  POD_KEY_TYPES,
  type PodMetadataView,
  type PodRequestDecision,
  type PodRequestView,
  type SelectingService,
  decidePodRequest,
  resolvePolicy,
} from '@eso-mtls/core';
import { MAX_DNS_NAME_BYTES, dnsNamesBytes } from '../../src/x509/name-budget.js';
import { selects } from '../../src/pod/pod-request.js';
import { tempDir } from '../support/fixtures.js';
import { type KeyPair, POD_KEYS, spkiOf, stubRequest } from '../support/pod-keys.js';

// decidePodRequest on requests carrying real stub PKCS#10 requests made by OpenSSL: each rule in
// its order (pod, UID, stub request, key type, then the signer's own rule), with the exact Deny
// reason, and the names an issued server certificate carries.

const tmp = tempDir('pod-request');
afterAll(() => tmp.remove());

const UNSUPPORTED: readonly (readonly [string, () => KeyPair, string])[] = [
  ['RSA-2048', () => generateKeyPairSync('rsa', { modulusLength: 2048 }), 'an RSA key of 2048 bits'],
  ['P-224', () => generateKeyPairSync('ec', { namedCurve: 'secp224r1' }), 'an ECDSA key on curve P-224'],
  ['secp256k1', () => generateKeyPairSync('ec', { namedCurve: 'secp256k1' }), 'an ECDSA key on curve secp256k1'],
  ['Ed448', () => generateKeyPairSync('ed448'), 'a key of type Ed448 (algorithm 1.3.101.113)'],
];

const pairs = new Map<string, KeyPair>();
const stubs = new Map<string, Uint8Array>();
beforeAll(() => {
  for (const [name, make] of [...Object.entries(POD_KEYS), ...UNSUPPORTED.map(([n, m]) => [n, m] as const)]) {
    const pair = make();
    pairs.set(name, pair);
    stubs.set(name, stubRequest(tmp, name, pair));
  }
});

const policy = resolvePolicy({ esoNamespace: 'eso', serviceAccount: 'eso-core', clusterDomain: 'cluster.local' });
const LABELS = { app: 'provider', tier: 'secrets', 'app.kubernetes.io/name': 'vault-provider' };
const pod: PodMetadataView = { uid: '6f1c0a52-0d7e-4c2e-9d43-3b8c1c7f0a11', labels: LABELS };
const request = (overrides: Partial<PodRequestView> = {}): PodRequestView => ({
  namespace: 'team-a',
  role: 'server',
  podName: 'provider-0',
  podUid: pod.uid,
  serviceAccountName: 'provider',
  stubPkcs10Request: stubs.get('ECDSAP256')!,
  ...overrides,
});
const clientRequest = (overrides: Partial<PodRequestView> = {}): PodRequestView =>
  request({ namespace: 'eso', role: 'client', podName: 'external-secrets-7d9f', serviceAccountName: 'eso-core', ...overrides });
const PROVIDER: SelectingService = { name: 'provider', selector: { app: 'provider' } };

/** The four names the design gives a Service, for the default cluster domain. */
const fourNames = (service: string, namespace: string): string[] => [
  service,
  `${service}.${namespace}`,
  `${service}.${namespace}.svc`,
  `${service}.${namespace}.svc.cluster.local`,
];

/** decidePodRequest for `req` with the fixture pod (or none, 'gone') and `services`. */
function decide(req: PodRequestView, services: readonly SelectingService[] = [PROVIDER], p: PodMetadataView | 'gone' = pod): PodRequestDecision {
  return decidePodRequest({ request: req, pod: p === 'gone' ? undefined : p, services, policy });
}

function issued(d: PodRequestDecision): Extract<PodRequestDecision, { kind: 'issue' }> {
  if (d.kind !== 'issue') throw new Error(`expected an issue decision, got ${JSON.stringify(d)}`);
  return d;
}

describe('decidePodRequest: the pod', () => {
  it('Denies PodNotFound when the pod is gone, before reading anything else', () => {
    expect(decide(request({ stubPkcs10Request: Uint8Array.of(1, 2, 3) }), [], 'gone')).toEqual({
      kind: 'deny',
      reason: 'PodNotFound',
      message: 'pod team-a/provider-0 does not exist (any more)',
    });
    expect(decide(clientRequest(), [], 'gone')).toMatchObject({ kind: 'deny', reason: 'PodNotFound' });
  });

  it('Denies PodMismatch when the pod has another UID (a pod recreated under the same name)', () => {
    expect(decide(request({ podUid: '00000000-0000-0000-0000-000000000000' }))).toEqual({
      kind: 'deny',
      reason: 'PodMismatch',
      message: `pod team-a/provider-0 has UID ${pod.uid}, not the request's 00000000-0000-0000-0000-000000000000`,
    });
  });
});

describe('decidePodRequest: the stub request and its key', () => {
  it('Denies InvalidStubRequest for a stub request that is not one DER CertificationRequest', () => {
    const stub = stubs.get('ECDSAP256')!;
    for (const bad of [new Uint8Array(0), Uint8Array.from([...stub, 0]), stub.subarray(0, 40), new Uint8Array(20_000)]) {
      const d = decide(request({ stubPkcs10Request: bad }));
      expect(d).toMatchObject({ kind: 'deny', reason: 'InvalidStubRequest' });
      expect((d as { message: string }).message).toMatch(/^the stub PKCS#10 request of pod team-a\/provider-0 is unreadable: \S/);
    }
  });

  it.each(UNSUPPORTED.map(([name, , words]) => [name, words]))('Denies UnsupportedKeyType for %s, naming it and the accepted types', (name, words) => {
    for (const req of [request({ stubPkcs10Request: stubs.get(name)! }), clientRequest({ stubPkcs10Request: stubs.get(name)! })]) {
      expect(decide(req)).toEqual({
        kind: 'deny',
        reason: 'UnsupportedKeyType',
        message: `pod ${req.namespace}/${req.podName} asks for ${words}; this signer issues for RSA3072, RSA4096, ECDSAP256, ECDSAP384, ECDSAP521, ED25519`,
      });
    }
  });

  it.each(POD_KEY_TYPES)('issues for a %s key, certifying exactly the stub request key', (type) => {
    const d = issued(decide(request({ stubPkcs10Request: stubs.get(type)! })));
    expect(d.keyType).toBe(type);
    expect(d.subjectPublicKeyInfo).toEqual(spkiOf(pairs.get(type)!));
    const c = issued(decide(clientRequest({ stubPkcs10Request: stubs.get(type)! })));
    expect([c.keyType, c.subjectPublicKeyInfo]).toEqual([type, spkiOf(pairs.get(type)!)]);
  });
});

describe('decidePodRequest: the server signer', () => {
  it('issues the four names of the one selecting Service', () => {
    expect(decide(request())).toEqual({
      kind: 'issue',
      role: 'server',
      subjectPublicKeyInfo: spkiOf(pairs.get('ECDSAP256')!),
      keyType: 'ECDSAP256',
      dnsNames: fourNames('provider', 'team-a').sort(),
      services: ['provider'],
      refused: [],
    });
  });

  const noService = {
    kind: 'deny',
    reason: 'NoProviderService',
    message:
      'no Service labelled external-secrets.io/provider=true in namespace team-a selects pod provider-0; label one whose selector matches the pod, and the next request is issued',
  };

  it('Denies NoProviderService when the namespace has no labelled Service', () => {
    expect(decide(request(), [])).toEqual(noService);
  });

  it.each<[string, SelectingService]>([
    ['without a selector', { name: 'headless' }],
    ['with an empty selector', { name: 'empty', selector: {} }],
    ['whose value differs', { name: 'other', selector: { app: 'other' } }],
    ['with a key the pod lacks', { name: 'wider', selector: { app: 'provider', tier: 'secrets', zone: 'a' } }],
    ['matching a label value as a key', { name: 'swapped', selector: { provider: 'app' } }],
  ])('Denies NoProviderService when the only Service is one %s', (_, service) => {
    expect(decide(request(), [service])).toEqual(noService);
  });

  it('a selector selects when every pair is among the pod labels: a subset, or all of them', () => {
    const all = { name: 'all', selector: { ...LABELS } };
    const two = { name: 'two', selector: { tier: 'secrets', 'app.kubernetes.io/name': 'vault-provider' } };
    expect(issued(decide(request(), [all])).services).toEqual(['all']);
    expect(issued(decide(request(), [two])).services).toEqual(['two']);
  });

  it('several selecting Services: the names of all, sorted, and only theirs', () => {
    const services: SelectingService[] = [
      { name: 'zeta', selector: { tier: 'secrets' } },
      { name: 'alpha', selector: { app: 'provider' } },
      { name: 'not-me', selector: { app: 'other' } },
      { name: 'metrics', selector: { app: 'provider', tier: 'secrets' } },
      { name: 'headless' },
    ];
    const d = issued(decide(request(), services));
    expect(d.services).toEqual(['alpha', 'metrics', 'zeta']);
    expect(d.dnsNames).toEqual(['alpha', 'metrics', 'zeta'].flatMap((s) => fourNames(s, 'team-a')).sort());
    expect(d.refused).toEqual([]);
  });

  it('uses the cluster domain of the policy', () => {
    const p = resolvePolicy({ clusterDomain: 'k8s.eu-west-1.corp.example' });
    const d = issued(decidePodRequest({ request: request(), pod, services: [PROVIDER], policy: p }));
    expect(d.dnsNames).toContain('provider.team-a.svc.k8s.eu-west-1.corp.example');
    expect(d.dnsNames).not.toContain('provider.team-a.svc.cluster.local');
  });

  it('Denies InvalidServiceName for a selecting Service whose name is not a DNS label; ignores one that does not select', () => {
    const bad = { name: 'Bad_Name', selector: { app: 'provider' } };
    expect(decide(request(), [PROVIDER, bad])).toEqual({
      kind: 'deny',
      reason: 'InvalidServiceName',
      message: 'Service team-a/Bad_Name is not a DNS-1123 label',
    });
    expect(issued(decide(request(), [PROVIDER, { ...bad, selector: { app: 'other' } }])).services).toEqual(['provider']);
  });

  it('Denies ExternalNameService when only an ExternalName Service selects the pod (its selector is ignored by Kubernetes); leaves one out beside a Service that selects', () => {
    const alias = { name: 'alias', selector: { app: 'provider' }, type: 'ExternalName' };
    expect(decide(request(), [alias])).toEqual({
      kind: 'deny',
      reason: 'ExternalNameService',
      message:
        'Service team-a/alias selects pod provider-0 but is of type ExternalName, an alias of another host: its names do not lead to the pod; label a ClusterIP or headless Service that selects the pod instead',
    });
    const d = issued(decide(request(), [alias, PROVIDER]));
    expect([d.services, d.refused, [...d.dnsNames].sort()]).toEqual([['provider'], [], fourNames('provider', 'team-a').sort()]);
    expect(issued(decide(request(), [{ ...alias, type: 'ClusterIP' }])).services).toEqual(['alias']);
  });

  it('leaves out the Services whose names would make the certificate too large, rather than failing', () => {
    const namespace = `ns-${'n'.repeat(60)}`;
    const services = Array.from({ length: 300 }, (_, i) => ({ name: `svc-${String(i).padStart(3, '0')}-${'s'.repeat(55)}`, selector: { app: 'provider' } }));
    const d = issued(decide(request({ namespace }), [...services].reverse()));
    expect(d.refused.length).toBeGreaterThan(0);
    expect(d.services.length).toBeGreaterThan(0);
    // Every selecting Service is either served or refused, served ones first by name.
    const names = services.map((s) => s.name);
    expect([...d.services, ...d.refused]).toEqual(names);
    expect(d.dnsNames).toEqual(d.services.flatMap((s) => fourNames(s, namespace)).sort());
    expect(dnsNamesBytes(d.dnsNames)).toBeLessThanOrEqual(MAX_DNS_NAME_BYTES);
  });
});

describe('decidePodRequest: the namespace requirement (--require-namespace-label)', () => {
  const requirement = { key: 'eso-mtls.io/providers-allowed', value: 'true' };
  const withRequirement = (req: PodRequestView, allowed: boolean | undefined): PodRequestDecision =>
    decidePodRequest({
      request: req,
      pod,
      services: [PROVIDER],
      policy,
      namespaceRequirement: requirement,
      ...(allowed === undefined ? {} : { namespaceAllowed: allowed }),
    });

  it('Denies NamespaceNotAllowed a server request from a namespace without the label, naming the label and the fix', () => {
    expect(withRequirement(request(), false)).toEqual({
      kind: 'deny',
      reason: 'NamespaceNotAllowed',
      message: expect.stringContaining('kubectl label namespace team-a eso-mtls.io/providers-allowed=true'),
    });
  });

  it('fails closed: a namespace not known to carry the label is not allowed', () => {
    expect(withRequirement(request(), undefined)).toMatchObject({ kind: 'deny', reason: 'NamespaceNotAllowed' });
  });

  it('issues as usual in an allowed namespace, and the client signer is not governed by it', () => {
    expect(issued(withRequirement(request(), true)).services).toEqual(['provider']);
    expect(withRequirement(clientRequest(), false)).toMatchObject({ kind: 'issue', role: 'client' });
  });

  it('is judged after the pod and the key: a gone pod is still PodNotFound', () => {
    const gone = decidePodRequest({
      request: request(),
      pod: undefined,
      services: [PROVIDER],
      policy,
      namespaceRequirement: requirement,
      namespaceAllowed: false,
    });
    expect(gone).toMatchObject({ kind: 'deny', reason: 'PodNotFound' });
  });
});

describe('decidePodRequest: the client signer', () => {
  it("issues to ESO's ServiceAccount in ESO's namespace, with no DNS names, whatever the Services", () => {
    const expected = { kind: 'issue', role: 'client', keyType: 'ECDSAP256', dnsNames: [], services: [], refused: [] };
    expect(decide(clientRequest(), [])).toMatchObject(expected);
    expect(decide(clientRequest(), [PROVIDER])).toMatchObject(expected);
  });

  it.each([
    ['another namespace', { namespace: 'team-a' }, 'team-a/eso-core'],
    ['another ServiceAccount', { serviceAccountName: 'default' }, 'eso/default'],
    ['both', { namespace: 'team-a', serviceAccountName: 'provider' }, 'team-a/provider'],
  ])('Denies UnauthorizedServiceAccount for %s', (_, overrides, runsAs) => {
    const req = clientRequest(overrides);
    expect(decide(req)).toEqual({
      kind: 'deny',
      reason: 'UnauthorizedServiceAccount',
      message: `the client signer issues only to ServiceAccount eso/eso-core; pod ${req.namespace}/${req.podName} runs as ${runsAs}`,
    });
  });
});

describe('Deny reasons and messages', () => {
  it('every reason is one the apiserver accepts, and POD_DENY_REASONS lists each one', () => {
    const reason = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;
    expect(POD_DENY_REASONS.filter((r) => !reason.test(r))).toEqual([]);
    const seen = [
      decide(request(), [], 'gone'),
      decide(request({ podUid: 'x' })),
      decide(request({ stubPkcs10Request: new Uint8Array(0) })),
      decide(request({ stubPkcs10Request: stubs.get('RSA-2048')! })),
      decide(request(), []),
      decide(request(), [{ name: 'X', selector: { app: 'provider' } }]),
      decide(request(), [{ name: 'alias', selector: { app: 'provider' }, type: 'ExternalName' }]),
      decide(clientRequest({ serviceAccountName: 'x' })),
      decidePodRequest({ request: request(), pod, services: [PROVIDER], policy, namespaceRequirement: { key: 'k', value: 'v' }, namespaceAllowed: false }),
    ].map((d) => (d.kind === 'deny' ? d.reason : d.kind));
    expect(new Set(seen)).toEqual(new Set(POD_DENY_REASONS));
  });

  it('stays short whatever the request names are', () => {
    const long = 'x'.repeat(100_000);
    const messages = [
      decide(request({ podName: long }), [], 'gone'),
      decide(request({ podName: long, podUid: long })),
      decide(request({ podName: long }), []),
      decide(clientRequest({ podName: long, serviceAccountName: long })),
      decide(request(), [{ name: long, selector: { app: 'provider' } }]),
    ].map((d) => (d.kind === 'deny' ? d.message : ''));
    for (const m of messages) expect(m.length).toBeGreaterThan(0);
    expect(Math.max(...messages.map((m) => m.length))).toBeLessThan(1024);
  });
});

describe('selects', () => {
  it('needs a non-empty selector whose every pair is an own label of the pod', () => {
    expect(selects(undefined, LABELS)).toBe(false);
    expect(selects({}, LABELS)).toBe(false);
    expect(selects({}, {})).toBe(false);
    expect(selects({ app: 'provider' }, LABELS)).toBe(true);
    expect(selects({ app: 'provider' }, {})).toBe(false);
    expect(selects({ app: 'Provider' }, LABELS)).toBe(false);
    expect(selects({ app: '' }, { app: '' })).toBe(true);
    // Inherited properties are not labels.
    expect(selects({ toString: 'x' }, {})).toBe(false);
    expect(selects(JSON.parse('{"__proto__": "x"}') as Record<string, string>, {})).toBe(false);
    expect(selects(JSON.parse('{"__proto__": "x"}') as Record<string, string>, JSON.parse('{"__proto__": "x"}') as Record<string, string>)).toBe(true);
  });
});
