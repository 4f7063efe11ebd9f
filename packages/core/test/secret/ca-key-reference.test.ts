// The CA Secret's key fields without any HSM: how the software backend reads a key reference, and a
// Secret that names its key twice. The PKCS#11 signer itself is tested against SoftHSM2 in packages/pkcs11.
import { describe, expect, test } from '@jest/globals';
import { CertificateCache, days, issueCa, observeCaSecret, resolvePolicy } from '@eso-mtls/core';
import { nodeBackend } from '../support/fixtures.js';

const T0 = Date.UTC(2026, 0, 1);
const crypto = nodeBackend();
const REFERENCE = 'pkcs11:token=eso;object=eso-mtls-ca-00;id=%00;type=private';

describe('CA key references in the CA Secret', () => {
  test('a Secret naming its active key both as ca.key and ca.key-ref is unreadable: the planner does not guess', async () => {
    const ca = await issueCa({ crypto, policy: resolvePolicy(), now: T0 });
    const observed = observeCaSecret(
      { 'ca.crt': ca.certificate.pem, 'ca.key': ca.privateKeyPem, 'ca.key-ref': REFERENCE },
      new CertificateCache(crypto.verifier),
    );
    expect(observed.active).toMatchObject({ ok: false, problem: 'garbage_pem', detail: expect.stringContaining('both ca.key and ca.key-ref') });
  });

  test('without a caSigner, a reference is an unreadable key (switching the HSM mode off recovers), never a missing one', async () => {
    const ca = await issueCa({ crypto, policy: resolvePolicy(), now: T0 + days(1) });
    const observed = observeCaSecret({ 'ca.crt': ca.certificate.pem, 'ca.key-ref': REFERENCE }, new CertificateCache(crypto.verifier));
    expect(observed.active).toMatchObject({ ok: false, problem: 'garbage_pem', detail: 'ca.key-ref is not a readable private key' });
  });

  test('software mode is unchanged: ca.key is read as before and written as before', async () => {
    const ca = await issueCa({ crypto, policy: resolvePolicy(), now: T0 });
    const observed = observeCaSecret({ 'ca.crt': ca.certificate.pem, 'ca.key': ca.privateKeyPem }, new CertificateCache(crypto.verifier));
    expect(observed.active).toEqual({ ok: true, value: { certificate: ca.certificate, privateKeyPem: ca.privateKeyPem } });
    expect(ca.privateKeyPem).toContain('BEGIN PRIVATE KEY');
  });
});
