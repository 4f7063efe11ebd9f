import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CaKeyUnavailableError,
  CertificateCache,
  type CryptoBackend,
  type Instant,
  MemoryStore,
  type Plan,
  type SecretWrite,
  type CaPhase,
  days,
  executePlan,
  materializeCaChange,
  planRotation,
  resolvePolicy,
} from '@eso-mtls/core';
import { parseKeyReference } from '../src/uri.js';
import { type TestToken, createTestToken } from './support/softhsm.js';

const T0: Instant = Date.UTC(2026, 0, 1);
const policy = resolvePolicy();

/** Reconciles `store` from `from` to `to` at each plan's nextDueAt, applying every write; returns the writes. */
async function run(store: MemoryStore, crypto: CryptoBackend, cache: CertificateCache, from: Instant, to: Instant): Promise<SecretWrite[]> {
  const writes: SecretWrite[] = [];
  for (let at = from; at <= to;) {
    const plan = planRotation(store.snapshot(), { now: at, policy, cache });
    for (const write of await executePlan(plan, { crypto, cache })) {
      store.apply(write);
      writes.push(write);
    }
    const next = planRotation(store.snapshot(), { now: at, policy, cache }).nextDueAt ?? Infinity;
    at = Math.max(next, at + 1000);
  }
  return writes;
}

const phasesOf = (writes: readonly SecretWrite[]): CaPhase[] => writes.flatMap((w) => w.phases ?? []);
const caData = (store: MemoryStore): Record<string, string> =>
  Object.fromEntries(Object.entries(store.get('ca')!.data).map(([k, v]) => [k, typeof v === 'string' ? v : Buffer.from(v!).toString('utf8')]));
const keyIdOf = (reference: string): string => Buffer.from(parseKeyReference(reference).id).toString('hex');

/** `openssl verify` of each provider Secret's tls.crt under its own ca.crt, at `at`. */
function opensslVerify(store: MemoryStore, dir: string, namespaces: readonly string[], at: Instant): string[] {
  return namespaces.map((namespace) => {
    const data = store.get({ namespace })!.data;
    writeFileSync(join(dir, `${namespace}-ca.pem`), String(data['ca.crt']));
    writeFileSync(join(dir, `${namespace}-tls.pem`), String(data['tls.crt']));
    return execFileSync(
      'openssl',
      [
        'verify',
        '-attime',
        String(Math.floor(at / 1000)),
        '-purpose',
        'sslserver',
        '-CAfile',
        join(dir, `${namespace}-ca.pem`),
        join(dir, `${namespace}-tls.pem`),
      ],
      { encoding: 'utf8' },
    ).trim();
  });
}

