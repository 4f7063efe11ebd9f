import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  CHAIN_REFUSAL_REASONS,
  type CertificateView,
  type ChainRefusalReason,
  MAX_ANCHOR_CERTIFICATES,
  MAX_CHAIN_CERTIFICATES,
  MAX_CHAIN_PEM_BYTES,
  chainNotAfter,
  clampNotAfter,
  days,
  hours,
  minutes,
  parseCertificate,
  readChainPem,
  verifyChain,
} from '@eso-mtls/core';
import { withinDnsSubtree } from '../../src/x509/chain-rules.js';
import { type MadeCertificate, OpensslPki } from '../support/openssl-pki.js';
import { nodeBackend, openssl, tempDir } from '../support/fixtures.js';

// Every PKI here is made by the openssl CLI, and every verdict of ours is set against
// `openssl verify -x509_strict` on the same files at the same instant: both accept, or both refuse
// and our reason names the cause. Where we are stricter by design (order, size, a minimum
// validity), the test says so and shows OpenSSL accepting.
const verifier = nodeBackend().verifier;
const tmp = tempDir('chain');
afterAll(() => tmp.remove());

const NOW = Math.floor(Date.now() / 1000) * 1000;
/** The instant both verifiers judge at: a minute on, so that roots made just now are valid. */
const AT = NOW + minutes(1);
const VALID: [number, number] = [NOW - hours(1), NOW + days(365)];

let pki: OpensslPki;
const made: Record<string, MadeCertificate> = {};
const view = (name: string): CertificateView => made[name]!.view;

beforeAll(() => {
  pki = new OpensslPki(tmp.dir);
  const add = (c: MadeCertificate): void => void (made[c.name] = c);
  const issue = (name: string, subject: string, issuer: string, section: Parameters<OpensslPki['issue']>[3], validity = VALID): void =>
    add(pki.issue(name, subject, made[issuer]!, section, ...validity));

  add(pki.root('root', '/O=Acme/CN=Acme Root'));
  // Same name, another key: an anchor that does not match.
  add(pki.root('impostor-root', '/O=Acme/CN=Acme Root'));
  add(pki.root('stranger-root', '/O=Stranger/CN=Stranger Root'));
  add(pki.root('root-pathlen1', '/O=Acme/CN=Acme Root PL1', 'root_pathlen1'));

  issue('issuing', '/O=Acme/CN=Acme Issuing CA', 'root', 'intermediate');
  issue('ours', '/O=Acme/CN=eso-mtls provider CA intermediate', 'issuing', 'intermediate_pathlen0');
  issue('leaf', '/CN=provider.team-a.svc', 'ours', 'leaf');

  issue('not-ca', '/O=Acme/CN=Not a CA', 'root', 'not_ca');
  issue('leaf-of-not-ca', '/CN=provider.team-a.svc', 'not-ca', 'leaf');

  issue('pathlen0', '/O=Acme/CN=Acme PL0 CA', 'root', 'intermediate_pathlen0');
  issue('under-pathlen0', '/O=Acme/CN=Acme Sub CA', 'pathlen0', 'intermediate');
  issue('leaf-of-under-pathlen0', '/CN=provider.team-a.svc', 'under-pathlen0', 'leaf');

  issue('issuing-pl1-root', '/O=Acme/CN=Acme Issuing CA 2', 'root-pathlen1', 'intermediate');
  issue('ours-pl1-root', '/O=Acme/CN=eso-mtls provider CA intermediate 2', 'issuing-pl1-root', 'intermediate_pathlen0');
  issue('leaf-of-ours-pl1-root', '/CN=provider.team-a.svc', 'ours-pl1-root', 'leaf');

  issue('no-cert-sign', '/O=Acme/CN=No keyCertSign', 'root', 'no_cert_sign');
  issue('leaf-of-no-cert-sign', '/CN=provider.team-a.svc', 'no-cert-sign', 'leaf');

  issue('other-domains', '/O=Acme/CN=Other domains CA', 'root', 'permits_other_domains');
  issue('leaf-of-other-domains', '/CN=provider.team-a.svc', 'other-domains', 'leaf');
  issue('svc', '/O=Acme/CN=svc CA', 'root', 'permits_svc');
  issue('leaf-of-svc', '/CN=provider.team-a.svc', 'svc', 'leaf');
  issue('excludes', '/O=Acme/CN=Excluding CA', 'root', 'excludes_team_a');
  issue('leaf-of-excludes', '/CN=provider.team-a.svc', 'excludes', 'leaf');
  issue('directory-name', '/O=Acme/CN=Directory name CA', 'root', 'permits_directory_name');
  issue('leaf-of-directory-name', '/CN=provider.team-a.svc', 'directory-name', 'leaf');

  issue('unknown-critical', '/O=Acme/CN=Unknown critical CA', 'root', 'unknown_critical');
  issue('leaf-of-unknown-critical', '/CN=provider.team-a.svc', 'unknown-critical', 'leaf');

  issue('expired', '/O=Acme/CN=Expired CA', 'root', 'intermediate', [NOW - days(2), NOW - days(1)]);
  issue('leaf-of-expired', '/CN=provider.team-a.svc', 'expired', 'leaf');
  issue('future', '/O=Acme/CN=Future CA', 'root', 'intermediate', [NOW + days(1), NOW + days(30)]);
  issue('leaf-of-future', '/CN=provider.team-a.svc', 'future', 'leaf');
  // Valid for ten minutes in all, nine of them left at AT.
  issue('ten-minutes', '/O=Acme/CN=Ten-minute CA', 'root', 'intermediate', [AT - minutes(1), AT + minutes(9)]);
  issue('leaf-of-ten-minutes', '/CN=provider.team-a.svc', 'ten-minutes', 'leaf', [AT - minutes(1), AT + minutes(9)]);

  // The intermediate with one bit of its signature flipped.
  const der = Uint8Array.from(view('ours').der);
  der[der.length - 3]! ^= 0x01;
  const tampered = parseCertificate(der);
  made['tampered'] = { ...made['ours']!, name: 'tampered', file: tmp.write('tampered.pem', tampered.pem), view: tampered };
  issue('leaf-of-tampered', '/CN=provider.team-a.svc', 'ours', 'leaf');
});

