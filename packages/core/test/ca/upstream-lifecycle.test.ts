import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  CA_REQUEST_ANNOTATION,
  CA_SOURCE_ANNOTATION,
  type CaRequestObservation,
  type CertificateView,
  type Instant,
  MemoryStore,
  type Plan,
  type SecretWrite,
  type UpstreamObservation,
  days,
  executePlan,
  hours,
  materializeCaRequest,
  minutes,
  parseCertificate,
  planRotation,
  readCertificationRequest,
} from '@eso-mtls/core';
import { type MadeCertificate, OpensslPki } from '../support/openssl-pki.js';
import { openssl, tempDir } from '../support/fixtures.js';
import { Pki, describeWrites, text } from '../support/planner.js';
import { failures, lintPem } from '../support/zlint.js';

// The upstream CA's whole life through the planner, with the openssl CLI as the organisation's
// issuer: it answers our PKCS#10 requests as a cert-manager CA issuer would. Every chained leaf is
// checked by `openssl verify -x509_strict` with only the anchor trusted.
const tmp = tempDir('upstream-lifecycle');
afterAll(() => tmp.remove());

const ISSUER = 'issuer/ClusterIssuer/org-ca';
/** Now to the second, and a minute on: the roots openssl makes in beforeAll are valid from the real now. */
const START = Math.floor(Date.now() / 1000) * 1000 + minutes(1);
let upstreamPki: OpensslPki;
let root: MadeCertificate;
let otherRoot: MadeCertificate;
let answers = 0;

beforeAll(() => {
  upstreamPki = new OpensslPki(tmp.dir);
  root = upstreamPki.root('root', '/O=Acme/CN=Acme Root');
  otherRoot = upstreamPki.root('other-root', '/O=Acme/CN=Acme Root 2027');
});

/** A cluster with one provider namespace, planned and written by the core with openssl upstream. */
class Cluster {
  readonly pki = new Pki();
  readonly store = new MemoryStore();
  anchors: readonly MadeCertificate[] = [root];
  request?: CaRequestObservation;
  constructor(public now: Instant) {
    this.store.setServices('a', [{ name: 'p' }]);
  }

  observation(): UpstreamObservation {
    return {
      kind: 'issuer',
      source: ISSUER,
      anchors: { ok: true, text: this.anchors.map((a) => a.view.pem).join('') },
      issuer: { state: 'ready', message: 'Signing CA verified' },
      ...(this.request ? { request: this.request } : {}),
      requestedValidity: days(365),
      requestDeadline: hours(1),
    };
  }

  plan(): Plan {
    return planRotation({ ...this.store.snapshot(), upstream: this.observation() }, { now: this.now, policy: this.pki.policy, cache: this.pki.cache });
  }

  /** Plans, makes the request the plan asks for (writing its pending key), executes, applies. */
  async round(): Promise<{ plan: Plan; writes: SecretWrite[]; csr?: string }> {
    const plan = this.plan();
    if (plan.upstream?.request && !plan.ca) {
      const material = await materializeCaRequest(plan, this.store.get('ca'), this.pki.crypto);
      if (material.write) this.store.apply(material.write);
      this.request = { name: material.name, state: 'pending', since: this.now, message: 'waiting for approval' };
      return { plan, writes: material.write ? [material.write] : [], csr: material.csrPem };
    }
    const writes = await executePlan(plan, { crypto: this.pki.crypto, now: this.now });
    for (const w of writes) this.store.apply(w);
    return { plan, writes };
  }

  /** The issuer answers the pending request with `issuer`'s key, as `section`, for `validity`. */
  answer(
    csr: string,
    issuer: MadeCertificate,
    section: Parameters<OpensslPki['answer']>[3] = 'intermediate_pathlen0',
    validity = days(365),
    chain: readonly MadeCertificate[] = [],
  ): CertificateView {
    const issued = upstreamPki.answer(`answer-${++answers}`, csr, issuer, section, this.now - minutes(1), this.now + validity);
    this.request = { ...this.request!, state: 'issued', since: this.now, certificate: issued.pem + chain.map((c) => c.view.pem).join(''), ca: root.view.pem };
    return issued;
  }
}