describe('CA keys in a PKCS#11 token (SoftHSM2)', () => {
  let token: TestToken;
  beforeEach(() => {
    token = createTestToken();
  });
  afterEach(() => token.remove());

  test('issuance, an overlap CA rotation and a restart keep the key in the token; the CA Secret holds only references', async () => {
    const store = new MemoryStore();
    const namespaces = ['tenant-a', 'tenant-b'];
    for (const namespace of namespaces) store.setServices(namespace, [{ name: 'provider' }]);
    const first = token.backend();
    const writes = await run(store, first, new CertificateCache(first.verifier), T0, T0 + days(400));

    expect(phasesOf(writes)).toEqual(expect.arrayContaining(['create', 'prepare', 'activate', 'retire']));
    const caWrites = writes.filter((w) => w.kind === 'ca');
    for (const w of caWrites) {
      expect(Object.keys(w.data).filter((k) => k === 'ca.key' || k === 'next.key')).toEqual([]);
      expect(Object.values(w.data).join('\n')).not.toMatch(/PRIVATE KEY/);
    }
    const data = caData(store);
    expect(data['ca.key-ref']).toMatch(/^pkcs11:token=eso-mtls-test;object=eso-mtls-ca-[0-9a-f]{32};id=(%[0-9a-f]{2}){16};type=private$/);
    // Retired keys were destroyed once their CA left retired.crt: the token holds exactly the CA Secret's keys.
    const referenced = [data['ca.key-ref'], data['next.key-ref']].filter((r) => r !== undefined).map(keyIdOf);
    expect(token.privateKeysElsewhere()).toEqual(referenced.sort());
    const everyKey = new Set(caWrites.flatMap((w) => [w.data['ca.key-ref'], w.data['next.key-ref']]).filter((r) => r !== undefined));
    expect(everyKey.size).toBeGreaterThanOrEqual(2);

    // A restart: a new session and an empty cache. The reference is the key, nothing is re-issued.
    first.close();
    const second = token.backend();
    const cache = new CertificateCache(second.verifier);
    const replan = planRotation(store.snapshot(), { now: T0 + days(400), policy, cache });
    expect(replan.ca).toBeUndefined();
    expect(replan.leaves).toEqual([]);
    expect(cache.stats.keyChecks).toBeGreaterThan(0);

    const later = await run(store, second, cache, T0 + days(400), T0 + days(800));
    expect(phasesOf(later)).toEqual(expect.arrayContaining(['prepare', 'activate']));
    for (const w of later.filter((x) => x.kind === 'ca')) expect(Object.values(w.data).join('\n')).not.toMatch(/PRIVATE KEY/);
    expect(caData(store)['ca.key']).toBeUndefined();
    expect(opensslVerify(store, token.dir, namespaces, T0 + days(800))).toEqual(namespaces.map((n) => `${join(token.dir, `${n}-tls.pem`)}: OK`));
  });

  test('an RSA-2048 CA key is generated and signs in the token too', async () => {
    const rsa = resolvePolicy({ keyAlgorithm: 'RSA-2048' });
    const store = new MemoryStore();
    store.setServices('tenant-a', [{ name: 'provider' }]);
    const backend = token.backend();
    const cache = new CertificateCache(backend.verifier);
    const plan = planRotation(store.snapshot(), { now: T0, policy: rsa, cache });
    for (const write of await executePlan(plan, { crypto: backend, cache })) store.apply(write);
    expect(Object.keys(caData(store)).sort()).toEqual(['ca.crt', 'ca.key-ref']);
    expect(String(store.get({ namespace: 'tenant-a' })!.data['tls.key'])).toContain('BEGIN PRIVATE KEY'); // the leaf key is software
    expect(opensslVerify(store, token.dir, ['tenant-a'], T0)).toEqual([`${join(token.dir, 'tenant-a-tls.pem')}: OK`]);
    expect(planRotation(store.snapshot(), { now: T0, policy: rsa, cache: new CertificateCache(backend.verifier) }).ca).toBeUndefined();
  });

  test('with keepRetiredKeys, retired keys stay in the token', async () => {
    const store = new MemoryStore();
    store.setServices('tenant-a', [{ name: 'provider' }]);
    const backend = token.backend({ keepRetiredKeys: true });
    const writes = await run(store, backend, new CertificateCache(backend.verifier), T0, T0 + days(400));
    expect(phasesOf(writes)).toContain('retire');
    const everyKey = new Set(
      writes
        .flatMap((w) => [w.data['ca.key-ref'], w.data['next.key-ref']])
        .filter((r) => r !== undefined)
        .map((r) => keyIdOf(r!)),
    );
    expect(token.privateKeysElsewhere()).toEqual([...everyKey].sort());
  });

  test('a wrong PIN fails the CA step: no CA is made, and with an existing CA nothing recovers or signs', async () => {
    const store = new MemoryStore();
    store.setServices('tenant-a', [{ name: 'provider' }]);
    const wrong = token.backend({ pin: '000000' });
    const initial = planRotation(store.snapshot(), { now: T0, policy, cache: new CertificateCache(wrong.verifier) });
    await expect(materializeCaChange(initial, { crypto: wrong })).rejects.toThrow(/CKR_PIN_INCORRECT/);
    expect(store.get('ca')).toBeUndefined();
    wrong.close();

    const right = token.backend();
    await run(store, right, new CertificateCache(right.verifier), T0, T0 + days(1));
    right.close();
    // Restarted with a wrong PIN, and a new namespace to serve.
    store.setServices('tenant-b', [{ name: 'provider' }]);
    const restarted = token.backend({ pin: '000000' });
    const plan = planRotation(store.snapshot(), { now: T0 + days(1), policy, cache: new CertificateCache(restarted.verifier) });
    expect(plan.ca).toBeUndefined();
    expect(plan.leaves.map((l) => l.target)).toEqual([{ namespace: 'tenant-b' }]);
    await expect(materializeCaChange(plan, { crypto: restarted })).rejects.toThrow(CaKeyUnavailableError);
    // The refused PIN is not presented again (a real HSM locks after a few tries).
    await expect(executePlan(plan, { crypto: restarted })).rejects.toThrow(/not presented again/);
  });

  test('a key deleted from the token fails the CA step instead of starting a recovery', async () => {
    const store = new MemoryStore();
    store.setServices('tenant-a', [{ name: 'provider' }]);
    const backend = token.backend();
    const cache = new CertificateCache(backend.verifier);
    await run(store, backend, cache, T0, T0 + days(1));
    token.deleteKeyElsewhere(parseKeyReference(caData(store)['ca.key-ref']!).id);
    store.setServices('tenant-b', [{ name: 'provider' }]);

    // The same process (its cache knew the key) and a restarted one both refuse to sign.
    const plan = planRotation(store.snapshot(), { now: T0 + days(1), policy, cache });
    await expect(materializeCaChange(plan, { crypto: backend })).rejects.toThrow(/holds no public key/);
    backend.close();
    const restarted = token.backend();
    const replan = planRotation(store.snapshot(), { now: T0 + days(1), policy, cache: new CertificateCache(restarted.verifier) });
    expect(replan.ca).toBeUndefined();
    await expect(executePlan(replan, { crypto: restarted })).rejects.toThrow(/holds no public key/);
    expect(store.get({ namespace: 'tenant-b' })).toBeUndefined();
  });
});