/** One case: leaf (if any) and chain by name, bottom up; the anchors; the expected verdicts. */
interface Case {
  readonly leaf?: string;
  readonly chain: readonly string[];
  readonly anchors: readonly string[];
  readonly minimumRemaining?: number;
  /** Our verdict: accepted, or the reason and what the message must name. */
  readonly ours: 'ok' | { readonly reason: ChainRefusalReason; readonly names: string };
  /** OpenSSL's verdict, and for a refusal what it says. */
  readonly openssl: 'ok' | RegExp;
}

const CASES: Record<string, Case> = {
  'root → issuing → ours → leaf': { leaf: 'leaf', chain: ['ours', 'issuing'], anchors: ['root'], ours: 'ok', openssl: 'ok' },
  'root → issuing → ours, the CA that will issue': { chain: ['ours', 'issuing'], anchors: ['root'], ours: 'ok', openssl: 'ok' },
  'a chain ending with its root, which is the anchor': { leaf: 'leaf', chain: ['ours', 'issuing', 'root'], anchors: ['root'], ours: 'ok', openssl: 'ok' },
  'among several anchors': { leaf: 'leaf', chain: ['ours', 'issuing'], anchors: ['stranger-root', 'impostor-root', 'root'], ours: 'ok', openssl: 'ok' },
  'an intermediate without CA:TRUE': {
    leaf: 'leaf-of-not-ca',
    chain: ['not-ca'],
    anchors: ['root'],
    ours: { reason: 'not_ca', names: 'CN=Not a CA,O=Acme' },
    openssl: /invalid CA certificate|invalid non-CA certificate/,
  },
  // OpenSSL builds the path from an unordered pool; we want the order a TLS 1.2 peer is sent.
  'a chain out of order (OpenSSL reorders it)': {
    leaf: 'leaf',
    chain: ['issuing', 'ours'],
    anchors: ['root'],
    ours: { reason: 'out_of_order', names: 'CN=provider.team-a.svc' },
    openssl: 'ok',
  },
  'a chain missing its middle': {
    leaf: 'leaf',
    chain: ['issuing'],
    anchors: ['root'],
    ours: { reason: 'missing_issuer', names: 'CN=eso-mtls provider CA intermediate,O=Acme' },
    openssl: /unable to get local issuer certificate/,
  },
  'an anchor of the same name and another key': {
    leaf: 'leaf',
    chain: ['ours', 'issuing'],
    anchors: ['impostor-root'],
    ours: { reason: 'no_anchor', names: 'has the name CN=Acme Root,O=Acme but not the key' },
    openssl: /certificate signature failure|unable to get local issuer certificate/,
  },
  'an anchor of another name': {
    leaf: 'leaf',
    chain: ['ours', 'issuing'],
    anchors: ['stranger-root'],
    ours: { reason: 'no_anchor', names: 'CN=Acme Issuing CA,O=Acme' },
    openssl: /unable to get (local )?issuer certificate/,
  },
  'a signature that does not verify': {
    leaf: 'leaf-of-tampered',
    chain: ['tampered', 'issuing'],
    anchors: ['root'],
    ours: { reason: 'bad_signature', names: 'CN=eso-mtls provider CA intermediate,O=Acme' },
    openssl: /certificate signature failure/,
  },
  'an intermediate with pathlen 0 under which another intermediate signs': {
    leaf: 'leaf-of-under-pathlen0',
    chain: ['under-pathlen0', 'pathlen0'],
    anchors: ['root'],
    ours: { reason: 'path_length', names: 'CN=Acme PL0 CA,O=Acme' },
    openssl: /path length constraint exceeded/,
  },
  // The root allows one intermediate, the issuing CA; ours would be a second.
  'a root with pathlen 1 above the issuing CA: a leaf of ours is refused': {
    leaf: 'leaf-of-ours-pl1-root',
    chain: ['ours-pl1-root', 'issuing-pl1-root'],
    anchors: ['root-pathlen1'],
    ours: { reason: 'path_length', names: 'CN=Acme Root PL1,O=Acme' },
    openssl: /path length constraint exceeded/,
  },
  // Without a leaf, ours is judged as the CA it is asked to be, so refused before it signs a leaf;
  // OpenSSL judges it as an end entity (the case above shows it refusing the first leaf ours signs).
  'a root with pathlen 1 above the issuing CA: ours, before any leaf': {
    chain: ['ours-pl1-root', 'issuing-pl1-root'],
    anchors: ['root-pathlen1'],
    ours: { reason: 'path_length', names: 'CN=Acme Root PL1,O=Acme' },
    openssl: 'ok',
  },
  'keyUsage without keyCertSign': {
    leaf: 'leaf-of-no-cert-sign',
    chain: ['no-cert-sign'],
    anchors: ['root'],
    ours: { reason: 'key_usage', names: 'CN=No keyCertSign,O=Acme' },
    openssl: /key usage does not include certificate signing/,
  },
  'name constraints permitting only other domains': {
    leaf: 'leaf-of-other-domains',
    chain: ['other-domains'],
    anchors: ['root'],
    ours: { reason: 'name_constraints', names: 'names provider.team-a.svc, outside the DNS names CN=Other domains CA,O=Acme (serial' },
    openssl: /permitted subtree violation/,
  },
  'name constraints permitting the leaf’s domains': { leaf: 'leaf-of-svc', chain: ['svc'], anchors: ['root'], ours: 'ok', openssl: 'ok' },
  'name constraints excluding the leaf’s domain': {
    leaf: 'leaf-of-excludes',
    chain: ['excludes'],
    anchors: ['root'],
    ours: { reason: 'name_constraints', names: 'names provider.team-a.svc, which CN=Excluding CA,O=Acme (serial' },
    openssl: /excluded subtree violation/,
  },
  'critical name constraints on directory names': {
    leaf: 'leaf-of-directory-name',
    chain: ['directory-name'],
    anchors: ['root'],
    ours: { reason: 'name_constraints', names: 'permitted directoryName' },
    openssl: /permitted subtree violation/,
  },
  'an unknown critical extension': {
    leaf: 'leaf-of-unknown-critical',
    chain: ['unknown-critical'],
    anchors: ['root'],
    ours: { reason: 'critical_extension', names: '1.3.6.1.4.1.55555.1' },
    openssl: /unhandled critical extension/,
  },
  'an expired link': {
    leaf: 'leaf-of-expired',
    chain: ['expired'],
    anchors: ['root'],
    ours: { reason: 'expired', names: 'CN=Expired CA,O=Acme' },
    openssl: /certificate has expired/,
  },
  'a link not yet valid': {
    leaf: 'leaf-of-future',
    chain: ['future'],
    anchors: ['root'],
    ours: { reason: 'not_yet_valid', names: 'CN=Future CA,O=Acme' },
    openssl: /certificate is not yet valid/,
  },
  'an intermediate valid for 10 minutes, with no minimum': {
    leaf: 'leaf-of-ten-minutes',
    chain: ['ten-minutes'],
    anchors: ['root'],
    ours: 'ok',
    openssl: 'ok',
  },
  // OpenSSL has no notion of a minimum: the certificate is valid.
  'an intermediate valid for 10 minutes, when an hour is the minimum': {
    leaf: 'leaf-of-ten-minutes',
    chain: ['ten-minutes'],
    anchors: ['root'],
    minimumRemaining: hours(1),
    ours: { reason: 'too_short', names: 'CN=Ten-minute CA,O=Acme (serial' },
    openssl: 'ok',
  },
};

