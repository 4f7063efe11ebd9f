// The adapter with a user's Secret as its CA source, on a real kube-apiserver: moving in from the
// self-signed CA through the overlap, a new intermediate under the same root taken at once, a bad
// one refused with what signs kept, and moving back out. Every state is checked as a peer sees it:
// each provider leaf chains to the client's bundle and back, with an old copy of either side too.
import { describe, expect, it } from '@jest/globals';
import { CA_SOURCE_ANNOTATION, type Policy, seconds, splitPemCertificates } from '@eso-mtls/core';
import type { V1Secret } from '@kubernetes/client-node';
import { type RecordingAdapter, converge, startAdapter } from '@eso-mtls/test-kit/adapter';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { useControlPlane } from '@eso-mtls/test-kit/installations';
import { opensslP256Ca } from '@eso-mtls/test-kit/pod-certificates';
import { chainsTo, leafAndBundle, text } from '@eso-mtls/test-kit/secrets';
import { opensslIntermediate } from '@eso-mtls/test-kit/upstream-pki';
import type { CaSource } from '../../src/installation/ca-source.js';

const suite = useControlPlane();
const ESO = 'eso-from-secret';
const PROVIDER = 'from-secret-a';
const CA_SECRET = 'eso-provider-ca-internal';
const CLIENT_SECRET = 'eso-provider-client-tls';
/** Short enough that an overlap completes within the test. */
const FAST: Partial<Policy> = { propagationDelay: seconds(2), maxConnectionAge: seconds(2) };
const SOURCE: CaSource = { kind: 'secret', secretName: 'org-intermediate', trustAnchors: { kind: 'Secret', name: 'org-roots', key: 'ca.crt' } };
const b64 = (s: string): string => Buffer.from(s).toString('base64');

interface Peers {
  readonly provider: V1Secret;
  readonly client: V1Secret;
}

async function peers(): Promise<Peers> {
  return { provider: (await suite.cluster.secret(PROVIDER))!, client: (await suite.cluster.secret(ESO, CLIENT_SECRET))! };
}

/** Each side's leaf, served with its intermediates, chains to the other side's bundle; also across `previous`. */
function expectTrust(now: Peers, previous: Peers): void {
  const pairs: [string, V1Secret, V1Secret][] = [
    ['now/now', now.provider, now.client],
    ['old provider/new client', previous.provider, now.client],
    ['new provider/old client', now.provider, previous.client],
  ];
  for (const [label, server, client] of pairs) {
    const s = leafAndBundle(server);
    const c = leafAndBundle(client);
    const chain = (secret: V1Secret) => splitPemCertificates(text(secret, 'tls.crt')).slice(1);
    expect({ label, server: chainsTo(s.leaf, c.bundle, chain(server)), client: chainsTo(c.leaf, s.bundle, chain(client)) }).toEqual({
      label,
      server: true,
      client: true,
    });
  }
}

/** Converges round by round, checking trust between every state and the one before. */
async function convergeTrusting(run: RecordingAdapter, until: (p: Peers) => boolean): Promise<Peers> {
  let previous = await peers();
  for (let i = 0; i < 40; i++) {
    await run.adapter.reconcileNow();
    const now = await peers();
    expectTrust(now, previous);
    if (until(now)) return now;
    previous = now;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error('did not reach the expected state');
}

/** Creates or replaces the user's Secret `name` in ESO's namespace, as the user (or their tooling) would. */
async function putSecret(name: string, data: Record<string, string>): Promise<void> {
  const body = { metadata: { name, namespace: ESO }, data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])) };
  if (await suite.cluster.secret(ESO, name)) await suite.cluster.core.replaceNamespacedSecret({ namespace: ESO, name, body });
  else await suite.cluster.core.createNamespacedSecret({ namespace: ESO, body });
}