/** `openssl verify -x509_strict` of the leaf Secret in `namespace`, trusting its ca.crt only, its tls.crt's rest untrusted. */
function verifyServed(cluster: Cluster, purpose: 'sslserver' | 'sslclient', secret: ReturnType<MemoryStore['get']>): string {
  const pems = text(secret, 'tls.crt')
    .split(/(?<=-----END CERTIFICATE-----\n)/)
    .filter((p) => p.trim() !== '');
  const leaf = tmp.write(`leaf-${++answers}.pem`, pems[0]!);
  const untrusted = tmp.write(`untrusted-${answers}.pem`, pems.slice(1).join('') || pems[0]!);
  const anchors = tmp.write(`anchors-${answers}.pem`, text(secret, 'ca.crt'));
  const at = Math.floor(cluster.now / 1000) + 60;
  return openssl(['verify', '-x509_strict', '-attime', String(at), '-purpose', purpose, '-CAfile', anchors, '-untrusted', untrusted, leaf]).output;
}

describe('an intermediate from an issuer', () => {
  it('is asked for, never replaced by a root of our own, and signs once issued: leaves chain to the anchor only', async () => {
    const c = new Cluster(START);
    const first = await c.round();
    expect(first.plan.upstream?.request?.kind).toBe('create');
    expect(first.plan.ca).toBeUndefined();
    expect(first.plan.leaves).toEqual([]);
    expect(first.plan.waiting.length).toBeGreaterThan(0);
    // The pending key is stored before the request leaves; nothing else is in the CA Secret.
    const ca = c.store.get('ca')!;
    expect(Object.keys(ca.data)).toEqual(['pending.key']);
    expect(ca.annotations[CA_REQUEST_ANNOTATION]).toBe(c.request!.name);
    const csr = readCertificationRequest(first.csr!);
    expect(csr.isCa).toBe(true);

    // Pending: nothing is asked again, nothing signs.
    const waiting = await c.round();
    expect(waiting.plan.upstream?.request).toBeUndefined();
    expect(waiting.writes).toEqual([]);

    const intermediate = c.answer(first.csr!, root);
    const issued = await c.round();
    expect(describeWrites(issued.writes)).toEqual(['ca:create', 'client:initial', 'namespace/a:initial']);
    const written = c.store.get('ca')!;
    expect(text(written, 'ca.crt')).toBe(intermediate.pem + root.view.pem);
    expect(written.data['pending.key']).toBeUndefined();
    expect(written.annotations[CA_REQUEST_ANNOTATION]).toBe('');
    expect(written.annotations[CA_SOURCE_ANNOTATION]).toBe(ISSUER);
    const provider = c.store.get({ namespace: 'a' })!;
    expect(text(provider, 'ca.crt')).toBe(root.view.pem);
    expect(text(provider, 'tls.crt').endsWith(intermediate.pem)).toBe(true);
    expect(verifyServed(c, 'sslserver', provider)).toMatch(/: OK/);
    expect(verifyServed(c, 'sslclient', c.store.get('client'))).toMatch(/: OK/);
    // For the right purpose only.
    expect(verifyServed(c, 'sslclient', provider)).not.toMatch(/: OK/);
    // zlint (the lints testing/zlint/exclusions.json keeps) on the chained leaves and the intermediate we asked for.
    for (const [name, pem] of [
      ['server leaf', text(provider, 'tls.crt').split(/(?<=-----END CERTIFICATE-----\n)/)[0]!],
      ['client leaf', text(c.store.get('client'), 'tls.crt').split(/(?<=-----END CERTIFICATE-----\n)/)[0]!],
      ['intermediate', intermediate.pem],
    ] as const) {
      const verdicts = lintPem(tmp.write(`zlint-${name.replace(' ', '-')}.pem`, pem));
      expect({ name, ran: Object.keys(verdicts).length > 50, failures: failures(verdicts) }).toEqual({ name, ran: true, failures: {} });
    }
    // Converged.
    expect((await c.round()).writes).toEqual([]);
  });

  it('renews under the same anchor: no bundle changes, no wait, the leaves move as ca_rotated', async () => {
    const c = new Cluster(START);
    const first = await c.round();
    c.answer(first.csr!, root);
    await c.round();
    const bundleBefore = text(c.store.get({ namespace: 'a' }), 'ca.crt');

    c.now += days(365) - days(60) + hours(1);
    const asking = await c.round();
    expect(asking.plan.upstream?.request).toMatchObject({ kind: 'create', reason: 'expiring' });
    // The old intermediate keeps signing meanwhile.
    expect(c.store.get('ca')!.data['ca.crt']).toBeDefined();
    const renewed = c.answer(asking.csr!, root);
    const moved = await c.round();
    expect(moved.writes[0]!.phases).toEqual(['renew']);
    expect(describeWrites(moved.writes)).toEqual(['ca:renew', 'client:ca_rotated', 'namespace/a:ca_rotated']);
    expect(moved.writes.some((w) => w.kind === 'bundle')).toBe(false);
    const provider = c.store.get({ namespace: 'a' })!;
    expect(text(provider, 'ca.crt')).toBe(bundleBefore);
    expect(text(provider, 'tls.crt').endsWith(renewed.pem)).toBe(true);
    expect(verifyServed(c, 'sslserver', provider)).toMatch(/: OK/);
    expect((await c.round()).writes).toEqual([]);
  });

  it("restores a lost intermediate certificate from the client Secret's tls.crt chain when its key is good: nothing asked, nothing re-issued", async () => {
    const c = new Cluster(START);
    const first = await c.round();
    const intermediate = c.answer(first.csr!, root);
    await c.round();
    const before = c.store.get('ca')!;
    const leavesBefore = [text(c.store.get('client'), 'tls.crt'), text(c.store.get({ namespace: 'a' }), 'tls.crt')];

    // Someone removed ca.crt (the path); ca.key is intact.
    c.now += hours(1);
    const { 'ca.crt': _lost, ...rest } = before.data;
    c.store.put('ca', { ...before, data: rest });
    const restored = await c.round();
    expect(restored.plan.upstream?.request).toBeUndefined();
    expect(restored.writes.map((w) => w.phases ?? w.reason)).toEqual([['restore']]);
    expect(restored.writes[0]!.message).toContain("is restored from the client Secret's tls.crt chain and nothing is re-issued");
    expect(text(c.store.get('ca'), 'ca.crt')).toBe(intermediate.pem + root.view.pem);
    expect([text(c.store.get('client'), 'tls.crt'), text(c.store.get({ namespace: 'a' }), 'tls.crt')]).toEqual(leavesBefore);
    expect((await c.round()).writes).toEqual([]);

    // The chain is ours only where ESO's namespace holds it: without the client's chain, the key's certificate cannot be told, and it is asked for again.
    c.now += hours(1);
    const client = c.store.get('client')!;
    const leafOnly = text(client, 'tls.crt').split(/(?<=-----END CERTIFICATE-----\n)/)[0]!;
    c.store.put('client', { ...client, data: { ...client.data, 'tls.crt': leafOnly } });
    const { 'ca.crt': _again, ...kept } = c.store.get('ca')!.data;
    c.store.put('ca', { ...c.store.get('ca')!, data: kept });
    const asked = await c.round();
    expect(asked.writes.flatMap((w) => w.phases ?? [])).not.toContain('restore');
  });

  it('moves to another anchor through the overlap: the new anchor is published, waits propagationDelay, then signs', async () => {
    const c = new Cluster(START);
    const first = await c.round();
    c.answer(first.csr!, root);
    await c.round();

    c.anchors = [otherRoot];
    c.now += days(365) - days(60) + hours(1);
    const asking = await c.round();
    c.answer(asking.csr!, otherRoot);
    const prepared = await c.round();
    expect(prepared.writes[0]!.phases).toEqual(['prepare']);
    const provider = c.store.get({ namespace: 'a' })!;
    expect(text(provider, 'ca.crt')).toBe(root.view.pem + otherRoot.view.pem);

    // Not before propagationDelay.
    c.now += minutes(1);
    expect((await c.round()).writes.some((w) => w.phases?.includes('activate'))).toBe(false);
    c.now += c.pki.policy.propagationDelay;
    const activated = await c.round();
    expect(activated.writes[0]!.phases).toEqual(['activate']);
    expect(describeWrites(activated.writes).slice(1).sort()).toEqual(['client:ca_rotated', 'namespace/a:ca_rotated']);
    expect(verifyServed(c, 'sslserver', c.store.get({ namespace: 'a' }))).toMatch(/: OK/);

    // The old anchor is retired once nothing in use depends on it and the replacements reached peers.
    c.now += c.pki.policy.propagationDelay + c.pki.policy.maxConnectionAge + minutes(1);
    const retired = await c.round();
    expect(retired.writes[0]!.phases).toEqual(['retire']);
    expect(text(c.store.get({ namespace: 'a' }), 'ca.crt')).toBe(otherRoot.view.pem);
  });
});

