// The Kubernetes adapter on a real apiserver with the CA key in a SoftHSM2 token: the CA Secret
// holds a reference; a wrong PIN and a deleted key each take the adapter's CA failure path
// (eso_ca_certificate_rotation_failures_total, a Warning Event on the CA Secret, one log line per
// failure), nothing recovers or signs with another key, and a restart with the right PIN resumes.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { type Policy, days, minutes, seconds } from '@eso-mtls/core';
import { CoreV1Api } from '@kubernetes/client-node';
import { createLogger, parseControllerConfig, startController } from '@eso-mtls/controller';
import { ProviderCertificateAdapter } from '@eso-mtls/kubernetes';
import { ControllerMetrics } from '@eso-mtls/metrics';
import { converge } from '@eso-mtls/test-kit/adapter';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { text } from '@eso-mtls/test-kit/secrets';
import { useInstallations } from '@eso-mtls/test-kit/installations';
import { controllerLike as wiredAdapter } from '@eso-mtls/test-kit/controller-like';
import type { Pkcs11CryptoBackend } from '../src/index.js';
import { parseKeyReference } from '../src/uri.js';
import { type TestToken, createTestToken } from './support/softhsm.js';

const CA_SECRET = 'eso-provider-ca-internal';
const suite = useInstallations();
let token: TestToken;
const running: ProviderCertificateAdapter[] = [];
beforeEach(() => {
  token = createTestToken();
});
afterEach(async () => {
  for (const adapter of running.splice(0)) await adapter.stop();
  token.remove();
});

/** An adapter on `crypto`, wired to ControllerMetrics by the controller's own wiring function. */
const controllerLike = (eso: string, crypto: Pkcs11CryptoBackend, policy: Partial<Policy> = {}) =>
  wiredAdapter(suite.plane.adminKubeConfig, eso, { crypto, policy }, running);

async function caFailures(metrics: ControllerMetrics): Promise<number> {
  const metric = await metrics.registry.getSingleMetric('eso_ca_certificate_rotation_failures_total')!.get();
  return metric.values[0]?.value ?? 0;
}

async function caEvents(eso: string): Promise<string[]> {
  const events = await suite.plane.adminKubeConfig
    .makeApiClient(CoreV1Api)
    .listNamespacedEvent({ namespace: eso, fieldSelector: `involvedObject.kind=Secret,involvedObject.name=${CA_SECRET}` });
  return events.items.filter((e) => e.type === 'Warning' && e.reason === 'Failed').map((e) => e.message ?? '');
}

async function labelled(namespace: string): Promise<void> {
  await suite.cluster.namespace(namespace);
  await suite.cluster.labelledService(namespace, 'provider');
  suite.deleteAfterTest(namespace, 'provider');
}

