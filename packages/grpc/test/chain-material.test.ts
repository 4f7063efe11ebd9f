// tls.crt holding a chain, as an upstream CA hands it out (issue 35): the leaf, then intermediates,
// the last one signed by an anchor of ca.crt. Chains are made by the openssl CLI. Accepted in both
// layouts; each broken chain is refused by the watcher with the core's verifyChain reason, logged
// once, and the last good material stays in use.
import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CertificateCache,
  issueClientLeaf,
  issueServerLeaf,
  MAX_CHAIN_CERTIFICATES,
  observeLeafSecret,
  parseCertificate,
  splitPemCertificates,
  type Issued,
} from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import {
  CertificateWatcher,
  checkTlsMaterial,
  clientTlsMaterial,
  type ProviderLogRecord,
  type ReloadFailure,
  TlsMaterialError,
  type TlsMaterialPems,
} from '@eso-mtls/grpc';
import { writeAtomically } from '@eso-mtls/test-kit/demo';
import { credentialsPem, podCertificateFiles } from '@eso-mtls/test-kit/pod-certificates';
import { TEST_CLIENT_SPIFFE_ID, TEST_POLICY, TEST_SERVER_NAME, type KeyPair } from '@eso-mtls/test-kit/pki';
import { chainPem, opensslIntermediate, opensslLeaf, opensslRoot, type OpensslCa } from './support/openssl-chain.js';

const DAY = 86_400_000;
const serial = (pem: string) => new X509Certificate(pem).serialNumber.toLowerCase();
const serverLeaf = (issuer: OpensslCa, spec: { notBefore?: Date; notAfter?: Date } = {}) =>
  opensslLeaf(issuer, { purpose: 'serverAuth', commonName: TEST_SERVER_NAME, dnsNames: [TEST_SERVER_NAME], ...spec });
const pemsOf = (caBundle: string, leaf: KeyPair, intermediates: readonly KeyPair[]): TlsMaterialPems => ({
  certificate: chainPem(leaf, intermediates),
  privateKey: leaf.key,
  caBundle,
});

/** The TlsMaterialError `check` throws; fails the test when it returns. */
function refusalOf(check: () => unknown): TlsMaterialError {
  try {
    check();
  } catch (e) {
    if (e instanceof TlsMaterialError) return e;
    throw e;
  }
  throw new Error('the material was accepted');
}

/** checkTlsMaterial's verdict as a provider: 'ok' or the reason. */
function verdict(pems: TlsMaterialPems, now = Date.now()): string {
  try {
    checkTlsMaterial(pems, { purpose: 'serverAuth', now });
    return 'ok';
  } catch (e) {
    if (e instanceof TlsMaterialError) return e.reason;
    throw e;
  }
}

let root: OpensslCa;
let intermediate: OpensslCa;
let leaf: KeyPair;
// root → int1 (pathlen 1) → int2 (pathlen 0) → leaf2
let int1: OpensslCa;
let int2: OpensslCa;
let leaf2: KeyPair;
let otherRoot: OpensslCa;
let otherIntermediate: OpensslCa;
let otherLeaf: KeyPair;

beforeAll(async () => {
  [root, otherRoot] = await Promise.all([opensslRoot('Example Org Root'), opensslRoot('Another Org Root')]);
  [intermediate, int1, otherIntermediate] = await Promise.all([
    opensslIntermediate(root, 'Example Issuing CA', { pathLength: 0 }),
    opensslIntermediate(root, 'Example Policy CA', { pathLength: 1 }),
    opensslIntermediate(otherRoot, 'Another Issuing CA'),
  ]);
  int2 = await opensslIntermediate(int1, 'Example Issuing CA 2', { pathLength: 0 });
  [leaf, leaf2, otherLeaf] = await Promise.all([serverLeaf(intermediate), serverLeaf(int2), serverLeaf(otherIntermediate)]);
}, 60_000);