describe('a pending intermediate key in the token (an upstream issuer)', () => {
  let token: TestToken;
  beforeEach(() => {
    token = createTestToken();
  });
  afterEach(() => token.remove());

  test('survives the CA writes made while its request is pending, and is destroyed once nothing keeps it', async () => {
    const crypto = token.backend();
    const cache = new CertificateCache(crypto.verifier);
    const store = new MemoryStore();
    store.setServices('a', [{ name: 'p' }]);
    await run(store, crypto, cache, T0, T0);
    const pending = await crypto.caSigner!.generateKey(policy.keyAlgorithm);
    const before = token.privateKeysElsewhere();
    expect(before).toContain(keyIdOf(pending.privateKeyPem));
    // A CA write (a rotation request) while the key is pending: the plan keeps it, so the token does.
    const plan = materializePlan(store, cache, T0 + 1000);
    await materializeCaChange({ ...plan, trust: { ...plan.trust, pending: pending.privateKeyPem } }, { crypto, cache });
    expect(token.privateKeysElsewhere()).toContain(keyIdOf(pending.privateKeyPem));
    // Without it (answered and placed, or replaced), the next CA write lets the token destroy it.
    await materializeCaChange(materializePlan(store, cache, T0 + 2000), { crypto, cache });
    expect(token.privateKeysElsewhere()).not.toContain(keyIdOf(pending.privateKeyPem));
    crypto.close();
  });
});

/** A plan with a CA write (a rotation asked for on the CA Secret), at `at`. */
function materializePlan(store: MemoryStore, cache: CertificateCache, at: Instant): Plan {
  const ca = store.get('ca')!;
  store.put('ca', { ...ca, annotations: { ...ca.annotations, 'eso-mtls.io/rotate': `token-${at}` } });
  const plan = planRotation(store.snapshot(), { now: at, policy, cache });
  if (!plan.ca) throw new Error('expected a CA write');
  return plan;
}
