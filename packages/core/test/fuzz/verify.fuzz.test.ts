/**
 * Fuzzing acceptance: bytes of a leaf/CA pair the core issued are mutated (signature, TBS,
 * validity, key, names, structure), and whatever the core would keep as valid must verify with
 * OpenSSL (node:crypto's X509Certificate and sign/verify). "Valid" is what the planner keeps:
 * the observer reports the part usable and the CertificateCache says the CA signed the leaf
 * (the leaf rules' `isSignedBy`); a stored key is usable when it signs what the certificate's
 * public key verifies.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { X509Certificate, createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { CertificateCache, type CertificateView, type KeyedCertificate, encodePem, observeCaSecret, observeLeafSecret } from '@eso-mtls/core';
import { equalBytes } from '../../src/x509/der.js';
import { nodeBackend } from '../support/fixtures.js';
import { fuzzParameters } from '../../../../testing/fuzz/runs.js';
import { type DerMutation, derMutations, mutateDer } from './mutate.js';
import { pki } from './pki.js';

const verifier = nodeBackend().verifier;
const leaves: readonly KeyedCertificate[] = [pki.server, pki.client, pki.rsaServer];
const PROBE = Buffer.from('fuzz probe');

/** True when OpenSSL reads `leaf`, finds `ca` its issuer (names, key identifiers, CA key usage) and the signature verifies. */
function opensslVerifies(leaf: Uint8Array, ca: Uint8Array): boolean {
  try {
    const l = new X509Certificate(leaf);
    const c = new X509Certificate(ca);
    return l.checkIssued(c) && l.verify(c.publicKey);
  } catch {
    return false;
  }
}

/** True when OpenSSL reads `keyPem` and a signature made with it verifies under the public key `spki` (DER). */
function opensslKeyFits(keyPem: string, spki: Uint8Array): boolean {
  try {
    const key = createPrivateKey(keyPem);
    const digest = key.asymmetricKeyType === 'ed25519' ? null : 'sha256';
    return verify(digest, PROBE, createPublicKey({ key: Buffer.from(spki), format: 'der', type: 'spki' }), sign(digest, PROBE, key));
  } catch {
    return false;
  }
}

/** The PEM of a key's PKCS#8 DER after `mutations`. */
function mutatedKey(pem: string, mutations: readonly DerMutation[]): string {
  const der = Buffer.from(pem.split('\n').slice(1, -2).join(''), 'base64');
  return encodePem('PRIVATE KEY', mutateDer(der, mutations));
}

const noMutation = fc.constant([] as readonly DerMutation[]);
/** Mostly mutated, sometimes left alone, so a run also shows the untouched pair being accepted. */
const maybeMutated = fc.oneof({ arbitrary: derMutations, weight: 9 }, { arbitrary: noMutation, weight: 1 });

describe('a mutated leaf, key or CA', () => {
  it('is kept only when OpenSSL verifies the leaf against the CA and the key fits the leaf', () => {
    let kept = 0;
    fc.assert(
      fc.property(fc.nat(), maybeMutated, maybeMutated, maybeMutated, (which, leafEdits, keyEdits, caEdits) => {
        const original = leaves[which % leaves.length]!;
        const leafDer = mutateDer(original.certificate.der, leafEdits);
        const keyPem = keyEdits.length === 0 ? original.privateKeyPem : mutatedKey(original.privateKeyPem, keyEdits);
        const caDer = mutateDer(pki.ca.certificate.der, caEdits);
        const cache = new CertificateCache(verifier);
        const leafSecret = observeLeafSecret(
          { 'tls.crt': encodePem('CERTIFICATE', leafDer), 'tls.key': keyPem, 'ca.crt': encodePem('CERTIFICATE', caDer) },
          cache,
        );
        const caSecret = observeCaSecret({ 'ca.crt': encodePem('CERTIFICATE', caDer), 'ca.key': pki.ca.privateKeyPem }, cache);
        if (!leafSecret.leaf.ok || !caSecret.active?.ok) return;
        const leaf: CertificateView = leafSecret.leaf.value.certificate;
        const ca: CertificateView = caSecret.active.value.certificate;
        // The observer vouches for the key; OpenSSL must agree for leaf and CA alike.
        expect(opensslKeyFits(keyPem, leaf.subjectPublicKeyInfo)).toBe(true);
        expect(opensslKeyFits(pki.ca.privateKeyPem, ca.subjectPublicKeyInfo)).toBe(true);
        if (!cache.isSignedBy(leaf, ca)) return;
        kept++;
        expect(opensslVerifies(leaf.der, ca.der)).toBe(true);
      }),
      // Each untouched pair is always among the inputs (a random run of 300 draws all three parts
      // untouched only with probability 1/1000 each time), so the property is seen keeping a leaf.
      { ...fuzzParameters(300), examples: leaves.map((_, i) => [i, [], [], []] as [number, DerMutation[], DerMutation[], DerMutation[]]) },
    );
    expect(kept).toBeGreaterThanOrEqual(leaves.length);
  });

  it('never keeps a leaf with a flipped bit, and OpenSSL agrees', () => {
    // Every byte of a certificate is signed, is the signature, or frames them: flipping any bit of it
    // (raw, or inside one element's contents) must cost the leaf its CA.
    const flips = fc.array(
      fc.oneof(
        fc.record({ kind: fc.constant('raw-flip' as const), at: fc.nat(), mask: fc.integer({ min: 1, max: 255 }) }),
        fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), offset: fc.nat(), mask: fc.integer({ min: 1, max: 255 }) }),
      ),
      { minLength: 1, maxLength: 2 },
    );
    fc.assert(
      fc.property(fc.nat(), flips, (which, edits) => {
        const original = leaves[which % leaves.length]!;
        const leafDer = mutateDer(original.certificate.der, edits);
        const cache = new CertificateCache(verifier);
        const o = observeLeafSecret(
          { 'tls.crt': encodePem('CERTIFICATE', leafDer), 'tls.key': original.privateKeyPem, 'ca.crt': pki.ca.certificate.pem },
          cache,
        );
        const kept = o.leaf.ok && cache.isSignedBy(o.leaf.value.certificate, pki.ca.certificate);
        // Two flips of the same bit give the original back, which is kept as it should be.
        const unchanged = equalBytes(leafDer, original.certificate.der);
        expect(kept).toBe(unchanged);
        expect(opensslVerifies(leafDer, pki.ca.certificate.der)).toBe(unchanged);
      }),
      fuzzParameters(300),
    );
  });
});
