import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import {
  type CryptoBackend,
  type Issued,
  IssueError,
  POD_KEY_TYPES,
  type PodCertificate,
  type PodKeyType,
  type PodRequestDecision,
  type PodRequestView,
  type SelectingService,
  decidePodRequest,
  days,
  encodeCaCertificationRequest,
  hours,
  issueCa,
  issuePodCertificate,
  minutes,
  parseCertificate,
  resolvePolicy,
} from '@eso-mtls/core';
import { issuePodLeaf, randomSerialNumber } from '../../src/crypto/issue.js';
import { MAX_SERVER_CERTIFICATE_BYTES } from '../../src/x509/name-budget.js';
import { nodeBackend, openssl, tempDir } from '../support/fixtures.js';
import { type KeyPair, POD_KEYS, spkiOf, stubRequest } from '../support/pod-keys.js';
import { failures, lintPem, zlintPath } from '../support/zlint.js';
import { OpensslPki } from '../support/openssl-pki.js';

// Pod certificates end to end in the core: a kubelet's key (node:crypto) in a stub request made by
// OpenSSL, decided by decidePodRequest, issued by issuePodCertificate under a real CA, then read
// back by tools we did not write: node's X509Certificate, @peculiar/x509, `openssl verify
// -x509_strict` with the TLS purpose, and zlint.

const tmp = tempDir('pod-issue');
afterAll(() => tmp.remove());
const crypto = nodeBackend();
const policy = resolvePolicy({ esoNamespace: 'eso', serviceAccount: 'eso-core' });
const LIMITS = { maxExpirationSeconds: undefined, maxValidity: hours(24) };

const PROVIDER: SelectingService = { name: 'provider', selector: { app: 'provider' } };
const POD = { uid: 'c0ffee00-0000-4000-8000-000000000001', labels: { app: 'provider' } };
const NAMES = ['provider', 'provider.team-a', 'provider.team-a.svc', 'provider.team-a.svc.cluster.local'];
const SPIFFE = 'spiffe://cluster.local/ns/eso/sa/eso-core';

function view(role: 'server' | 'client', stubPkcs10Request: Uint8Array): PodRequestView {
  return role === 'server'
    ? { namespace: 'team-a', role, podName: 'provider-0', podUid: POD.uid, serviceAccountName: 'provider', stubPkcs10Request }
    : { namespace: 'eso', role, podName: 'external-secrets-0', podUid: POD.uid, serviceAccountName: 'eso-core', stubPkcs10Request };
}

function decision(role: 'server' | 'client', stub: Uint8Array, services = [PROVIDER]): Extract<PodRequestDecision, { kind: 'issue' }> {
  const d = decidePodRequest({ request: view(role, stub), pod: POD, services, policy });
  if (d.kind !== 'issue') throw new Error(`Denied ${d.reason}: ${d.message}`);
  return d;
}

function certificateOf(result: Awaited<ReturnType<typeof issuePodCertificate>>): PodCertificate {
  if (!result.ok) throw new Error(`issuePodCertificate failed: ${result.detail}`);
  return result;
}

/** `openssl verify -x509_strict -purpose <purpose> -CAfile <ca>` on a PEM leaf: its exit status and output. */
function verify(name: string, ca: Issued, leafPem: string, purpose: 'sslserver' | 'sslclient'): { status: number; output: string } {
  const caFile = tmp.write(`${name}-ca.pem`, ca.certificate.pem);
  const leafFile = tmp.write(`${name}.pem`, leafPem);
  return openssl(['verify', '-x509_strict', '-purpose', purpose, '-CAfile', caFile, leafFile]);
}

const CA_KINDS = ['ECDSA-P256 CA', 'RSA-3072 CA'] as const;
const cas = {} as Record<(typeof CA_KINDS)[number], Issued>;
const pairs = {} as Record<PodKeyType, KeyPair>;
const stubs = {} as Record<PodKeyType, Uint8Array>;
/** Leaves issued now, under each CA, for each key type and role. */
const leaves = new Map<string, PodCertificate>();
const leafKey = (caKind: string, type: PodKeyType, role: string): string => `${caKind}/${type}/${role}`;

