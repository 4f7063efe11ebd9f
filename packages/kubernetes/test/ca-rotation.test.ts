import { describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { type Policy, ROTATE_ANNOTATION, days, minutes, seconds } from '@eso-mtls/core';
import type { V1Secret } from '@kubernetes/client-node';
import { certificates, text } from '@eso-mtls/test-kit/secrets';
import { converge } from '@eso-mtls/test-kit/adapter';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { useInstallations } from '@eso-mtls/test-kit/installations';
import { chainsTo, leafAndBundle } from '@eso-mtls/test-kit/secrets';
import { rogueCa } from '@eso-mtls/test-kit/pki';
import { handshake, material } from './support/tls.js';

const CA_SECRET = 'eso-provider-ca-internal';
const CLIENT_SECRET = 'eso-provider-client-tls';

const suite = useInstallations();

/** Propagation and connection age short enough that a rotation completes within the 5-minute backdate of real time. */
const FAST: Partial<Policy> = { propagationDelay: seconds(2), maxConnectionAge: seconds(2) };

/** The installation's Secrets as they are now. */
interface TrustState {
  readonly ca: V1Secret;
  readonly client: V1Secret;
  readonly providers: Map<string, V1Secret>;
}

async function trustState(eso: string, namespaces: string[]): Promise<TrustState> {
  const providers = new Map<string, V1Secret>();
  for (const ns of namespaces) providers.set(ns, (await suite.cluster.secret(ns))!);
  return { ca: (await suite.cluster.secret(eso, CA_SECRET))!, client: (await suite.cluster.secret(eso, CLIENT_SECRET))!, providers };
}

/**
 * Trust holds between every pair of peers: each provider's leaf chains to a CA in the client's
 * bundle and the client's leaf to a CA in every provider's bundle (Node's X509Certificate checks),
 * also between this state and `previous`, i.e. with a peer that has not yet received the latest
 * Secret update. With `handshakes`, real mutual TLS handshakes on loopback prove the same; they
 * need certificates valid by the wall clock, so only while the test clock is near real time.
 */
async function expectTrust(state: TrustState, previous: TrustState | undefined, handshakes: boolean): Promise<void> {
  const pairs: [string, V1Secret, V1Secret][] = [];
  for (const [ns, secret] of state.providers) {
    pairs.push([`${ns} now/now`, secret, state.client]);
    if (previous)
      pairs.push([`${ns} old provider/new client`, previous.providers.get(ns)!, state.client], [`${ns} new provider/old client`, secret, previous.client]);
  }
  for (const [label, server, client] of pairs) {
    const s = leafAndBundle(server);
    const c = leafAndBundle(client);
    expect({ label, serverTrusted: chainsTo(s.leaf, c.bundle), clientTrusted: chainsTo(c.leaf, s.bundle) }).toEqual({
      label,
      serverTrusted: true,
      clientTrusted: true,
    });
    if (handshakes) {
      const servername = `provider.${server.metadata!.namespace}.svc`;
      expect({ label, result: await handshake(material(server), material(client), servername) }).toEqual({ label, result: 'ok' });
    }
  }
}

const fingerprints = (pem: string): string[] => certificates(pem).map((c) => c.fingerprint256);

describe('CA rotation on the real apiserver', () => {
  it('rotates the CA with overlapping bundles at every step and re-issues every leaf with ca_rotated', async () => {
    const namespaces = ['rot-a', 'rot-b'];
    const { run, clock, eso } = await suite.setup('rotation', namespaces);
    const ca0 = new X509Certificate(text(await suite.cluster.secret(eso, CA_SECRET), 'ca.crt'));
    // Renew the leaves just before the CA's lookahead, so that the rotation is all that is due after.
    clock.set(Date.parse(ca0.validTo) - days(61));
    await converge(run.adapter);
    let previous = await trustState(eso, namespaces);
    await expectTrust(previous, undefined, false);
    const renewals = namespaces.map((ns) => run.reasonsFor(`namespace/${ns}`).length);

    clock.advance(days(1) + 1000); // the CA enters its 60-day lookahead
    const seen: string[] = [];
    for (let step = 0; step < 30; step++) {
      await converge(run.adapter);
      const state = await trustState(eso, namespaces);
      await expectTrust(state, previous, false);
      const active = new X509Certificate(text(state.ca, 'ca.crt')).fingerprint256;
      const phase = `${active === ca0.fingerprint256 ? 'old' : 'new'} active, next=${text(state.ca, 'next.crt') !== ''}, retired=${fingerprints(text(state.ca, 'retired.crt')).length}`;
      if (seen.at(-1) !== phase) seen.push(phase);
      // The next CA is in every bundle before it signs anything.
      if (text(state.ca, 'next.crt') !== '') {
        const next = fingerprints(text(state.ca, 'next.crt'))[0]!;
        for (const secret of [state.client, ...state.providers.values()]) expect(fingerprints(text(secret, 'ca.crt'))).toContain(next);
      }
      previous = state;
      if (phase === 'new active, next=false, retired=0') break;
      clock.advance(minutes(5));
    }
    expect(seen).toEqual(['old active, next=true, retired=0', 'new active, next=false, retired=1', 'new active, next=false, retired=0']);
    const caPhases = run.writes.filter((w) => w.kind === 'ca').map((w) => w.phases?.join('+'));
    expect(caPhases).toEqual(['create', 'prepare', 'activate', 'retire']);
    for (const [i, ns] of namespaces.entries()) {
      expect(run.reasonsFor(`namespace/${ns}`).slice(renewals[i])).toEqual(['ca_rotated']);
      expect(fingerprints(text(previous.providers.get(ns), 'ca.crt'))).toEqual([new X509Certificate(text(previous.ca, 'ca.crt')).fingerprint256]);
    }
    expect(run.reasonsFor('client').at(-1)).toBe('ca_rotated');
  });

  it('starts an overlap rotation on eso-mtls.io/rotate on the CA Secret, and a hard cut-over on "emergency"', async () => {
    const namespaces = ['rot-forced'];
    const { run, clock, eso } = await suite.setup('ca-forced', namespaces, FAST);
    const annotate = async (value: string): Promise<void> => {
      const s = (await suite.cluster.secret(eso, CA_SECRET))!;
      s.metadata!.annotations = { ...s.metadata!.annotations, [ROTATE_ANNOTATION]: value };
      await suite.cluster.core.replaceNamespacedSecret({ namespace: eso, name: CA_SECRET, body: s });
    };
    await annotate('rotate-1');
    await eventually(() => expect(run.writes.filter((w) => w.kind === 'ca').map((w) => w.phases?.join('+'))).toEqual(['create', 'prepare']));
    await converge(run.adapter);
    expect(run.writes.filter((w) => w.kind === 'ca').at(-1)?.reason).toBe('forced');
    let previous = await trustState(eso, namespaces);
    await expectTrust(previous, undefined, true);
    for (let i = 0; i < 3; i++) {
      clock.advance(seconds(5));
      await converge(run.adapter);
      const state = await trustState(eso, namespaces);
      await expectTrust(state, previous, true);
      previous = state;
    }
    expect(run.reasonsFor('namespace/rot-forced')).toEqual(['initial', 'ca_rotated']);
    expect(run.writes.filter((w) => w.kind === 'ca').map((w) => w.phases?.join('+'))).toEqual(['create', 'prepare', 'activate', 'retire']);
    expect(text(previous.ca, 'retired.crt')).toBe('');

    const before = new X509Certificate(text(previous.ca, 'ca.crt'));
    await annotate('emergency');
    await eventually(() => expect(run.writes.filter((w) => w.kind === 'ca').at(-1)?.phases).toEqual(['emergency']));
    await converge(run.adapter);
    const after = await trustState(eso, namespaces);
    const fresh = new X509Certificate(text(after.ca, 'ca.crt'));
    expect(fresh.fingerprint256).not.toBe(before.fingerprint256);
    // A hard cut-over: the old CA is gone from every bundle at once, and every leaf was re-issued.
    for (const secret of [after.client, ...after.providers.values()]) expect(fingerprints(text(secret, 'ca.crt'))).toEqual([fresh.fingerprint256]);
    expect(text(after.ca, 'retired.crt')).toBe('');
    expect(run.reasonsFor('namespace/rot-forced').at(-1)).toBe('forced');
    expect(run.reasonsFor('client').at(-1)).toBe('forced');
    await expectTrust(after, undefined, true);
  });

  it('recovers a deleted CA Secret by an overlap rotation seeded only from the ESO namespace', async () => {
    const namespaces = ['rec-a', 'rec-b'];
    const { run, clock, eso } = await suite.setup('recovery', namespaces, FAST);
    const ca0 = new X509Certificate(text(await suite.cluster.secret(eso, CA_SECRET), 'ca.crt'));
    // An admin of rec-b plants their own CA in its bundle: recovery must not adopt it.
    const rogue = await rogueCa(['x']);
    await suite.cluster.overwriteSecretData('rec-b', 'external-secrets-provider-tls', (d) => (d['ca.crt'] = rogue.ca.certificate.pem + d['ca.crt']));
    await suite.cluster.deleteSecret(eso, CA_SECRET);
    await eventually(async () => expect(text(await suite.cluster.secret(eso, CA_SECRET), 'next.crt')).toContain('BEGIN CERTIFICATE'));
    await converge(run.adapter);
    let previous = await trustState(eso, namespaces);
    expect(fingerprints(text(previous.ca, 'retired.crt'))).toEqual([ca0.fingerprint256]);
    expect(text(previous.ca, 'ca.key')).toBe('');
    await expectTrust(previous, undefined, true);

    for (let i = 0; i < 10 && text(previous.ca, 'retired.crt') !== ''; i++) {
      clock.advance(seconds(5));
      await converge(run.adapter);
      const state = await trustState(eso, namespaces);
      await expectTrust(state, previous, true);
      previous = state;
    }
    expect(text(previous.ca, 'retired.crt')).toBe('');
    const ca1 = new X509Certificate(text(previous.ca, 'ca.crt'));
    expect(ca1.fingerprint256).not.toBe(ca0.fingerprint256);
    for (const ns of namespaces) expect(run.reasonsFor(`namespace/${ns}`).at(-1)).toBe('ca_rotated');
    const rogueFingerprint = new X509Certificate(rogue.ca.certificate.pem).fingerprint256;
    for (const s of await suite.cluster.allSecrets()) {
      for (const value of Object.values(s.data ?? {})) expect(fingerprints(Buffer.from(value, 'base64').toString())).not.toContain(rogueFingerprint);
    }
    expect(run.writes.filter((w) => w.kind === 'ca')[1]).toMatchObject({ phases: ['recover'], reason: 'secret_missing' });
  });

  it("wakes at the plan's nextDueAt by itself: a forced rotation completes with no event and no reconcileNow()", async () => {
    const { run, eso } = await suite.setup('due', ['rot-due'], FAST, true);
    const s = (await suite.cluster.secret(eso, CA_SECRET))!;
    s.metadata!.annotations = { ...s.metadata!.annotations, [ROTATE_ANNOTATION]: 'by-timer' };
    await suite.cluster.core.replaceNamespacedSecret({ namespace: eso, name: CA_SECRET, body: s });
    // Activation and retirement come due seconds later; nothing but the adapter's own timer wakes it
    // (the safety-net interval is 10 minutes).
    await eventually(
      () => expect(run.writes.filter((w) => w.kind === 'ca').map((w) => w.phases?.join('+'))).toEqual(['create', 'prepare', 'activate', 'retire']),
      30_000,
      'the CA rotation to run its phases by its own timer',
      250,
    );
    expect(run.reasonsFor('namespace/rot-due')).toEqual(['initial', 'ca_rotated']);
  });

  it('rewrites a foreign CA out of a provider bundle without re-issuing, and never spreads it', async () => {
    const namespaces = ['bnd-a', 'bnd-b'];
    const { run, eso } = await suite.setup('bundle', namespaces);
    const rogue = await rogueCa(['provider.bnd-a.svc']);
    const rogueFingerprint = new X509Certificate(rogue.ca.certificate.pem).fingerprint256;
    const leafBefore = text(await suite.cluster.secret('bnd-a'), 'tls.crt');
    const expected = text(await suite.cluster.secret('bnd-a'), 'ca.crt');
    await suite.cluster.overwriteSecretData('bnd-a', 'external-secrets-provider-tls', (d) => (d['ca.crt'] = d['ca.crt'] + rogue.ca.certificate.pem));
    await eventually(async () => expect(text(await suite.cluster.secret('bnd-a'), 'ca.crt')).toBe(expected));
    await converge(run.adapter);
    expect(text(await suite.cluster.secret('bnd-a'), 'tls.crt')).toBe(leafBefore);
    expect(run.reasonsFor('namespace/bnd-a')).toEqual(['initial']);
    expect(run.writes.filter((w) => w.target === 'namespace/bnd-a').map((w) => w.kind)).toEqual(['serverLeaf', 'bundle']);
    const state = await trustState(eso, namespaces);
    for (const secret of [state.ca, state.client, ...state.providers.values()]) {
      for (const value of Object.values(secret.data ?? {})) expect(fingerprints(Buffer.from(value, 'base64').toString())).not.toContain(rogueFingerprint);
    }
  });
});
