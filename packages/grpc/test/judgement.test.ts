import { beforeAll, describe, expect, it } from '@jest/globals';
import { CertificateCache, type DataProblem, observeLeafSecret } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { type TlsMaterialPems, TlsMaterialError, checkTlsMaterial } from '../src/index.js';
import { type KeyPair, type TestCa, issueTestCa, issueTestServer } from '@eso-mtls/test-kit/pki';

// The controller (the core's observeLeafSecret) and the provider (checkTlsMaterial) judge the same
// bytes of a Secret: every problem both can name, they name alike (docs/connections-and-rotation.md).
let ca: TestCa;
let server: KeyPair;
let other: KeyPair;
beforeAll(async () => {
  ca = await issueTestCa();
  server = await issueTestServer(ca);
  other = await issueTestServer(ca);
});

const cache = new CertificateCache(createNodeCryptoBackend().verifier);

/** The controller's verdict: the first problem of tls.crt/tls.key, then of ca.crt. */
function controllerVerdict(pems: TlsMaterialPems): DataProblem | 'ok' {
  const observed = observeLeafSecret({ 'tls.crt': pems.certificate, 'tls.key': pems.privateKey, 'ca.crt': pems.caBundle }, cache);
  if (!observed.leaf.ok) return observed.leaf.problem;
  if (!observed.bundle.ok) return observed.bundle.problem;
  return 'ok';
}

function providerVerdict(pems: TlsMaterialPems): string {
  try {
    checkTlsMaterial(pems, { purpose: 'serverAuth', now: Date.now() });
    return 'ok';
  } catch (e) {
    if (e instanceof TlsMaterialError) return e.reason;
    throw e;
  }
}

describe('one vocabulary of certificate problems', () => {
  const cases: [string, () => TlsMaterialPems][] = [
    ['a good Secret', () => ({ certificate: server.cert, privateKey: server.key, caBundle: ca.cert })],
    ['every value empty', () => ({ certificate: '', privateKey: '', caBundle: '' })],
    ['tls.crt missing', () => ({ certificate: '', privateKey: server.key, caBundle: ca.cert })],
    ['tls.key missing', () => ({ certificate: server.cert, privateKey: '', caBundle: ca.cert })],
    ['tls.crt garbage', () => ({ certificate: 'not a certificate', privateKey: server.key, caBundle: ca.cert })],
    ['tls.key garbage', () => ({ certificate: server.cert, privateKey: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n', caBundle: ca.cert })],
    ['tls.key of another leaf', () => ({ certificate: server.cert, privateKey: other.key, caBundle: ca.cert })],
    ['a leaf in ca.crt', () => ({ certificate: server.cert, privateKey: server.key, caBundle: `${ca.cert}${other.cert}` })],
    ['ca.crt garbage', () => ({ certificate: server.cert, privateKey: server.key, caBundle: 'garbage' })],
  ];

  it.each(cases)('%s: the controller and the provider give the same reason', (_, pems) => {
    const material = pems();
    expect(providerVerdict(material)).toBe(controllerVerdict(material));
  });

  it('where they must differ, they differ as documented: an empty ca.crt, and intermediates in tls.crt', () => {
    const noBundle = { certificate: server.cert, privateKey: server.key, caBundle: '' };
    expect([controllerVerdict(noBundle), providerVerdict(noBundle)]).toEqual(['empty', 'missing_ca_bundle']);
    const chain = { certificate: `${server.cert}${ca.cert}`, privateKey: server.key, caBundle: ca.cert };
    expect([controllerVerdict(chain), providerVerdict(chain)]).toEqual(['multiple_certificates', 'ok']);
  });
});
