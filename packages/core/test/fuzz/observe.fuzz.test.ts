/**
 * Fuzzing what reads a Secret: observeLeafSecret and observeCaSecret on arbitrary bytes and text
 * under every key they read and under others, and the planner on those Secrets with arbitrary
 * annotations (keys, values, sizes). The observers never throw: every part is a usable value or
 * one of the DataProblem classes with a detail. The planner never throws either: bad Secrets
 * become rotations or conflicts.
 *
 * Bounds: a Secret holds at most 1 MiB of data (the apiserver's cap) and its annotations at most
 * 256 KiB (likewise). A detail names the offending value but stays under 1 KiB, the size of an
 * Event message, whatever the Secret holds. Observing or planning one input ends well within the
 * controller's 10 s leader-election renew deadline, which a longer synchronous step would miss.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  CertificateCache,
  type DataProblem,
  type Observed,
  ROTATE_ACKNOWLEDGED_ANNOTATION,
  ROTATE_ANNOTATION,
  type SecretData,
  type SecretState,
  type Snapshot,
  observeCaSecret,
  observeLeafSecret,
  planRotation,
  resolvePolicy,
} from '@eso-mtls/core';
import { BUNDLE_WRITTEN_AT_ANNOTATION, SecretKeys } from '../../src/secret/observe.js';
import { encodePem } from '../../src/x509/pem.js';
import { nodeBackend } from '../support/fixtures.js';
import { fuzzParameters } from '../../../../testing/fuzz/runs.js';
import { derMutations, mutateDer } from './mutate.js';
import { allIssued, pki } from './pki.js';

const verifier = nodeBackend().verifier;
const PROBLEMS: readonly DataProblem[] = ['empty', 'garbage_pem', 'missing_key', 'missing_certificate', 'key_mismatch', 'multiple_certificates', 'not_a_ca'];
const MAX_DETAIL = 1024;
const MAX_SECRET_DATA = 1024 * 1024;
const MAX_ANNOTATIONS = 256 * 1024;
const utf8 = new TextEncoder();
const RENEW_DEADLINE_MS = 10_000;

/** `f()`, failing the property when it blocks past the renew deadline. */
function withinDeadline<T>(f: () => T): T {
  const started = performance.now();
  const result = f();
  expect(performance.now() - started).toBeLessThan(RENEW_DEADLINE_MS);
  return result;
}

/** A value filled with `unit` up to `size` characters: big values without generating each character. */
const repeated = (unit: string, size: number): string => unit.repeat(Math.ceil(size / Math.max(unit.length, 1))).slice(0, size);

/** The PEM of a certificate or key of the fixtures, whole or mutated, alone or concatenated. */
const pemValue: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...allIssued.flatMap((k) => [k.certificate.pem, k.privateKeyPem])),
  fc.tuple(fc.nat(), derMutations).map(([i, m]) => encodePem('CERTIFICATE', mutateDer(allIssued[i % allIssued.length]!.certificate.der, m))),
  fc
    .tuple(fc.nat(), derMutations, fc.constantFrom('PRIVATE KEY', 'EC PRIVATE KEY'))
    .map(([i, m, label]) =>
      encodePem(label, mutateDer(Buffer.from(allIssued[i % allIssued.length]!.privateKeyPem.split('\n').slice(1, -2).join(''), 'base64'), m)),
    ),
  fc.array(fc.constantFrom(...allIssued.map((k) => k.certificate.pem)), { minLength: 2, maxLength: 4 }).map((a) => a.join('')),
  // One element (a name, the serial, an extension...) blown up: certificates that parse but are huge.
  fc
    .tuple(fc.nat(), fc.nat(), fc.string({ minLength: 1, maxLength: 3 }), fc.integer({ min: 100, max: 200_000 }))
    .map(([i, at, unit, size]) =>
      encodePem(
        'CERTIFICATE',
        mutateDer(allIssued[i % allIssued.length]!.certificate.der, [{ kind: 'contents', at, bytes: utf8.encode(repeated(unit, size)) }]),
      ),
    ),
);

