import { describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { ROTATE_ACKNOWLEDGED_ANNOTATION, ROTATE_ANNOTATION, acknowledgementOf, days } from '@eso-mtls/core';
import { converge } from '@eso-mtls/test-kit/adapter';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { text } from '@eso-mtls/test-kit/secrets';
import { useInstallations } from '@eso-mtls/test-kit/installations';
import { chainsTo, leafAndBundle } from '@eso-mtls/test-kit/secrets';
import { rogueCa } from '@eso-mtls/test-kit/pki';

const suite = useInstallations();

const serial = async (ns: string): Promise<string> => new X509Certificate(text(await suite.cluster.secret(ns), 'tls.crt')).serialNumber;

// The hooks record a write once its response is read, which can come after the test's own read
// of the Secret: a check that follows such a read waits for the hook.
describe('each rotation trigger, with the clock injected', () => {
  it('re-creates a deleted Secret: secret_missing', async () => {
    const { run, eso } = await suite.setup('missing', ['trg-missing']);
    await suite.cluster.deleteSecret('trg-missing');
    await eventually(async () => expect(text(await suite.cluster.secret('trg-missing'), 'tls.crt')).toContain('BEGIN CERTIFICATE'));
    await eventually(() => expect(run.reasonsFor('namespace/trg-missing')).toEqual(['initial', 'secret_missing']));

    await suite.cluster.deleteSecret(eso, 'eso-provider-client-tls');
    await eventually(async () => expect(await suite.cluster.secret(eso, 'eso-provider-client-tls')).toBeDefined());
    await eventually(() => expect(run.reasonsFor('client')).toEqual(['initial', 'secret_missing']));
  });

  it('renews a leaf at its renewal time, not before: expiring', async () => {
    const { run, clock } = await suite.setup('expiring', ['trg-expiring']);
    const first = await serial('trg-expiring');
    clock.advance(days(50)); // before notAfter - 35 d - jitter (at most 3 d)
    await converge(run.adapter);
    expect(await serial('trg-expiring')).toBe(first);

    clock.advance(days(6));
    await converge(run.adapter);
    expect(await serial('trg-expiring')).not.toBe(first);
    expect(run.reasonsFor('namespace/trg-expiring')).toEqual(['initial', 'expiring']);
    expect(run.reasonsFor('client')).toEqual(['initial', 'expiring']);
    const leaf = new X509Certificate(text(await suite.cluster.secret('trg-expiring'), 'tls.crt'));
    // Issued at the injected time: notBefore is the clock minus the 5-minute backdate.
    expect(Math.abs(Date.parse(leaf.validFrom) - (clock.now() - 5 * 60_000))).toBeLessThan(2000);
  });

  it('re-issues when a Service joins the namespace: dns_changed', async () => {
    const { run } = await suite.setup('dns', ['trg-dns']);
    await suite.cluster.labelledService('trg-dns', 'second');
    suite.deleteAfterTest('trg-dns', 'second');
    await eventually(async () =>
      expect(new X509Certificate(text(await suite.cluster.secret('trg-dns'), 'tls.crt')).subjectAltName).toContain('DNS:second.trg-dns.svc'),
    );
    await eventually(() => expect(run.reasonsFor('namespace/trg-dns')).toEqual(['initial', 'dns_changed']));
  });

  it('replaces a leaf from another CA written into the Secret: ca_mismatch', async () => {
    const { run } = await suite.setup('mismatch', ['trg-mismatch']);
    const dnsNames = ['provider', 'provider.trg-mismatch', 'provider.trg-mismatch.svc', 'provider.trg-mismatch.svc.cluster.local'];
    const rogue = await rogueCa(dnsNames);
    await suite.cluster.overwriteSecretData('trg-mismatch', 'external-secrets-provider-tls', (d) => {
      d['tls.crt'] = rogue.leaf.certificate.pem;
      d['tls.key'] = rogue.leaf.privateKeyPem;
    });
    await eventually(() => expect(run.reasonsFor('namespace/trg-mismatch')).toEqual(['initial', 'ca_mismatch']));
    await converge(run.adapter);
    const { leaf, bundle } = leafAndBundle(await suite.cluster.secret('trg-mismatch'));
    expect(chainsTo(leaf, bundle)).toBe(true);
    expect(leaf.checkIssued(new X509Certificate(rogue.ca.certificate.pem))).toBe(false);
  });

  it('replaces garbage: invalid', async () => {
    const { run } = await suite.setup('invalid', ['trg-invalid']);
    await suite.cluster.overwriteSecretData('trg-invalid', 'external-secrets-provider-tls', (d) => {
      d['tls.crt'] = '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n';
    });
    await eventually(() => expect(run.reasonsFor('namespace/trg-invalid')).toEqual(['initial', 'invalid']));
    await converge(run.adapter);
    const { leaf, bundle } = leafAndBundle(await suite.cluster.secret('trg-invalid'));
    expect(chainsTo(leaf, bundle)).toBe(true);
  });

  it('re-issues once per new eso-mtls.io/rotate value on a Service: forced', async () => {
    const { run } = await suite.setup('forced', ['trg-forced']);
    await suite.cluster.patchService('trg-forced', 'provider', (_, a) => (a[ROTATE_ANNOTATION] = 'ticket-1'));
    await eventually(() => expect(run.reasonsFor('namespace/trg-forced')).toEqual(['initial', 'forced']));
    await converge(run.adapter);
    const secret = await suite.cluster.secret('trg-forced');
    expect(JSON.parse(secret?.metadata?.annotations?.[ROTATE_ACKNOWLEDGED_ANNOTATION] ?? '{}')).toEqual({ provider: acknowledgementOf('ticket-1') });
    // The same value again asks for nothing; a new value asks again.
    await suite.cluster.patchService('trg-forced', 'provider', (l) => (l['unrelated'] = 'change'));
    await converge(run.adapter);
    expect(run.reasonsFor('namespace/trg-forced')).toEqual(['initial', 'forced']);
    await suite.cluster.patchService('trg-forced', 'provider', (_, a) => (a[ROTATE_ANNOTATION] = 'ticket-2'));
    await eventually(() => expect(run.reasonsFor('namespace/trg-forced')).toEqual(['initial', 'forced', 'forced']));
    await run.adapter.flushEvents();
    expect(await suite.cluster.events('trg-forced', 'provider')).toContainEqual(
      expect.objectContaining({ reason: 'Rotated', message: expect.stringContaining('reason: forced') }),
    );
  });
});
