// An upstream issuer's intermediate whose key lives in a PKCS#11 token (SoftHSM2): the pending key
// is made in the token and stored as a reference, its request signed there; the openssl CLI
// answers as the organisation's issuer; the answer signs leaves in the token, and every leaf
// verifies under the organisation root alone (`openssl verify -x509_strict`).
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CertificateCache,
  type CaRequestObservation,
  type Instant,
  MemoryStore,
  type UpstreamObservation,
  days,
  executePlan,
  hours,
  materializeCaRequest,
  planRotation,
  resolvePolicy,
  splitPemCertificates,
} from '@eso-mtls/core';
import { p256Request, signRequest } from '@eso-mtls/test-kit/openssl';
import { type TestToken, createTestToken } from './support/softhsm.js';

const policy = resolvePolicy();

describe('an intermediate from an upstream issuer, its key in the token', () => {
  let token: TestToken;
  beforeEach(() => {
    token = createTestToken();
  });
  afterEach(() => token.remove());

  test('the pending key is made and kept in the token, and the issued intermediate signs there', async () => {
    const file = (name: string): string => join(token.dir, name);
    const openssl = (args: string[]): void => void execFileSync('openssl', args, { stdio: 'pipe' });
    // The organisation's root, made now (the plan runs at the real time: the root is valid from now on).
    openssl(
      p256Request(
        'self-signed',
        file('root.key'),
        file('root.pem'),
        '/O=Acme/CN=Acme Root',
        '-days',
        '30',
        '-addext',
        'basicConstraints=critical,CA:TRUE',
        '-addext',
        'keyUsage=critical,keyCertSign,cRLSign',
      ),
    );
    const root = readFileSync(file('root.pem'), 'utf8');
    const now: Instant = Math.floor(Date.now() / 1000) * 1000 + 60_000;

    const crypto = token.backend();
    const cache = new CertificateCache(crypto.verifier);
    const store = new MemoryStore();
    store.setServices('a', [{ name: 'p' }]);
    let request: CaRequestObservation | undefined;
    const observation = (): UpstreamObservation => ({
      kind: 'issuer',
      source: 'issuer/ClusterIssuer/org-ca',
      anchors: { ok: true, text: root },
      issuer: { state: 'ready', message: 'ready' },
      ...(request ? { request } : {}),
      requestedValidity: days(365),
      requestDeadline: hours(1),
    });
    const plan = () => planRotation({ ...store.snapshot(), upstream: observation() }, { now, policy, cache });

    const asking = plan();
    expect(asking.upstream?.request?.kind).toBe('create');
    const material = await materializeCaRequest(asking, undefined, crypto);
    store.apply(material.write!);
    const pendingRef = String(store.get('ca')!.data['pending.key-ref']);
    expect(pendingRef).toMatch(/^pkcs11:token=eso-mtls-test;/);
    expect(Object.values(store.get('ca')!.data).join('\n')).not.toMatch(/PRIVATE KEY/);
    request = { name: material.name, state: 'pending', since: now, message: 'waiting' };

    // The issuer answers: openssl signs our request (signed in the token) with the root.
    writeFileSync(file('request.csr'), material.csrPem);
    writeFileSync(
      file('ext.cnf'),
      'basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign,digitalSignature\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n',
    );
    openssl(
      signRequest(
        file('request.csr'),
        file('root.pem'),
        file('root.key'),
        file('intermediate.pem'),
        '-days',
        '20',
        '-extfile',
        file('ext.cnf'),
        '-set_serial',
        '0x1001',
      ),
    );
    const intermediate = readFileSync(file('intermediate.pem'), 'utf8');
    request = { ...request, state: 'issued', certificate: intermediate };

    const issued = plan();
    expect(issued.upstream?.problems).toEqual([]);
    for (const write of await executePlan(issued, { crypto, cache, now })) store.apply(write);
    const ca = store.get('ca')!;
    // The pending reference became the active CA's key reference: the key never left the token.
    expect(String(ca.data['ca.key-ref'])).toBe(pendingRef);
    expect(ca.data['pending.key-ref']).toBeUndefined();
    expect(token.privateKeysElsewhere()).toHaveLength(1);

    const provider = store.get({ namespace: 'a' })!;
    const [leaf, ...above] = splitPemCertificates(String(provider.data['tls.crt']));
    expect(above).toEqual(splitPemCertificates(intermediate));
    expect(String(provider.data['ca.crt'])).toBe(root);
    writeFileSync(file('leaf.pem'), leaf!);
    const r = spawnSync(
      'openssl',
      [
        'verify',
        '-x509_strict',
        '-purpose',
        'sslserver',
        '-attime',
        String(now / 1000 + 60),
        '-CAfile',
        file('root.pem'),
        '-untrusted',
        file('intermediate.pem'),
        file('leaf.pem'),
      ],
      { encoding: 'utf8' },
    );
    expect(`${r.stdout}${r.stderr}`).toMatch(/leaf\.pem: OK/);
    crypto.close();
  });
});
