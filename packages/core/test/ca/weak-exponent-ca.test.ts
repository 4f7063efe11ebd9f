import { describe, expect, it } from '@jest/globals';
import { days, issueCa, resolvePolicy } from '@eso-mtls/core';
import { T0, convergedCluster, describeWrites, reconcile, text } from '../support/planner.js';
import { weakExponentCrypto } from '../support/weak-exponent.js';

// The planner and a CA whose RSA key has a public exponent other than 65537 (an adopted CA Secret,
// a key written by hand): observing refuses it (weak_key, see observe.test.ts), and the CA
// recovery must neither sign with it nor restore it from the client Secret's bundle.

describe('planner: a CA key with a weak RSA exponent', () => {
  it('a CA whose RSA key has public exponent 3 is never signed with nor restored, even from the client Secret: a new CA is recovered', async () => {
    const { pki, store } = await convergedCluster();
    const weak = await issueCa({ crypto: weakExponentCrypto(pki.crypto, 3), policy: resolvePolicy({ keyAlgorithm: 'RSA-3072' }), now: T0 });
    const ca = store.get('ca')!;
    store.put('ca', { ...ca, data: { 'ca.crt': weak.certificate.pem, 'ca.key': weak.privateKeyPem } });
    // Its certificate in the client Secret's bundle too, as after a cluster that once trusted it: restore must not bring it back.
    const client = store.get('client')!;
    store.put('client', { ...client, data: { ...client.data, 'ca.crt': `${text(client, 'ca.crt')}${weak.certificate.pem}` } });
    const { plan, writes } = await reconcile(store, pki, T0 + days(1));
    expect(plan.ca).toMatchObject({ phases: ['recover'], reason: 'invalid' });
    expect(plan.ca!.message).toContain('an RSA key of 3072 bits with public exponent 3; only 65537 is accepted');
    expect(describeWrites(writes)[0]).toBe('ca:recover');
    // A new CA is on its way; the weak one signed no leaf in use, so it is not even kept as retired.
    const written = store.get('ca')!;
    expect(Object.keys(written.data).sort()).toEqual(['next.crt', 'next.key', 'retired.crt']);
    expect(Object.values(written.data).join('')).not.toContain(weak.certificate.pem.trim());
  });
});