describe('a chain in tls.crt is accepted', () => {
  it('root → intermediate → leaf, and root → int1 → int2 → leaf, with only the root in ca.crt', () => {
    expect(verdict(pemsOf(root.cert, leaf, [intermediate]))).toBe('ok');
    expect(verdict(pemsOf(root.cert, leaf2, [int2, int1]))).toBe('ok');
    const material = checkTlsMaterial(pemsOf(root.cert, leaf2, [int2, int1]), { purpose: 'serverAuth', now: Date.now() });
    // What is served is tls.crt whole: the leaf and its intermediates.
    expect(material.certificate).toBe(chainPem(leaf2, [int2, int1]));
    expect(material.serialNumber).toBe(serial(leaf2.cert));
  });

  it('with the root at the end of tls.crt too, and with the root among other CAs of ca.crt', () => {
    expect(verdict(pemsOf(root.cert, leaf, [intermediate, root]))).toBe('ok');
    expect(verdict(pemsOf(`${otherRoot.cert}${root.cert}`, leaf2, [int2, int1]))).toBe('ok');
  });

  it('leaves the core issues under an upstream intermediate: the controller and the provider both accept them', async () => {
    const crypto = createNodeCryptoBackend();
    // The upstream CA as the controller keeps it: the intermediate, its key, and its chain up to the anchor.
    const upstream = { certificate: parseCertificate(int2.cert), privateKeyPem: int2.key, chain: [parseCertificate(int1.cert), parseCertificate(root.cert)] };
    const context = { crypto, policy: TEST_POLICY, now: Date.now() };
    const secretOf = (issued: Issued) => ({
      'tls.crt': [issued.certificate, ...(issued.chain ?? [])].map((c) => c.pem).join(''),
      'tls.key': issued.privateKeyPem,
      'ca.crt': root.cert,
    });
    const served = secretOf(await issueServerLeaf(context, upstream, [TEST_SERVER_NAME]));
    const client = secretOf(await issueClientLeaf(context, upstream));
    // The leaf, then the served intermediates: the anchor stays out of tls.crt.
    expect(splitPemCertificates(served['tls.crt']).map((pem) => new X509Certificate(pem).subject)).toEqual([
      `CN=${TEST_SERVER_NAME}`,
      'CN=Example Issuing CA 2',
      'CN=Example Policy CA',
    ]);
    const observed = observeLeafSecret(served, new CertificateCache(crypto.verifier));
    expect([observed.leaf.ok, observed.bundle.ok]).toEqual([true, true]);
    expect(verdict({ certificate: served['tls.crt'], privateKey: served['tls.key'], caBundle: served['ca.crt'] })).toBe('ok');
    expect(clientTlsMaterial(client).serialNumber).toBe(serial(client['tls.crt']));
  });

  it("ESO's client material: a chained clientAuth leaf", async () => {
    const client = await opensslLeaf(intermediate, { purpose: 'clientAuth', commonName: 'external-secrets-core', uris: [TEST_CLIENT_SPIFFE_ID] });
    const material = clientTlsMaterial({ 'tls.crt': chainPem(client, [intermediate]), 'tls.key': client.key, 'ca.crt': root.cert });
    expect(material.serialNumber).toBe(serial(client.cert));
    expect(refusalOf(() => clientTlsMaterial({ 'tls.crt': chainPem(client, [otherIntermediate]), 'tls.key': client.key, 'ca.crt': root.cert })).reason).toBe(
      'missing_issuer',
    );
  });

  it('an intermediate starting within the 5-minute clock skew tolerance is accepted; one starting later is not', async () => {
    const now = Date.now();
    const soon = await opensslIntermediate(root, 'Example Issuing CA (clock ahead)', { notBefore: new Date(now + 2 * 60_000) });
    const late = await opensslIntermediate(root, 'Example Issuing CA (far ahead)', { notBefore: new Date(now + 10 * 60_000) });
    expect(verdict(pemsOf(root.cert, await serverLeaf(soon), [soon]), now)).toBe('ok');
    expect(verdict(pemsOf(root.cert, await serverLeaf(late), [late]), now)).toBe('not_yet_valid');
  });
});