/** Anything an adapter could hand over as one value, within the Secret's size cap; some values break the type. */
const dataValue: fc.Arbitrary<SecretData[string]> = fc.oneof(
  { arbitrary: pemValue, weight: 4 },
  { arbitrary: pemValue.map((p) => utf8.encode(p)), weight: 2 },
  { arbitrary: pemValue.map((p) => p.replaceAll('\n', '\r\n')), weight: 1 },
  { arbitrary: fc.uint8Array({ maxLength: 300 }), weight: 2 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 200 }), weight: 2 },
  { arbitrary: fc.constantFrom(undefined, '', '  \n', new Uint8Array(0)), weight: 2 },
  { arbitrary: fc.tuple(pemValue, fc.integer({ min: 1, max: 3000 })).map(([p, n]) => repeated(p, Math.min(p.length * n, MAX_SECRET_DATA / 2))), weight: 1 },
  { arbitrary: fc.tuple(fc.string({ maxLength: 4 }), fc.nat(MAX_SECRET_DATA / 2)).map(([u, n]) => repeated(u, n)), weight: 1 },
  { arbitrary: fc.constantFrom(null, 42, {}, ['x']).map((v) => v as unknown as string), weight: 1 },
);

const dataKey = fc.oneof(
  { arbitrary: fc.constantFrom(...Object.values(SecretKeys)), weight: 6 },
  { arbitrary: fc.string({ maxLength: 20 }), weight: 1 },
  { arbitrary: fc.constantFrom('__proto__', 'constructor', 'toString', 'tls.crt '), weight: 1 },
);

/** A usable leaf Secret and a usable CA Secret, for arbitrary values to override. */
const usable: SecretData = {
  [SecretKeys.certificate]: pki.server.certificate.pem,
  [SecretKeys.privateKey]: pki.server.privateKeyPem,
  [SecretKeys.caCertificate]: pki.ca.certificate.pem,
  [SecretKeys.caPrivateKey]: pki.ca.privateKeyPem,
};

/** Arbitrary Secret data, alone or over usable data, trimmed to the apiserver's 1 MiB cap. */
const secretData: fc.Arbitrary<SecretData> = fc
  .tuple(fc.boolean(), fc.dictionary(dataKey, dataValue, { maxKeys: 9 }))
  .map(([overUsable, d]) => (overUsable ? { ...usable, ...d } : d))
  .map(capped(MAX_SECRET_DATA));

const annotationValue = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom('emergency', 'emergency:again', '', '2026-11-15T10:20:30Z', 'not a date', '{}', '[]', 'null', '{"a":"b"}', '{"__proto__":"x"}'),
  fc.dictionary(fc.string({ maxLength: 10 }), fc.oneof(fc.string({ maxLength: 20 }), fc.integer())).map((o) => JSON.stringify(o)),
  fc.date({ noInvalidDate: false }).map((d) => (Number.isNaN(d.getTime()) ? 'Invalid Date' : d.toISOString())),
  fc.tuple(fc.string({ maxLength: 4 }), fc.nat(MAX_ANNOTATIONS)).map(([u, n]) => repeated(u, n)),
);
const annotationKey = fc.oneof(
  fc.constantFrom(ROTATE_ANNOTATION, ROTATE_ACKNOWLEDGED_ANNOTATION, BUNDLE_WRITTEN_AT_ANNOTATION, '__proto__'),
  fc.string({ maxLength: 30 }),
);
const annotations = fc.dictionary(annotationKey, annotationValue, { maxKeys: 5 }).map(capped(MAX_ANNOTATIONS)) as fc.Arbitrary<Record<string, string>>;

/** `record` without the values past `max` characters in total, as the apiserver would refuse them. */
function capped<V>(max: number): (record: Record<string, V>) => Record<string, V> {
  return (record) => {
    let total = 0;
    const out: Record<string, V> = {};
    for (const [k, v] of Object.entries(record)) {
      total += k.length + (typeof v === 'string' || v instanceof Uint8Array ? v.length : 0);
      if (total <= max) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    }
    return out;
  };
}