describe('the adapter with the CA key in a PKCS#11 token', () => {
  it('stores a reference, and takes the CA failure path on a wrong PIN and on a deleted key', async () => {
    const eso = await suite.cluster.namespace('eso-hsm');
    await labelled('hsm-a');
    const first = await controllerLike(eso, token.backend());
    await first.adapter.start();
    await eventually(async () => expect(text(await suite.cluster.secret('hsm-a'), 'tls.crt')).toContain('BEGIN CERTIFICATE'));
    await converge(first.adapter);

    const caSecret = await suite.cluster.secret(eso, CA_SECRET);
    expect(Object.keys(caSecret!.data!).sort()).toEqual(['ca.crt', 'ca.key-ref']);
    for (const key of Object.keys(caSecret!.data!)) expect(text(caSecret, key)).not.toMatch(/PRIVATE KEY/);
    const reference = text(caSecret, 'ca.key-ref');
    const leaf = await suite.cluster.secret('hsm-a');
    writeFileSync(join(token.dir, 'ca.pem'), text(leaf, 'ca.crt'));
    writeFileSync(join(token.dir, 'tls.pem'), text(leaf, 'tls.crt'));
    expect(
      execFileSync('openssl', ['verify', '-purpose', 'sslserver', '-CAfile', join(token.dir, 'ca.pem'), join(token.dir, 'tls.pem')], { encoding: 'utf8' }),
    ).toContain('tls.pem: OK');
    await first.adapter.stop();

    // Restarted with a wrong PIN while a new namespace waits for its certificate.
    await labelled('hsm-b');
    const wrong = await controllerLike(eso, token.backend({ pin: '000000' }));
    await wrong.adapter.start();
    await eventually(async () => expect(await caFailures(wrong.metrics)).toBeGreaterThan(0));
    await wrong.adapter.flushEvents();
    expect(await caEvents(eso)).toContainEqual(expect.stringContaining('CKR_PIN_INCORRECT'));
    expect(wrong.logger.lines.filter((l) => l.message === 'generating or signing the CA failed').length).toBeGreaterThan(0);
    expect(await suite.cluster.secret('hsm-b')).toBeUndefined();
    expect(text(await suite.cluster.secret(eso, CA_SECRET), 'ca.key-ref')).toBe(reference);
    await wrong.adapter.stop();

    // The right PIN: the same key, still in the token, signs for the waiting namespace.
    const right = await controllerLike(eso, token.backend());
    await right.adapter.start();
    await eventually(async () => expect(text(await suite.cluster.secret('hsm-b'), 'tls.crt')).toContain('BEGIN CERTIFICATE'));
    await converge(right.adapter);
    expect(text(await suite.cluster.secret(eso, CA_SECRET), 'ca.key-ref')).toBe(reference);

    // The key deleted from the token by someone else: no recovery, no signature, the failure counted.
    token.deleteKeyElsewhere(parseKeyReference(reference).id);
    await labelled('hsm-c');
    await eventually(async () => expect(await caFailures(right.metrics)).toBeGreaterThan(0));
    await right.adapter.flushEvents();
    expect(await caEvents(eso)).toContainEqual(expect.stringContaining('holds no public key'));
    expect(await suite.cluster.secret('hsm-c')).toBeUndefined();
    const after = await suite.cluster.secret(eso, CA_SECRET);
    expect(Object.keys(after!.data!).sort()).toEqual(['ca.crt', 'ca.key-ref']);
    expect(text(after, 'ca.key-ref')).toBe(reference);
  });

  it('sees a key deleted while nothing is due at the next reconcile, not when a leaf next falls due', async () => {
    const eso = await suite.cluster.namespace('eso-hsm-idle');
    await labelled('hsm-idle');
    const run = await controllerLike(eso, token.backend());
    await run.adapter.start();
    await eventually(async () => expect(text(await suite.cluster.secret('hsm-idle'), 'tls.crt')).toContain('BEGIN CERTIFICATE'));
    await converge(run.adapter);
    expect(await caFailures(run.metrics)).toBe(0);
    const reference = text(await suite.cluster.secret(eso, CA_SECRET), 'ca.key-ref');
    token.deleteKeyElsewhere(parseKeyReference(reference).id);
    // Nothing changed in the cluster and nothing is due: the reconcile of the interval finds it.
    // The round fails (no result), and the reconciler goes on retrying with backoff.
    expect(await run.adapter.reconcileNow()).toBeUndefined();
    expect(await caFailures(run.metrics)).toBeGreaterThanOrEqual(1);
    expect(run.logger.lines.filter((l) => l.message === 'generating or signing the CA failed').length).toBeGreaterThanOrEqual(1);
    await run.adapter.flushEvents();
    expect(await caEvents(eso)).toContainEqual(expect.stringContaining('holds no public key'));
  });

  it('issues again once a token moved away is restored, without a restart', async () => {
    const eso = await suite.cluster.namespace('eso-hsm-back');
    await labelled('hsm-back-a');
    // The reopen backoff is shortened (defaults: 1 s doubling to 5 s) so that the wait below is
    // the reconciler's own retry, not a sleep; the deadline is generous, nothing is timed.
    const recovered: string[] = [];
    const run = await controllerLike(eso, token.backend({ reopenBackoff: { initialMs: 100, maxMs: 1000 }, onRecovered: () => recovered.push('back') }));
    await run.adapter.start();
    await eventually(async () => expect(text(await suite.cluster.secret('hsm-back-a'), 'tls.crt')).toContain('BEGIN CERTIFICATE'));
    await converge(run.adapter);

    // The token's folder is moved away while a new namespace waits for its certificate: loud failure.
    const restore = token.moveAway();
    await labelled('hsm-back-b');
    await eventually(async () => expect(await caFailures(run.metrics)).toBeGreaterThan(1));
    await run.adapter.flushEvents();
    expect(await caEvents(eso)).toContainEqual(expect.stringMatching(/PKCS#11 token "eso-mtls-test": .* failed: /));
    expect(await suite.cluster.secret('hsm-back-b')).toBeUndefined();
    expect(recovered).toEqual([]);

    // Put back: the same adapter, no restart, issues for the waiting namespace with the same key.
    restore();
    const reference = text(await suite.cluster.secret(eso, CA_SECRET), 'ca.key-ref');
    // The reconciler retries the failed round at most 30 s apart: twice that is the deadline.
    await eventually(async () => expect(text(await suite.cluster.secret('hsm-back-b'), 'tls.crt')).toContain('BEGIN CERTIFICATE'), 60_000);
    expect(text(await suite.cluster.secret(eso, CA_SECRET), 'ca.key-ref')).toBe(reference);
    expect(recovered).toEqual(['back']);
  }, 180_000);

  it('rotates the CA with overlap, each new key made in the token and the retired one destroyed', async () => {
    const eso = await suite.cluster.namespace('eso-hsm-rot');
    await labelled('hsm-rot');
    const { adapter, clock } = await controllerLike(eso, token.backend(), { propagationDelay: seconds(2), maxConnectionAge: seconds(2) });
    await adapter.start();
    await eventually(async () => expect(text(await suite.cluster.secret('hsm-rot'), 'tls.crt')).toContain('BEGIN CERTIFICATE'));
    await converge(adapter);
    const first = await suite.cluster.secret(eso, CA_SECRET);
    const ca0 = new X509Certificate(text(first, 'ca.crt'));
    clock.set(Date.parse(ca0.validTo) - days(61));
    await converge(adapter);
    clock.advance(days(1) + 1000); // the CA enters its 60-day lookahead

    const layouts: string[] = [];
    const references = new Set<string>();
    for (let step = 0; step < 30; step++) {
      await converge(adapter);
      const ca = (await suite.cluster.secret(eso, CA_SECRET))!;
      for (const key of Object.keys(ca.data!)) expect(text(ca, key)).not.toMatch(/PRIVATE KEY/);
      for (const key of ['ca.key-ref', 'next.key-ref']) if (text(ca, key) !== '') references.add(text(ca, key));
      const layout = Object.keys(ca.data!).sort().join(',');
      if (layouts.at(-1) !== layout) layouts.push(layout);
      if (layouts.length > 1 && layout === 'ca.crt,ca.key-ref') break;
      clock.advance(minutes(5));
    }
    expect(layouts).toEqual([
      'ca.crt,ca.key-ref,next.crt,next.key-ref', // prepared: the next key is in the token, published first
      'ca.crt,ca.key-ref,retired.crt', // activated: the old CA is retired, its key out of the Secret
      'ca.crt,ca.key-ref', // retired CA gone from every bundle: its key is destroyed
    ]);
    const now = (await suite.cluster.secret(eso, CA_SECRET))!;
    expect(new X509Certificate(text(now, 'ca.crt')).fingerprint256).not.toBe(ca0.fingerprint256);
    expect(references.size).toBe(2);
    expect(token.privateKeysElsewhere()).toEqual([Buffer.from(parseKeyReference(text(now, 'ca.key-ref')).id).toString('hex')]);
  });

  it('is what `eso-mtls controller --hsm-module` runs: the package is loaded on demand and the PIN read from a file', async () => {
    const eso = await suite.cluster.namespace('eso-hsm-ctl');
    await labelled('hsm-ctl');
    const pinFile = join(token.dir, 'pin');
    writeFileSync(pinFile, `${token.pin}\n`);
    const parsed = parseControllerConfig(
      [
        ...['--kubeconfig', suite.plane.adminKubeconfigPath, '--namespace', eso, '--metrics-bind-address=0', '--health-probe-bind-address=0'],
        ...['--hsm-module', token.modulePath, '--hsm-token-label', token.label, '--hsm-pin-file', pinFile],
      ],
      {},
    );
    if (parsed.kind !== 'config') throw new Error(`controller flags: ${JSON.stringify(parsed)}`);
    const controller = await startController(parsed.config, { logger: createLogger('silent'), identity: 'hsm-test' });
    try {
      await controller.synced;
      await eventually(async () => expect(text(await suite.cluster.secret('hsm-ctl'), 'tls.crt')).toContain('BEGIN CERTIFICATE'));
      const caSecret = await suite.cluster.secret(eso, CA_SECRET);
      expect(Object.keys(caSecret!.data!).sort()).toEqual(['ca.crt', 'ca.key-ref']);
      expect(token.privateKeysElsewhere()).toEqual([Buffer.from(parseKeyReference(text(caSecret, 'ca.key-ref')).id).toString('hex')]);
    } finally {
      await controller.stop();
    }
  });
});