/** `openssl verify -x509_strict` at AT of the case's bottom certificate, the rest as untrusted, the anchors as CAfile. */
function opensslVerdict(c: Case): { readonly ok: boolean; readonly output: string } {
  const [target, ...untrusted] = c.leaf ? [c.leaf, ...c.chain] : c.chain;
  const anchors = pki.bundle(
    `anchors-${c.anchors.join('+')}.pem`,
    c.anchors.map((n) => made[n]!),
  );
  const pool =
    untrusted.length > 0
      ? [
          '-untrusted',
          pki.bundle(
            `untrusted-${untrusted.join('+')}.pem`,
            untrusted.map((n) => made[n]!),
          ),
        ]
      : [];
  const r = openssl(['verify', '-x509_strict', '-attime', String(AT / 1000), '-CAfile', anchors, ...pool, made[target!]!.file]);
  return { ok: r.status === 0 && /: OK\s*$/.test(r.output), output: r.output };
}

describe('verifyChain, set against openssl verify -x509_strict', () => {
  it.each(Object.entries(CASES))('%s', (_name, c) => {
    const result = verifyChain({
      ...(c.leaf ? { leaf: view(c.leaf) } : {}),
      chain: c.chain.map(view),
      anchors: c.anchors.map(view),
      at: AT,
      verifier,
      ...(c.minimumRemaining === undefined ? {} : { minimumRemaining: c.minimumRemaining }),
    });
    if (c.ours === 'ok') {
      expect(result).toMatchObject({ ok: true });
    } else {
      expect(result).toMatchObject({ ok: false, reason: c.ours.reason });
      expect(result.ok ? '' : result.message).toContain(c.ours.names);
    }
    const theirs = opensslVerdict(c);
    if (c.openssl === 'ok') {
      expect(theirs).toEqual({ ok: true, output: expect.stringContaining('OK') });
    } else {
      expect(theirs.ok).toBe(false);
      expect(theirs.output).toMatch(c.openssl);
    }
  });

  it('an accepted path runs bottom up to the anchor, and ends when its first CA does', () => {
    const result = verifyChain({ leaf: view('leaf'), chain: [view('ours'), view('issuing'), view('root')], anchors: [view('root')], at: AT, verifier });
    if (!result.ok) throw new Error(result.message);
    expect(result.path.map((c) => c.subject)).toEqual([
      'CN=provider.team-a.svc',
      'CN=eso-mtls provider CA intermediate,O=Acme',
      'CN=Acme Issuing CA,O=Acme',
      'CN=Acme Root,O=Acme',
    ]);
    expect(result.anchor).toBe(view('root'));
    expect(result.notAfter).toBe(Math.min(view('ours').notAfter, view('issuing').notAfter, view('root').notAfter));
  });

  it('every reason is one of CHAIN_REFUSAL_REASONS', () => {
    for (const c of Object.values(CASES)) if (c.ours !== 'ok') expect(CHAIN_REFUSAL_REASONS).toContain(c.ours.reason);
  });
});