beforeAll(async () => {
  const now = Date.now();
  cas['ECDSA-P256 CA'] = await issueCa({ crypto, policy, now });
  cas['RSA-3072 CA'] = await issueCa({ crypto, policy: resolvePolicy({ keyAlgorithm: 'RSA-3072' }), now });
  for (const type of POD_KEY_TYPES) {
    pairs[type] = POD_KEYS[type]();
    stubs[type] = stubRequest(tmp, type, pairs[type]);
  }
  for (const caKind of CA_KINDS) {
    for (const type of POD_KEY_TYPES) {
      for (const role of ['server', 'client'] as const) {
        const ctx = { crypto, policy, now: Date.now() };
        leaves.set(leafKey(caKind, type, role), certificateOf(await issuePodCertificate(ctx, cas[caKind], decision(role, stubs[type]), LIMITS)));
      }
    }
  }
});

const cases = CA_KINDS.flatMap((caKind) => POD_KEY_TYPES.flatMap((type) => (['server', 'client'] as const).map((role) => [caKind, type, role] as const)));

describe.each(cases)('%s, %s key, %s certificate', (caKind, type, role) => {
  const leaf = (): PodCertificate => leaves.get(leafKey(caKind, type, role))!;
  const peculiar = (): x509.X509Certificate => new x509.X509Certificate(leaf().certificate.pem);

  it("certifies the kubelet's key: the key of the stub request, and its private half matches", () => {
    expect(leaf().certificate.subjectPublicKeyInfo).toEqual(spkiOf(pairs[type]));
    const node = new X509Certificate(leaf().certificate.pem);
    expect(new Uint8Array(node.publicKey.export({ type: 'spki', format: 'der' }))).toEqual(spkiOf(pairs[type]));
    expect(node.checkPrivateKey(pairs[type].privateKey)).toBe(true);
    expect(node.verify(new X509Certificate(cas[caKind].certificate.pem).publicKey)).toBe(true);
  });

  it('has the role EKU, the key usage for its key, basicConstraints cA:FALSE, and the role names', () => {
    const cert = peculiar();
    const eku = cert.getExtension(x509.ExtendedKeyUsageExtension)!;
    expect(eku.usages).toEqual([role === 'server' ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth]);
    const ku = cert.getExtension(x509.KeyUsagesExtension)!;
    const rsaServer = role === 'server' && type.startsWith('RSA');
    const usages = rsaServer ? x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment : x509.KeyUsageFlags.digitalSignature;
    expect([ku.usages, ku.critical]).toEqual([usages, true]);
    const bc = cert.getExtension(x509.BasicConstraintsExtension)!;
    expect([bc.ca, bc.critical]).toEqual([false, true]);
    const san = cert.getExtension(x509.SubjectAlternativeNameExtension)!.names.items.map((n) => [n.type, n.value]);
    if (role === 'server') {
      expect(san).toEqual([...NAMES].sort().map((n) => ['dns', n]));
      expect(cert.subject).toBe('CN=provider');
    } else {
      expect(san).toEqual([['url', SPIFFE]]);
      expect(cert.subject).toBe('CN=external-secrets-core');
    }
    expect(cert.issuer).toBe(new x509.X509Certificate(cas[caKind].certificate.pem).subject);
  });

  it(`passes openssl verify -x509_strict -purpose ${role === 'server' ? 'sslserver' : 'sslclient'}, and fails the other purpose`, () => {
    const name = leafKey(caKind, type, role).replaceAll('/', '-').replaceAll(' ', '-');
    const right = verify(name, cas[caKind], leaf().certificateChain, role === 'server' ? 'sslserver' : 'sslclient');
    expect(right).toEqual({ status: 0, output: expect.stringMatching(/: OK\n$/) });
    expect(verify(name, cas[caKind], leaf().certificateChain, role === 'server' ? 'sslclient' : 'sslserver').status).not.toBe(0);
  });

  it('has the returned times exactly, whole seconds, inside the CA, with beginRefreshAt within the apiserver bounds', () => {
    const { notBefore, notAfter, beginRefreshAt, certificate } = leaf();
    const cert = peculiar();
    expect([cert.notBefore.getTime(), cert.notAfter.getTime()]).toEqual([notBefore, notAfter]);
    expect([certificate.notBefore, certificate.notAfter]).toEqual([notBefore, notAfter]);
    expect([notBefore % 1000, notAfter % 1000, beginRefreshAt % 1000]).toEqual([0, 0, 0]);
    expect(notAfter - notBefore).toBe(hours(24));
    expect(notBefore).toBeGreaterThanOrEqual(cas[caKind].certificate.notBefore);
    expect(notAfter).toBeLessThanOrEqual(cas[caKind].certificate.notAfter);
    expect(beginRefreshAt).toBeGreaterThanOrEqual(notAfter - hours(10));
    expect(beginRefreshAt).toBeLessThanOrEqual(notAfter - hours(8));
  });

  it('returns as certificateChain the leaf PEM alone, which parses back to the returned view', () => {
    const { certificateChain, certificate } = leaf();
    expect(certificateChain).toBe(certificate.pem);
    expect(certificateChain.match(/-----BEGIN CERTIFICATE-----/g)).toHaveLength(1);
    expect(certificateChain).toMatch(/^-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=\n]+-----END CERTIFICATE-----\n$/);
    expect(parseCertificate(certificateChain)).toEqual(certificate);
  });
});