describe('a broken chain is refused with its reason', () => {
  // Each case: what tls.crt and ca.crt hold, the reason, and what the message names.
  const cases: [string, () => Promise<TlsMaterialPems>, string, RegExp][] = [
    ['intermediates out of order', async () => pemsOf(root.cert, leaf2, [int1, int2]), 'out_of_order', /not by the next one/],
    ['an intermediate of another chain', async () => pemsOf(root.cert, leaf, [otherIntermediate]), 'missing_issuer', /CN=Example Issuing CA/],
    [
      'an intermediate that is not a CA',
      async () => {
        const notCa = await opensslIntermediate(root, 'Not A CA', { ca: false });
        return pemsOf(root.cert, await serverLeaf(notCa), [notCa]);
      },
      'not_ca',
      /CN=Not A CA .* is not a CA certificate/,
    ],
    [
      'a pathLenConstraint that forbids the intermediate below',
      async () => {
        const short = await opensslIntermediate(root, 'Example Policy CA (pathlen 0)', { pathLength: 0 });
        const below = await opensslIntermediate(short, 'Example Issuing CA (too deep)');
        return pemsOf(root.cert, await serverLeaf(below), [below, short]);
      },
      'path_length',
      /allows 0 intermediate CAs below it/,
    ],
    [
      'an intermediate without keyCertSign',
      async () => {
        const noSign = await opensslIntermediate(root, 'Example CA without keyCertSign', { keyUsage: 'digitalSignature' });
        return pemsOf(root.cert, await serverLeaf(noSign), [noSign]);
      },
      'key_usage',
      /without keyCertSign/,
    ],
    [
      "a leaf's name outside an intermediate's nameConstraints",
      async () => {
        const constrained = await opensslIntermediate(root, 'Example Issuing CA (example.org only)', {
          nameConstraints: 'critical,permitted;DNS:.example.org',
        });
        return pemsOf(root.cert, await serverLeaf(constrained), [constrained]);
      },
      'name_constraints',
      /names file-provider\.provider-system\.svc, outside the DNS names .* permits: \.example\.org/,
    ],
    [
      'an expired intermediate (the leaf still valid)',
      async () => {
        const old = await opensslIntermediate(root, 'Example Issuing CA (expired)', {
          notBefore: new Date(Date.now() - 30 * DAY),
          notAfter: new Date(Date.now() - DAY),
        });
        return pemsOf(root.cert, await serverLeaf(old), [old]);
      },
      'expired',
      /CN=Example Issuing CA \(expired\) .* expired at/,
    ],
    [
      'an intermediate not yet valid (the leaf valid)',
      async () => {
        const future = await opensslIntermediate(root, 'Example Issuing CA (future)', { notBefore: new Date(Date.now() + DAY) });
        return pemsOf(root.cert, await serverLeaf(future), [future]);
      },
      'not_yet_valid',
      /CN=Example Issuing CA \(future\) .* is not valid before/,
    ],
    [
      'a chain that ends at no anchor of ca.crt',
      async () => pemsOf(root.cert, otherLeaf, [otherIntermediate]),
      'untrusted',
      /is not signed by any CA in ca.crt valid now .*CN=Another Issuing CA .* is issued by CN=Another Org Root/,
    ],
    [
      'a chain whose anchor is expired',
      async () => {
        const oldRoot = await opensslRoot('Example Old Root', { notBefore: new Date(Date.now() - 30 * DAY), notAfter: new Date(Date.now() - DAY) });
        const under = await opensslIntermediate(oldRoot, 'Example Issuing CA (old root)');
        return pemsOf(oldRoot.cert, await serverLeaf(under), [under]);
      },
      'untrusted',
      /is not signed by any CA in ca.crt valid now/,
    ],
    [
      `more than ${MAX_CHAIN_CERTIFICATES} certificates`,
      async () => pemsOf(root.cert, leaf, Array<KeyPair>(MAX_CHAIN_CERTIFICATES).fill(intermediate)),
      'too_large',
      new RegExp(`tls.crt holds ${MAX_CHAIN_CERTIFICATES + 1} certificates, over the limit of ${MAX_CHAIN_CERTIFICATES}`),
    ],
  ];

  it.each(cases)('%s', async (_, make, reason, message) => {
    const pems = await make();
    const refusal = refusalOf(() => checkTlsMaterial(pems, { purpose: 'serverAuth', now: Date.now() }));
    expect(refusal.reason).toBe(reason);
    expect(refusal.message).toMatch(message);
  });

  describe('by the watcher: counted and logged once each, the last good chain kept', () => {
    const dirs: string[] = [];
    const watchers: CertificateWatcher[] = [];
    afterEach(() => {
      watchers.splice(0).forEach((w) => w.close());
      dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true }));
    });

    it('every case in turn, then a good chain under another intermediate', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'chain-watcher-'));
      dirs.push(dir);
      const files = (pems: TlsMaterialPems) => ({ 'ca.crt': pems.caBundle, 'tls.crt': pems.certificate, 'tls.key': pems.privateKey });
      await writeAtomically(dir, files(pemsOf(root.cert, leaf, [intermediate])));
      const logged: ProviderLogRecord[] = [];
      const watcher = new CertificateWatcher({ directory: dir, purpose: 'serverAuth', pollIntervalMs: 3_600_000, log: (r) => logged.push(r) });
      watchers.push(watcher);
      const good = await watcher.start();
      const failures: ReloadFailure[] = [];
      watcher.onFailure((f) => failures.push(f));

      for (const [name, make, reason] of cases) {
        await writeAtomically(dir, files(await make()));
        await watcher.check();
        await watcher.check(); // read again: the same problem is not counted twice
        expect([name, failures.at(-1)?.reason, watcher.current]).toEqual([name, reason, good]);
      }
      expect(failures.map((f) => f.reason)).toEqual(cases.map(([, , reason]) => reason));
      expect(logged.map((r) => [r.reason, r.serialNumber])).toEqual(cases.map(([, , reason]) => [reason, good.serialNumber]));
      expect(watcher.stats).toEqual({ loads: 1, reloads: 0, failures: cases.length });

      await writeAtomically(dir, files(pemsOf(root.cert, leaf2, [int2, int1])));
      await watcher.check();
      expect(watcher.current?.serialNumber).toBe(serial(leaf2.cert));
      expect(watcher.stats).toEqual({ loads: 2, reloads: 1, failures: cases.length });
    });

    it('the pod-certificate layout: credentials.pem holds the key, the leaf and its intermediates', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'chain-pod-'));
      dirs.push(dir);
      const bundle = (l: KeyPair, intermediates: readonly KeyPair[]) => credentialsPem({ key: l.key, cert: chainPem(l, intermediates) });
      await writeAtomically(dir, podCertificateFiles(bundle(leaf2, [int2, int1]), root.cert));
      const watcher = new CertificateWatcher({ directory: dir, purpose: 'serverAuth', layout: 'pod-certificate', pollIntervalMs: 3_600_000, log: false });
      watchers.push(watcher);
      const good = await watcher.start();
      expect(good.certificate).toBe(chainPem(leaf2, [int2, int1]));
      const refused = new Promise<ReloadFailure>((resolve) => watcher.onFailure(resolve));
      await writeAtomically(dir, podCertificateFiles(bundle(leaf2, [int1, int2]), root.cert));
      const failure = await refused;
      expect(failure.reason).toBe('out_of_order');
      expect(failure.message).toMatch(/^\S+: credentials.pem, the chain of/);
      expect(watcher.current).toBe(good);
    });
  });
});