describe('refused answers keep the intermediate that signs and say why', () => {
  const cases: [string, (c: Cluster, csr: string) => void, string][] = [
    ['no CA:TRUE', (c, csr) => void c.answer(csr, root, 'not_ca'), 'not_ca'],
    ['valid for 10 minutes', (c, csr) => void c.answer(csr, root, 'intermediate_pathlen0', minutes(10)), 'too_short'],
    ['an anchor that does not match', (c, csr) => void c.answer(csr, otherRoot), 'no_anchor'],
    [
      'a chain out of order',
      (c, csr) => {
        const issuing = upstreamPki.issue(`issuing-${++answers}`, '/O=Acme/CN=Acme Issuing', root, 'intermediate', c.now - hours(1), c.now + days(700));
        const ours = upstreamPki.answer(`ooo-${++answers}`, csr, issuing, 'intermediate_pathlen0', c.now - minutes(1), c.now + days(365));
        c.request = { ...c.request!, state: 'issued', since: c.now, certificate: ours.pem + root.view.pem + issuing.view.pem };
      },
      'out_of_order',
    ],
    [
      'a path length that forbids issuing',
      (c, csr) => {
        const pl0 = upstreamPki.issue(`pl0-${++answers}`, '/O=Acme/CN=Acme PL0', root, 'intermediate_pathlen0', c.now - hours(1), c.now + days(700));
        c.answer(csr, pl0, 'intermediate_pathlen0', days(365), [pl0]);
      },
      'path_length',
    ],
    [
      'a certificate for another key',
      (c) => {
        const other = upstreamPki.issue(`other-key-${++answers}`, '/O=Acme/CN=Other', root, 'intermediate_pathlen0', c.now - minutes(1), c.now + days(365));
        c.request = { ...c.request!, state: 'issued', since: c.now, certificate: other.view.pem };
      },
      'key_mismatch',
    ],
    [
      '5 MB of PEM',
      (c) => void (c.request = { ...c.request!, state: 'issued', since: c.now, certificate: root.view.pem.repeat(Math.ceil(5e6 / root.view.pem.length)) }),
      'too_large',
    ],
  ];

  it.each(cases)('%s', async (_name, answer, reason) => {
    const c = new Cluster(START);
    const first = await c.round();
    c.answer(first.csr!, root);
    await c.round();
    const signing = text(c.store.get('ca'), 'ca.crt');

    c.now += days(365) - days(60) + hours(1);
    const asking = await c.round();
    answer(c, asking.csr!);
    const refused = await c.round();
    expect(refused.plan.upstream?.problems.map((p) => p.reason)).toContain(reason);
    expect(refused.writes.filter((w) => w.kind === 'ca')).toEqual([]);
    expect(text(c.store.get('ca'), 'ca.crt')).toBe(signing);
    // Asked again only after the back-off, with a new key.
    expect(refused.plan.upstream?.request).toBeUndefined();
    c.now += hours(1);
    expect(c.plan().upstream?.request?.kind).toBe('create');
  });

  it('a denied request is reported, and asked again after the back-off; status.ca only cross-checks', async () => {
    const c = new Cluster(START);
    await c.round();
    c.request = { ...c.request!, state: 'denied', since: c.now, message: 'policy: not allowed' };
    const denied = c.plan();
    expect(denied.upstream?.problems).toEqual([expect.objectContaining({ reason: 'request_denied', message: expect.stringMatching(/policy: not allowed/) })]);
    expect(denied.ca).toBeUndefined();
    expect(denied.upstream?.request).toBeUndefined();
    c.now += hours(1);
    const again = await c.round();
    expect(again.plan.upstream?.request?.kind).toBe('create');
    const intermediate = c.answer(again.csr!, root);
    c.request = { ...c.request!, ca: otherRoot.view.pem };
    const issued = await c.round();
    expect(issued.plan.upstream?.problems.map((p) => p.reason)).toEqual(['status_ca_mismatch']);
    expect(text(c.store.get('ca'), 'ca.crt')).toBe(intermediate.pem + root.view.pem);
  });

  it('a request pending past its deadline is reported as overdue', async () => {
    const c = new Cluster(START);
    await c.round();
    expect(c.plan().upstream?.problems).toEqual([]);
    c.now += hours(1);
    expect(c.plan().upstream?.problems.map((p) => p.reason)).toEqual(['request_overdue']);
  });
});