describe('verifyChain: what only we check', () => {
  it('refuses a chain that certifies another key than the one requested (a tls.key of another certificate)', () => {
    const input = { chain: [view('ours'), view('issuing')], anchors: [view('root')], at: AT, verifier };
    expect(verifyChain({ ...input, subjectPublicKeyInfo: view('ours').subjectPublicKeyInfo })).toMatchObject({ ok: true });
    const result = verifyChain({ ...input, subjectPublicKeyInfo: view('leaf').subjectPublicKeyInfo });
    expect(result).toMatchObject({ ok: false, reason: 'key_mismatch' });
    expect(result.ok ? '' : result.message).toContain('CN=eso-mtls provider CA intermediate,O=Acme');
  });

  it(`refuses more than ${MAX_CHAIN_CERTIFICATES} certificates, or more than ${MAX_ANCHOR_CERTIFICATES} anchors, before judging them`, () => {
    const chain = Array.from({ length: MAX_CHAIN_CERTIFICATES }, () => view('ours'));
    expect(verifyChain({ leaf: view('leaf'), chain, anchors: [view('root')], at: AT, verifier })).toMatchObject({
      ok: false,
      reason: 'too_large',
      message: `the chain holds ${MAX_CHAIN_CERTIFICATES + 1} certificates, over the limit of ${MAX_CHAIN_CERTIFICATES}`,
    });
    const anchors = Array.from({ length: MAX_ANCHOR_CERTIFICATES + 1 }, () => view('root'));
    expect(verifyChain({ chain: [view('ours'), view('issuing')], anchors, at: AT, verifier })).toMatchObject({ ok: false, reason: 'too_large' });
  });

  it('refuses 5 MB of PEM without parsing it, and text that is not certificates as malformed', () => {
    const block = view('root').pem;
    const huge = block.repeat(Math.ceil((5 * 1024 * 1024) / block.length));
    // The size message, not a count: refused on its length before any parsing.
    expect(readChainPem(huge)).toEqual({
      ok: false,
      reason: 'too_large',
      message: `the PEM is ${huge.length} bytes, over the limit of ${MAX_CHAIN_PEM_BYTES}`,
    });
    expect(readChainPem(block.repeat(MAX_CHAIN_CERTIFICATES + 1))).toMatchObject({ ok: false, reason: 'too_large' });
    expect(readChainPem('not PEM at all')).toMatchObject({ ok: false, reason: 'malformed' });
    expect(readChainPem(`${view('ours').pem}${view('issuing').pem}`)).toEqual({ ok: true, certificates: [view('ours'), view('issuing')] });
  });

  it('refuses an empty chain, and one that holds only its anchor', () => {
    expect(verifyChain({ chain: [], anchors: [view('root')], at: AT, verifier })).toMatchObject({ ok: false, reason: 'empty' });
    expect(verifyChain({ chain: [view('root')], anchors: [view('root')], at: AT, verifier })).toMatchObject({ ok: false, reason: 'empty' });
  });
});

describe('a leaf never outlives its intermediate', () => {
  it('clampNotAfter cuts a requested notAfter to the earliest notAfter along the chain', () => {
    const chain = [view('ten-minutes'), view('root')];
    expect(chainNotAfter(chain)).toBe(view('ten-minutes').notAfter);
    expect(clampNotAfter(AT + days(30), chain)).toBe(view('ten-minutes').notAfter);
    expect(clampNotAfter(AT + minutes(5), chain)).toBe(AT + minutes(5));
  });
});

describe('withinDnsSubtree (RFC 5280 4.2.1.10)', () => {
  it.each([
    ['svc', 'svc', true],
    ['provider.team-a.svc', 'svc', true],
    ['provider.team-a.SVC', 'svc', true],
    ['providersvc', 'svc', false],
    ['svc.cluster.local', 'svc', false],
    ['a.corp.example', '.corp.example', true],
    ['corp.example', '.corp.example', false],
    ['anything.example', '', true],
  ])('%s within %s: %s', (name, base, within) => {
    expect(withinDnsSubtree(name, base)).toBe(within);
  });
});