describe("a user's Secret as the CA source", () => {
  it('moves in from the self-signed CA through the overlap, takes a renewed intermediate at once, refuses a bad one, and moves back out', async () => {
    const { cluster } = suite;
    await cluster.namespace(ESO);
    await cluster.namespace(PROVIDER);
    await cluster.labelledService(PROVIDER, 'provider');
    const kubeConfig = suite.plane.adminKubeConfig;

    // Self-signed first.
    let run = await startAdapter(kubeConfig, ESO, { now: Date.now, policy: FAST });
    await converge(run.adapter);
    const selfSigned = text((await cluster.secret(ESO, CA_SECRET))!, 'ca.crt');
    await run.adapter.stop();

    // The organisation's root and an intermediate in the user's Secret.
    const root = await opensslP256Ca('eso-mtls test organisation root');
    const first = opensslIntermediate(root, 'Acme provider intermediate 1');
    await putSecret('org-roots', { 'ca.crt': root.cert });
    await putSecret('org-intermediate', { 'tls.crt': first.cert + root.cert, 'tls.key': first.key });

    run = await startAdapter(kubeConfig, ESO, { now: Date.now, policy: FAST, caSource: SOURCE });
    try {
      const moved = await convergeTrusting(
        run,
        (p) => text(p.provider, 'ca.crt') === root.cert && splitPemCertificates(text(p.provider, 'tls.crt')).length === 2,
      );
      expect(splitPemCertificates(text(moved.provider, 'tls.crt'))[1]).toBe(splitPemCertificates(first.cert)[0]);
      expect(run.writes.filter((w) => w.kind === 'ca').map((w) => w.phases)).toEqual([['prepare'], ['activate'], ['retire']]);
      const ca = (await cluster.secret(ESO, CA_SECRET))!;
      expect(ca.metadata?.annotations?.[CA_SOURCE_ANNOTATION]).toBe('secret/org-intermediate');
      expect(text(ca, 'ca.crt')).not.toContain(selfSigned.trim());

      // A renewed intermediate under the same root: signs at once, no bundle write.
      const second = opensslIntermediate(root, 'Acme provider intermediate 2');
      const before = run.writes.length;
      await putSecret('org-intermediate', { 'tls.crt': second.cert, 'tls.key': second.key });
      const renewed = await convergeTrusting(run, (p) => splitPemCertificates(text(p.provider, 'tls.crt'))[1] === splitPemCertificates(second.cert)[0]);
      expect(text(renewed.provider, 'ca.crt')).toBe(root.cert);
      const since = run.writes.slice(before);
      expect(since.filter((w) => w.kind === 'ca').map((w) => w.phases)).toEqual([['renew']]);
      expect(since.filter((w) => w.kind === 'bundle')).toEqual([]);

      // A certificate that is not a CA: refused, what signs is kept, and the reason is in the plan.
      const notCa = opensslIntermediate(root, 'Acme not a CA', 2, 'not-ca');
      await putSecret('org-intermediate', { 'tls.crt': notCa.cert, 'tls.key': notCa.key });
      await eventually(async () => (await run.adapter.reconcileNow())?.plan.upstream?.problems.some((p) => p.reason === 'not_ca') ?? false);
      expect(text((await cluster.secret(PROVIDER))!, 'tls.crt')).toBe(text(renewed.provider, 'tls.crt'));
      // Another intermediate's key: refused as key_mismatch.
      await putSecret('org-intermediate', { 'tls.crt': second.cert, 'tls.key': first.key });
      await eventually(async () => (await run.adapter.reconcileNow())?.plan.upstream?.problems.some((p) => p.reason === 'key_mismatch') ?? false);
    } finally {
      await run.adapter.stop();
    }

    // And back to a root of our own, through the overlap.
    run = await startAdapter(kubeConfig, ESO, { now: Date.now, policy: FAST });
    try {
      const back = await convergeTrusting(
        run,
        (p) => splitPemCertificates(text(p.provider, 'tls.crt')).length === 1 && splitPemCertificates(text(p.provider, 'ca.crt')).length === 1,
      );
      expect(text(back.provider, 'ca.crt')).not.toBe(root.cert);
      expect((await cluster.secret(ESO, CA_SECRET))!.metadata?.annotations?.[CA_SOURCE_ANNOTATION]).toBe('self-signed');
    } finally {
      await run.adapter.stop();
    }
  }, 600_000);
});