function expectClassified<T>(o: Observed<T> | undefined): void {
  if (o === undefined || o.ok) return;
  expect(PROBLEMS).toContain(o.problem);
  expect(o.detail.length).toBeGreaterThan(0);
  expect(o.detail.length).toBeLessThanOrEqual(MAX_DETAIL);
}

const textOf = (v: unknown): string => (typeof v === 'string' ? v : v instanceof Uint8Array ? new TextDecoder().decode(v) : '');

describe('observing arbitrary Secret data', () => {
  const cache = new CertificateCache(verifier, { maxEntries: 256 });

  it('classifies a leaf Secret as usable parts or DataProblems, never throwing', () => {
    fc.assert(
      fc.property(secretData, (data) => {
        const o = withinDeadline(() => observeLeafSecret(data, cache));
        expectClassified(o.leaf);
        expectClassified(o.bundle);
        expect(o.bundleText).toBe(textOf(data[SecretKeys.caCertificate]));
        if (o.leaf.ok) expect(verifier.publicKeyOf(o.leaf.value.privateKeyPem)).toEqual(o.leaf.value.certificate.subjectPublicKeyInfo);
        if (o.bundle.ok) expect(o.bundle.value.every((c) => c.isCa)).toBe(true);
      }),
      fuzzParameters(150),
    );
  });

  it('classifies a CA Secret as usable parts or DataProblems, never throwing', () => {
    fc.assert(
      fc.property(secretData, (data) => {
        const o = withinDeadline(() => observeCaSecret(data, cache));
        expectClassified(o.active);
        expectClassified(o.next);
        expectClassified(o.retired);
        for (const pair of [o.active, o.next]) if (pair?.ok) expect(pair.value.certificate.isCa).toBe(true);
      }),
      fuzzParameters(150),
    );
  });
});

describe('planning over arbitrary Secrets and annotations', () => {
  const policy = resolvePolicy();
  const now = pki.ca.certificate.notBefore + 86_400_000;
  const secret = fc.record({
    data: secretData,
    ownership: fc.constantFrom('managed' as const, 'placeholder' as const, 'foreign' as const),
    annotations,
    version: fc.option(fc.string({ maxLength: 10 }), { nil: undefined }),
  }) as fc.Arbitrary<SecretState>;
  const goodCa: SecretState = { data: { 'ca.crt': pki.ca.certificate.pem, 'ca.key': pki.ca.privateKeyPem }, ownership: 'managed', annotations: {} };
  const snapshot: fc.Arbitrary<Snapshot> = fc.record({
    caSecret: fc.oneof(
      fc.constant(goodCa),
      annotations.map((a) => ({ ...goodCa, annotations: a })),
      secret,
    ),
    clientSecret: secret,
    clientPreviouslyIssued: fc.boolean(),
    namespaces: fc.array(
      fc.record({
        namespace: fc.constantFrom('team-a', 'team-b', 'x'),
        services: fc.array(fc.record({ name: fc.constantFrom('provider', 'p2', 'Bad_Name'), rotateRequest: fc.option(annotationValue, { nil: undefined }) }), {
          maxLength: 3,
        }),
        secret,
        previouslyIssued: fc.boolean(),
      }),
      { maxLength: 2 },
    ),
  });

  it('plans without throwing, with bounded messages', () => {
    const cache = new CertificateCache(verifier, { maxEntries: 256 });
    fc.assert(
      fc.property(snapshot, (s) => {
        const plan = withinDeadline(() => planRotation(s, { now, policy, cache }));
        for (const m of [...plan.conflicts, ...plan.leaves, ...plan.waiting, ...plan.refused].map((x) => x.message)) {
          expect(m.length).toBeLessThanOrEqual(4 * MAX_DETAIL);
        }
      }),
      fuzzParameters(60),
    );
  });
});