describe('issuePodCertificate', () => {
  const ctx = () => ({ crypto, policy, now: Date.now() });

  it('takes only the key from a stub request with a subject, SANs and EKUs of its own', async () => {
    const pair = POD_KEYS.ECDSAP256();
    const stub = stubRequest(
      tmp,
      'evil',
      pair,
      '/CN=evil',
      '-addext',
      `subjectAltName=DNS:evil.example,URI:${SPIFFE}`,
      '-addext',
      'extendedKeyUsage=clientAuth,serverAuth,codeSigning',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
    );
    const ca = cas['ECDSA-P256 CA'];
    const server = certificateOf(await issuePodCertificate(ctx(), ca, decision('server', stub), LIMITS));
    const cert = new x509.X509Certificate(server.certificate.pem);
    expect(cert.subject).toBe('CN=provider');
    expect(cert.getExtension(x509.SubjectAlternativeNameExtension)!.names.items.map((n) => n.value)).toEqual([...NAMES].sort());
    expect(cert.getExtension(x509.ExtendedKeyUsageExtension)!.usages).toEqual([x509.ExtendedKeyUsage.serverAuth]);
    expect(cert.getExtension(x509.BasicConstraintsExtension)!.ca).toBe(false);
    expect(server.certificate.subjectPublicKeyInfo).toEqual(spkiOf(pair));
  });

  it("follows the request's maxExpirationSeconds and the maximum validity, whichever is shorter", async () => {
    const ca = cas['ECDSA-P256 CA'];
    const d = decision('server', stubs.ECDSAP256);
    const lifetime = async (limits: typeof LIMITS | { maxExpirationSeconds: number; maxValidity: number }): Promise<number> => {
      const c = certificateOf(await issuePodCertificate(ctx(), ca, d, limits));
      return c.notAfter - c.notBefore;
    };
    expect(await lifetime({ maxExpirationSeconds: 3600, maxValidity: hours(24) })).toBe(hours(1));
    expect(await lifetime({ maxExpirationSeconds: 7_862_400, maxValidity: hours(24) })).toBe(hours(24));
    expect(await lifetime({ maxExpirationSeconds: 7_862_400, maxValidity: days(91) })).toBe(days(91));
    expect(await lifetime({ maxExpirationSeconds: 86_400, maxValidity: hours(1) })).toBe(hours(1));
  });

  it('clamps the leaf to a CA that ends sooner, and verifies still', async () => {
    const ca = cas['ECDSA-P256 CA'];
    const now = ca.certificate.notAfter - hours(5);
    const c = certificateOf(await issuePodCertificate({ crypto, policy, now }, ca, decision('server', stubs.ECDSAP384), LIMITS));
    expect(c.notAfter).toBe(ca.certificate.notAfter);
    const r = openssl([
      'verify',
      '-x509_strict',
      '-purpose',
      'sslserver',
      '-attime',
      String(Math.floor(now / 1000)),
      '-CAfile',
      tmp.write('clamp-ca.pem', ca.certificate.pem),
      tmp.write('clamp.pem', c.certificateChain),
    ]);
    expect(r).toEqual({ status: 0, output: expect.stringMatching(/: OK\n$/) });
  });

  it('under an upstream intermediate: status.certificateChain is the leaf then the intermediate, cut to its end, and verifies under the root alone', async () => {
    const upstream = new OpensslPki(`${tmp.dir}/upstream`);
    const root = upstream.root('pod-root', '/O=Acme/CN=Acme Pod Root');
    const key = await crypto.signer.generateKey('ECDSA-P256');
    const csr = await encodeCaCertificationRequest({
      subject: { commonName: 'eso-mtls pod intermediate' },
      subjectPublicKeyInfo: key.subjectPublicKeyInfo,
      sign: (d) => crypto.signer.sign(key.privateKeyPem, d),
    });
    const now = Math.floor(Date.now() / 1000) * 1000 + minutes(1);
    const intermediate = upstream.answer('pod-intermediate', csr.pem, root, 'intermediate_pathlen0', now - minutes(1), now + hours(10));
    const issuer = { certificate: intermediate, privateKeyPem: key.privateKeyPem, chain: [root.view] };
    const c = certificateOf(await issuePodCertificate({ crypto, policy, now }, issuer, decision('server', stubs.ECDSAP256), LIMITS));
    expect(c.certificateChain).toBe(c.certificate.pem + intermediate.pem);
    // Never past the intermediate's end (24 h asked, 10 h left).
    expect(c.notAfter).toBe(intermediate.notAfter);
    const r = openssl([
      'verify',
      '-x509_strict',
      '-purpose',
      'sslserver',
      '-attime',
      String(Math.floor(now / 1000) + 60),
      '-CAfile',
      root.file,
      '-untrusted',
      tmp.write('pod-untrusted.pem', intermediate.pem),
      tmp.write('pod-chained.pem', c.certificate.pem),
    ]);
    expect(r).toEqual({ status: 0, output: expect.stringMatching(/: OK\n$/) });
  });

  it('fails, signing nothing, when the CA ends within the hour a pod certificate must last', async () => {
    const ca = cas['ECDSA-P256 CA'];
    let signed = 0;
    const counting: CryptoBackend = { ...crypto, signer: { ...crypto.signer, sign: (key, data) => (signed++, crypto.signer.sign(key, data)) } };
    const now = ca.certificate.notAfter - minutes(50);
    const result = await issuePodCertificate({ crypto: counting, policy, now }, ca, decision('server', stubs.ECDSAP256), LIMITS);
    expect(result).toEqual({
      ok: false,
      detail: `the signing CA expires at ${new Date(ca.certificate.notAfter).toISOString()}, leaving less than the 1h a pod certificate must last`,
    });
    expect(signed).toBe(0);
  });

  it('keeps a certificate for as many Services as fit within the size bound, and it verifies', async () => {
    const services = Array.from({ length: 300 }, (_, i) => ({ name: `svc-${String(i).padStart(3, '0')}-${'s'.repeat(55)}`, selector: { app: 'provider' } }));
    const d = decision('server', stubs.RSA4096, services);
    expect(d.refused.length).toBeGreaterThan(0);
    const c = certificateOf(await issuePodCertificate(ctx(), cas['RSA-3072 CA'], d, LIMITS));
    expect(c.certificate.der.length).toBeLessThanOrEqual(MAX_SERVER_CERTIFICATE_BYTES);
    expect(c.certificate.dnsNames).toEqual(d.dnsNames);
    expect(verify('many-services', cas['RSA-3072 CA'], c.certificateChain, 'sslserver').status).toBe(0);
  });
});