describe('moving between the self-signed CA and an upstream one', () => {
  it('goes both ways through the overlap, with the source recorded', async () => {
    const c = new Cluster(START);
    // Self-signed first: plan without the upstream.
    const selfSigned = async (): Promise<SecretWrite[]> => {
      const plan = planRotation(c.store.snapshot(), { now: c.now, policy: c.pki.policy, cache: c.pki.cache });
      const writes = await executePlan(plan, { crypto: c.pki.crypto, now: c.now });
      for (const w of writes) c.store.apply(w);
      return writes;
    };
    await selfSigned();
    const selfRoot = parseCertificate(text(c.store.get('ca'), 'ca.crt'));
    expect(c.store.get('ca')!.annotations[CA_SOURCE_ANNOTATION]).toBeUndefined();

    const asking = await c.round();
    expect(asking.plan.upstream?.request).toMatchObject({ kind: 'create', reason: 'ca_mismatch' });
    c.answer(asking.csr!, root);
    expect((await c.round()).writes[0]!.phases).toEqual(['prepare']);
    expect(text(c.store.get({ namespace: 'a' }), 'ca.crt')).toBe(selfRoot.pem + root.view.pem);
    c.now += c.pki.policy.propagationDelay + minutes(1);
    expect((await c.round()).writes[0]!.phases).toEqual(['activate']);
    expect(c.store.get('ca')!.annotations[CA_SOURCE_ANNOTATION]).toBe(ISSUER);
    expect(verifyServed(c, 'sslserver', c.store.get({ namespace: 'a' }))).toMatch(/: OK/);

    // And back.
    c.now += hours(1);
    const back = await selfSigned();
    expect(back[0]!.phases).toEqual(['retire', 'prepare']);
    expect(back[0]!.reason).toBe('ca_mismatch');
    c.now += c.pki.policy.propagationDelay + minutes(1);
    const activated = await selfSigned();
    expect(activated[0]!.phases).toContain('activate');
    expect(c.store.get('ca')!.annotations[CA_SOURCE_ANNOTATION]).toBe('self-signed');
    expect(text(c.store.get('ca'), 'ca.crt').match(/BEGIN CERTIFICATE/g)).toHaveLength(1);
  });
});
