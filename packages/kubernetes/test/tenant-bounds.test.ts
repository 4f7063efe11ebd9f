import { describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { type Policy, ROTATE_ACKNOWLEDGED_ANNOTATION, ROTATE_ANNOTATION, acknowledgementOf, seconds } from '@eso-mtls/core';
import type { Logger } from '../src/index.js';
import { type RecordingAdapter, converge, startAdapter } from '@eso-mtls/test-kit/adapter';
import { TestClock } from '@eso-mtls/test-kit/clock';
import { certificates, text } from '@eso-mtls/test-kit/secrets';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { useInstallations } from '@eso-mtls/test-kit/installations';

const CA_SECRET = 'eso-provider-ca-internal';
const FAST: Partial<Policy> = { propagationDelay: seconds(2), maxConnectionAge: seconds(2) };

const suite = useInstallations();

/** A logger that keeps every record's text, to measure what reaches the logs. */
function capturingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const keep = (fields: Record<string, unknown>, message: string): void => void lines.push(`${message} ${JSON.stringify(fields)}`);
  return { lines, debug: keep, info: keep, warn: keep, error: keep };
}

/** Starts an adapter with a capturing logger; the caller stops it. */
async function adapterFor(eso: string, clock: TestClock, logger: Logger): Promise<RecordingAdapter> {
  return startAdapter(suite.plane.adminKubeConfig, eso, { now: clock.now, policy: FAST, logger });
}

const fingerprints = (pem: string): string[] => certificates(pem).map((c) => c.fingerprint256);

describe('what a tenant puts on its Services is bounded', () => {
  it('huge rotate annotations are refused and copied nowhere; that namespace, the others and the CA retirement all go on', async () => {
    const c = suite.cluster;
    const eso = await c.namespace('eso-tenant-huge');
    const [noisy, quiet] = [await c.namespace('tb-noisy'), await c.namespace('tb-quiet')];
    // Past 256 KiB of annotations in all, as 0.1 copied them into one Secret annotation; each Service stays under the apiserver's cap.
    const names = Array.from({ length: 8 }, (_, i) => `svc-${i}`);
    for (const name of names) {
      await c.labelledService(noisy, name, { [ROTATE_ANNOTATION]: `${name}-${'x'.repeat(140_000)}` });
      suite.deleteAfterTest(noisy, name);
    }
    await c.labelledService(quiet, 'provider');
    suite.deleteAfterTest(quiet, 'provider');
    const clock = new TestClock();
    const logger = capturingLogger();
    const run = await adapterFor(eso, clock, logger);
    try {
      await converge(run.adapter);
      const secret = (await c.secret(noisy))!;
      expect(new X509Certificate(text(secret, 'tls.crt')).subjectAltName).toContain('DNS:svc-7.tb-noisy.svc');
      expect(secret.metadata?.annotations?.[ROTATE_ACKNOWLEDGED_ANNOTATION]).toBeUndefined();
      expect(text(await c.secret(quiet), 'tls.crt')).toContain('BEGIN CERTIFICATE');
      expect(run.failures).toEqual([]);
      expect(run.adapter.lastRound?.plan.refused.map((r) => [r.service, r.reason])).toEqual(names.map((n) => [n, 'rotate_request_too_large']));
      // No log record carries the tenant's value, nor anything close to its size.
      expect(logger.lines.filter((l) => l.includes('xxxxxxxxxxxxxxxx'))).toEqual([]);
      expect(Math.max(...logger.lines.map((l) => l.length))).toBeLessThan(4096);

      // A CA rotation still completes: the old CA leaves every bundle, the noisy namespace's included.
      const ca0 = new X509Certificate(text(await c.secret(eso, CA_SECRET), 'ca.crt'));
      const ca = (await c.secret(eso, CA_SECRET))!;
      ca.metadata!.annotations = { ...ca.metadata!.annotations, [ROTATE_ANNOTATION]: 'rotate-1' };
      await c.core.replaceNamespacedSecret({ namespace: eso, name: CA_SECRET, body: ca });
      await eventually(() => expect(run.writes.filter((w) => w.kind === 'ca').map((w) => w.phases?.join('+'))).toEqual(['create', 'prepare']));
      for (let i = 0; i < 4; i++) {
        clock.advance(seconds(5));
        await converge(run.adapter);
      }
      expect(run.writes.filter((w) => w.kind === 'ca').map((w) => w.phases?.join('+'))).toEqual(['create', 'prepare', 'activate', 'retire']);
      for (const ns of [noisy, quiet]) expect(fingerprints(text(await c.secret(ns), 'ca.crt'))).not.toContain(ca0.fingerprint256);
    } finally {
      await run.adapter.stop();
    }
  });

  it("upgrade from 0.1: Secrets acknowledged in 0.1's format (raw tokens) are not re-issued; a new token still is", async () => {
    const c = suite.cluster;
    const eso = await c.namespace('eso-tenant-upgrade');
    const ns = await c.namespace('tb-upgrade');
    await c.labelledService(ns, 'provider', { [ROTATE_ANNOTATION]: 'ticket-1' });
    suite.deleteAfterTest(ns, 'provider');
    const clock = new TestClock();
    const first = await adapterFor(eso, clock, capturingLogger());
    await converge(first.adapter);
    await first.adapter.stop();
    // What 0.1 wrote on its Secrets: the JSON of each Service's raw token.
    const secret = (await c.secret(ns))!;
    secret.metadata!.annotations = { ...secret.metadata!.annotations, [ROTATE_ACKNOWLEDGED_ANNOTATION]: '{"provider":"ticket-1"}' };
    await c.core.replaceNamespacedSecret({ namespace: ns, name: secret.metadata!.name!, body: secret });
    const serial = new X509Certificate(text(await c.secret(ns), 'tls.crt')).serialNumber;

    const upgraded = await adapterFor(eso, clock, capturingLogger());
    try {
      await converge(upgraded.adapter);
      expect(upgraded.writes).toEqual([]);
      expect(new X509Certificate(text(await c.secret(ns), 'tls.crt')).serialNumber).toBe(serial);
      await c.patchService(ns, 'provider', (_, a) => (a[ROTATE_ANNOTATION] = 'ticket-2'));
      await eventually(() => expect(upgraded.reasonsFor(`namespace/${ns}`)).toEqual(['forced']));
      await converge(upgraded.adapter);
      expect(JSON.parse((await c.secret(ns))!.metadata!.annotations![ROTATE_ACKNOWLEDGED_ANNOTATION]!)).toEqual({ provider: acknowledgementOf('ticket-2') });
    } finally {
      await upgraded.adapter.stop();
    }
  });
});
