/**
 * Fuzzing the pod-certificate request path the signer runs on every PodCertificateRequest:
 * stubRequestPublicKey and podKeyTypeOf on arbitrary bytes and on DER mutations of real stub
 * requests made by OpenSSL, and decidePodRequest on arbitrary pods, labels, selectors and Service
 * names. A node or anyone with create on PodCertificateRequests controls every one of them.
 * - The only failure stubRequestPublicKey throws is StubRequestError; podKeyTypeOf never throws.
 * - decidePodRequest never throws: it issues, or Denies with one of POD_DENY_REASONS and a reason
 *   the apiserver accepts, with a message of bounded length.
 * - An issued server decision carries only names built from the selecting Services, each a DNS
 *   name, within the certificate size bound.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { MAX_DNS_NAME_BYTES, POD_DENY_REASONS, type PodRequestDecision, decidePodRequest, isDnsName, resolvePolicy } from '@eso-mtls/core';
import { dnsNamesBytes } from '../../src/x509/name-budget.js';
import { podKeyTypeOf } from '../../src/pod/pod-key.js';
import { StubRequestError, stubRequestPublicKey } from '../../src/pod/stub-request.js';
import { tempDir } from '../support/fixtures.js';
import { POD_KEYS, stubRequest } from '../support/pod-keys.js';
import { fuzzParameters } from '../../../../testing/fuzz/runs.js';
import { derMutations, mutateDer } from './mutate.js';

const tmp = tempDir('pod-request-fuzz');
afterAll(() => tmp.remove());
const policy = resolvePolicy({ esoNamespace: 'eso', serviceAccount: 'eso-core' });
// The apiserver's pattern for a condition reason.
const REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;
const MAX_MESSAGE = 4096;

let stubs: Uint8Array[] = [];
beforeAll(() => {
  stubs = (['ECDSAP256', 'ECDSAP384', 'ED25519', 'RSA3072'] as const).map((type) => stubRequest(tmp, type, POD_KEYS[type]()));
});

/** stubRequestPublicKey's key, or null for a StubRequestError; anything else thrown fails. */
function keyOrRefusal(bytes: Uint8Array): Uint8Array | null {
  try {
    return stubRequestPublicKey(bytes);
  } catch (e) {
    if (!(e instanceof StubRequestError)) throw e;
    return null;
  }
}

function checkDecision(d: PodRequestDecision): void {
  if (d.kind === 'deny') {
    expect(POD_DENY_REASONS).toContain(d.reason);
    expect(d.reason).toMatch(REASON);
    expect(d.message.length).toBeLessThan(MAX_MESSAGE);
    return;
  }
  for (const n of d.dnsNames) expect(isDnsName(n)).toBe(true);
  expect(dnsNamesBytes(d.dnsNames)).toBeLessThanOrEqual(MAX_DNS_NAME_BYTES);
}

const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?$/);
const anyText = fc.oneof(label, fc.string({ maxLength: 300 }), fc.constant(''));
const labels = fc.dictionary(fc.oneof(label, fc.string({ maxLength: 20 })), fc.oneof(label, fc.string({ maxLength: 20 })), { maxKeys: 6 });
const services = fc.array(fc.record({ name: anyText, selector: fc.option(labels, { nil: undefined }) }), { maxLength: 40 });

describe('pod certificate requests under fuzzing', () => {
  it('stubRequestPublicKey refuses arbitrary bytes only with StubRequestError, and podKeyTypeOf never throws', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2048 }), (bytes) => {
        const key = keyOrRefusal(bytes);
        if (key !== null) podKeyTypeOf(key);
        podKeyTypeOf(bytes);
      }),
      fuzzParameters(2000),
    );
  });

  it('mutations of real stub requests: a key taken is one podKeyTypeOf can judge, and nothing else is thrown', () => {
    fc.assert(
      fc.property(fc.nat(), derMutations, (which, mutations) => {
        const mutated = mutateDer(stubs[which % stubs.length]!, mutations);
        const key = keyOrRefusal(mutated);
        if (key !== null) {
          const type = podKeyTypeOf(key);
          if (!type.ok) expect(type.detail).toContain('this signer issues for');
        }
      }),
      fuzzParameters(1000),
    );
  });

  it('decidePodRequest never throws, and Denies only with known reasons and bounded messages', () => {
    fc.assert(
      fc.property(
        fc.record({
          role: fc.constantFrom('server' as const, 'client' as const),
          namespace: anyText,
          podName: anyText,
          uid: fc.constantFrom('u1', 'u2', ''),
          serviceAccountName: fc.constantFrom('eso-core', 'other', ''),
          stub: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.uint8Array({ maxLength: 64 })),
          podExists: fc.boolean(),
          labels,
          services,
        }),
        (r) => {
          const stub = typeof r.stub === 'number' ? stubs[r.stub]! : r.stub;
          const decision = decidePodRequest({
            request: {
              namespace: r.namespace,
              role: r.role,
              podName: r.podName,
              podUid: 'u1',
              serviceAccountName: r.serviceAccountName,
              stubPkcs10Request: stub,
            },
            pod: r.podExists ? { uid: r.uid, labels: r.labels } : undefined,
            services: r.services,
            policy,
          });
          checkDecision(decision);
        },
      ),
      fuzzParameters(1000),
    );
  });
});