describe('issuePodLeaf refuses a validity the CA does not cover', () => {
  const ca = (): Issued => cas['ECDSA-P256 CA'];
  const request = (notBefore: number, notAfter: number) => ({
    role: 'server' as const,
    subjectPublicKeyInfo: spkiOf(pairs.ECDSAP256),
    dnsNames: NAMES,
    serialNumber: randomSerialNumber(crypto.random),
    notBefore,
    notAfter,
  });
  const ctx = () => ({ crypto, policy, now: Date.now() });

  it.each([
    ['starting before the CA', (c: Issued) => [c.certificate.notBefore - 1000, c.certificate.notBefore + hours(24)]],
    ['ending after the CA', (c: Issued) => [c.certificate.notAfter - hours(24), c.certificate.notAfter + 1000]],
    ['wholly after the CA', (c: Issued) => [c.certificate.notAfter + days(1), c.certificate.notAfter + days(2)]],
    ['ending before it starts', (c: Issued) => [c.certificate.notBefore + hours(2), c.certificate.notBefore + hours(1)]],
    ['of no length', (c: Issued) => [c.certificate.notBefore + hours(2), c.certificate.notBefore + hours(2)]],
  ])('%s', async (_, times) => {
    const [notBefore, notAfter] = times(ca()) as [number, number];
    const issuing = issuePodLeaf(ctx(), ca(), request(notBefore, notAfter));
    await expect(issuing).rejects.toThrow(IssueError);
    await expect(issuePodLeaf(ctx(), ca(), request(notBefore, notAfter))).rejects.toThrow(/^validity .* is not inside issuer CN=eso-provider-ca-/);
  });

  it('accepts exactly the CA validity', async () => {
    const c = ca().certificate;
    const leaf = await issuePodLeaf(ctx(), ca(), request(c.notBefore, c.notAfter));
    expect([leaf.notBefore, leaf.notAfter]).toEqual([c.notBefore, c.notAfter]);
  });

  it('refuses times that are not whole seconds: the certificate could not carry them', async () => {
    const c = ca().certificate;
    await expect(issuePodLeaf(ctx(), ca(), request(c.notBefore + 1500, c.notBefore + hours(24)))).rejects.toThrow(
      /^validity .* is not in whole seconds, which a certificate cannot carry$/,
    );
    await expect(issuePodLeaf(ctx(), ca(), request(c.notBefore + 1000, c.notBefore + hours(24) + 1))).rejects.toThrow(IssueError);
  });

  it('refuses an issuer that is not a CA, and a server certificate without names', async () => {
    const server = leaves.get(leafKey('ECDSA-P256 CA', 'ECDSAP256', 'server'))!.certificate;
    const notCa = { certificate: server, privateKeyPem: 'unused' };
    await expect(issuePodLeaf(ctx(), notCa, request(server.notBefore, server.notAfter))).rejects.toThrow(/is not a CA certificate/);
    const c = ca().certificate;
    await expect(issuePodLeaf(ctx(), ca(), { ...request(c.notBefore, c.notAfter), dnsNames: [] })).rejects.toThrow(/at least one DNS name/);
  });
});

// zlint, as packages/core/test/zlint.test.ts runs it: every lint but the web-PKI sources of
// testing/zlint/exclusions.json; no warning, error or fatal accepted.
describe('zlint', () => {
  // A cold zlint build took 90 s on a loaded 2-core machine: a build's bound, not a speed check.
  beforeAll(() => {
    zlintPath();
  }, 20 * 60_000);

  const linted = cases
    .filter(([caKind]) => caKind === 'ECDSA-P256 CA')
    .concat(cases.filter(([caKind, type]) => caKind === 'RSA-3072 CA' && type === 'ED25519'));
  it.each(linted)('%s, %s key, %s certificate: no zlint warning, error or fatal', (caKind, type, role) => {
    const file = tmp.write(`zlint-${caKind.replace(' ', '-')}-${type}-${role}.pem`, leaves.get(leafKey(caKind, type, role))!.certificate.pem);
    const results = lintPem(file);
    expect(failures(results)).toEqual({});
    // The RFC 5280 lints did run on it.
    expect(Object.keys(results).filter((name) => results[name]!.result === 'pass').length).toBeGreaterThan(50);
  });
});
