import { describe, expect, it } from '@jest/globals';
import { DEFAULT_POLICY, days, hours, minutes } from '@eso-mtls/core';
import { SELF_SIGNED } from '@eso-mtls/kubernetes';
import { type CaSourceContext, CaSourceFlagError, type CaSourceFlags, parseCaSourceFlags } from '../src/ca-source-flags.js';
import { type ConfigResult, parseControllerConfig } from '../src/index.js';

// The --ca-* flags (issue 35 item 6): read into the installation's CaSource by one pure function,
// each mistake refused with a message naming the flag, its variable, the value and what to do.

const CONTEXT: CaSourceContext = {
  policy: DEFAULT_POLICY,
  hsm: false,
  writtenSecrets: [
    ['--ca-secret-name', 'eso-provider-ca-internal'],
    ['--client-secret-name', 'eso-provider-client-tls'],
    ['the provider Secret name', 'external-secrets-provider-tls'],
  ],
};
const ANCHORS = { kind: 'Secret', name: 'org-roots', key: 'ca.crt' } as const;

const parse = (flags: CaSourceFlags, context: Partial<CaSourceContext> = {}) => parseCaSourceFlags(flags, { ...CONTEXT, ...context });
function refusal(flags: CaSourceFlags, context: Partial<CaSourceContext> = {}): string {
  try {
    parse(flags, context);
  } catch (e) {
    if (e instanceof CaSourceFlagError) return e.message;
    throw e;
  }
  throw new Error(`accepted ${JSON.stringify(flags)}`);
}

describe('parseCaSourceFlags', () => {
  it('is self-signed when no source is given', () => {
    expect(parse({})).toBe(SELF_SIGNED);
  });

  it('reads an issuer with its defaults: group cert-manager.io, deadline 1h, no duration (the CA validity), anchors key ca.crt', () => {
    expect(parse({ issuer: 'ClusterIssuer/org-ca', trustAnchors: 'Secret/org-roots' })).toEqual({
      kind: 'issuer',
      issuer: { kind: 'ClusterIssuer', name: 'org-ca', group: 'cert-manager.io' },
      trustAnchors: ANCHORS,
      requestDeadline: hours(1),
    });
  });

  it('reads every issuer setting', () => {
    expect(
      parse({
        issuer: 'Issuer/vault.issuer',
        issuerGroup: 'vault.example.com',
        intermediateDuration: '180d',
        requestDeadline: '15m',
        trustAnchors: 'ConfigMap/roots/org-root.pem',
      }),
    ).toEqual({
      kind: 'issuer',
      issuer: { kind: 'Issuer', name: 'vault.issuer', group: 'vault.example.com' },
      trustAnchors: { kind: 'ConfigMap', name: 'roots', key: 'org-root.pem' },
      duration: days(180),
      requestDeadline: minutes(15),
    });
  });

  it('reads a Secret source; the anchors may be another key of the same Secret', () => {
    expect(parse({ fromSecret: 'org-intermediate', trustAnchors: 'Secret/org-intermediate/root.crt' })).toEqual({
      kind: 'secret',
      secretName: 'org-intermediate',
      trustAnchors: { kind: 'Secret', name: 'org-intermediate', key: 'root.crt' },
    });
  });

  it('refuses both sources', () => {
    expect(refusal({ issuer: 'ClusterIssuer/a', fromSecret: 'b', trustAnchors: 'Secret/r' })).toBe(
      '--ca-issuer (env ESO_MTLS_CA_ISSUER) and --ca-from-secret (env ESO_MTLS_CA_FROM_SECRET) are both set: the CA comes from one source, a cert-manager issuer or a Secret you maintain. Set one of them',
    );
  });

  it.each([
    [{ issuer: 'ClusterIssuer/org-ca' }, '--ca-issuer needs --ca-trust-anchors (env ESO_MTLS_CA_TRUST_ANCHORS): the PEM roots the intermediate must chain to'],
    [{ fromSecret: 'org-intermediate' }, '--ca-from-secret needs --ca-trust-anchors (env ESO_MTLS_CA_TRUST_ANCHORS)'],
  ])('refuses a source without anchors: %j', (flags, message) => {
    expect(refusal(flags)).toContain(message);
  });

  it('refuses anchors without a source', () => {
    expect(refusal({ trustAnchors: 'Secret/org-roots' })).toBe(
      '--ca-trust-anchors (env ESO_MTLS_CA_TRUST_ANCHORS) is set but neither --ca-issuer nor --ca-from-secret is: the self-signed CA is its own trust anchor. Set a source, or remove --ca-trust-anchors',
    );
  });

  it.each([
    ['issuerGroup', 'ca-issuer-group', 'cert-manager.io'],
    ['intermediateDuration', 'ca-intermediate-duration', '180d'],
    ['requestDeadline', 'ca-request-deadline', '1h'],
  ])('refuses %s without --ca-issuer, even with the Secret source (it would be ignored)', (field, flag, value) => {
    const expected = `--${flag} (env ESO_MTLS_${flag.toUpperCase().replaceAll('-', '_')}) is set but --ca-issuer is not: it applies to a cert-manager issuer only. Set both, or neither`;
    expect(refusal({ [field]: value })).toBe(expected);
    expect(refusal({ [field]: value, fromSecret: 's', trustAnchors: 'Secret/r' })).toBe(expected);
  });

  it.each([
    ['ca-issuer', { issuer: 'org-ca' }, 'accepts ClusterIssuer/NAME or Issuer/NAME'],
    ['ca-issuer', { issuer: 'ClusterIssuer/org-ca/key' }, 'accepts ClusterIssuer/NAME or Issuer/NAME'],
    ['ca-issuer', { issuer: 'clusterissuer/org-ca' }, 'the kind "clusterissuer" is none of ClusterIssuer, Issuer (kinds are case-sensitive)'],
    ['ca-issuer', { issuer: 'Certificate/org-ca' }, 'the kind "Certificate" is none of ClusterIssuer, Issuer'],
    ['ca-issuer', { issuer: 'ClusterIssuer/' }, '"" is not a DNS-1123 name'],
    ['ca-trust-anchors', { trustAnchors: 'org-roots' }, 'accepts Secret/NAME[/KEY] or ConfigMap/NAME[/KEY]'],
    ['ca-trust-anchors', { trustAnchors: 'Secret/a/b/c' }, 'accepts Secret/NAME[/KEY] or ConfigMap/NAME[/KEY]'],
    ['ca-trust-anchors', { trustAnchors: 'ClusterTrustBundle/org-roots' }, 'the kind "ClusterTrustBundle" is none of Secret, ConfigMap'],
    [
      'ca-trust-anchors',
      { trustAnchors: 'Secret/Org_Roots' },
      "\"Org_Roots\" is not a DNS-1123 name (lowercase letters, digits, '-' and '.', at most 253 characters)",
    ],
    ['ca-trust-anchors', { trustAnchors: `Secret/${'a'.repeat(64)}` }, 'is not a DNS-1123 name'],
    ['ca-trust-anchors', { trustAnchors: 'Secret/org-roots/' }, 'the key "" is not a data key'],
    ['ca-trust-anchors', { trustAnchors: 'Secret/org-roots/..' }, 'the key ".." is not a data key'],
    ['ca-trust-anchors', { trustAnchors: 'Secret/org-roots/a b' }, 'the key "a b" is not a data key'],
    ['ca-from-secret', { fromSecret: 'Org.Intermediate' }, '"Org.Intermediate" is not a DNS-1123 name'],
    ['ca-from-secret', { fromSecret: '' }, '"" is not a DNS-1123 name'],
  ])('refuses a bad --%s, naming the value: %j', (flag, given, message) => {
    const source = 'issuer' in given || !('fromSecret' in given) ? { issuer: 'ClusterIssuer/org-ca' } : {};
    const text = refusal({ ...source, trustAnchors: 'Secret/org-roots', ...given });
    const value = Object.values(given)[0]!;
    expect(text).toContain(`invalid value ${JSON.stringify(value)} for --${flag} (env ESO_MTLS_${flag.toUpperCase().replaceAll('-', '_')})`);
    expect(text).toContain(message);
  });

  it("takes an external issuer's own kind in its group, and refuses what is no Kind name", () => {
    const parsed = parseCaSourceFlags({ issuer: 'AWSPCAClusterIssuer/org-pca', issuerGroup: 'awspca.cert-manager.io', trustAnchors: 'Secret/r' }, CONTEXT);
    expect(parsed).toMatchObject({ kind: 'issuer', issuer: { kind: 'AWSPCAClusterIssuer', name: 'org-pca', group: 'awspca.cert-manager.io' } });
    for (const bad of ['awspcaclusterissuer/org-pca', 'AWSPCA-Issuer/org-pca', 'AWSPCAClusterIssuer/org-pca/x', 'org-pca']) {
      expect(refusal({ issuer: bad, issuerGroup: 'awspca.cert-manager.io', trustAnchors: 'Secret/r' })).toBe(
        `invalid value ${JSON.stringify(bad)} for --ca-issuer (env ESO_MTLS_CA_ISSUER): accepts KIND/NAME, the kind of an issuer of awspca.cert-manager.io (a Kind name such as AWSPCAClusterIssuer, case-sensitive)`,
      );
    }
    expect(refusal({ issuer: 'AWSPCAClusterIssuer/Org', issuerGroup: 'awspca.cert-manager.io', trustAnchors: 'Secret/r' })).toContain(
      '"Org" is not a DNS-1123 name',
    );
    // cert-manager's own group has its two kinds only.
    expect(refusal({ issuer: 'AWSPCAClusterIssuer/org-pca', trustAnchors: 'Secret/r' })).toContain('is none of ClusterIssuer, Issuer');
  });

  it.each(['cert-manager', 'Cert-Manager.io', '', 'a..b'])('refuses the issuer group %j', (group) => {
    expect(refusal({ issuer: 'ClusterIssuer/org-ca', issuerGroup: group, trustAnchors: 'Secret/r' })).toBe(
      `invalid value ${JSON.stringify(group)} for --ca-issuer-group (env ESO_MTLS_CA_ISSUER_GROUP): accepts an API group such as cert-manager.io`,
    );
  });

  it('refuses --ca-from-secret with --hsm-module, pointing at --ca-issuer; the issuer source works with the HSM', () => {
    expect(refusal({ fromSecret: 'org-intermediate', trustAnchors: 'Secret/r' }, { hsm: true })).toBe(
      "--ca-from-secret (env ESO_MTLS_CA_FROM_SECRET) cannot be used with --hsm-module: the intermediate's key would be read from the Secret's tls.key, and the controller never puts a key into the HSM. With an HSM, use --ca-issuer: the intermediate's key is then generated in the token",
    );
    expect(parse({ issuer: 'ClusterIssuer/org-ca', trustAnchors: 'Secret/r' }, { hsm: true }).kind).toBe('issuer');
  });

  it('refuses a Secret the controller writes as the source or the anchors', () => {
    expect(refusal({ fromSecret: 'eso-provider-ca-internal', trustAnchors: 'Secret/r' })).toBe(
      '--ca-from-secret (env ESO_MTLS_CA_FROM_SECRET) names the Secret "eso-provider-ca-internal", which the controller writes (--ca-secret-name): an input must be a Secret you maintain. Name another',
    );
    expect(refusal({ issuer: 'ClusterIssuer/x', trustAnchors: 'Secret/eso-provider-client-tls' })).toContain(
      'names the Secret "eso-provider-client-tls", which the controller writes (--client-secret-name)',
    );
    expect(refusal({ fromSecret: 'external-secrets-provider-tls', trustAnchors: 'Secret/r' })).toContain(
      'which the controller writes (the provider Secret name)',
    );
    // A ConfigMap of that name is no Secret the controller writes.
    expect(parse({ issuer: 'ClusterIssuer/x', trustAnchors: 'ConfigMap/eso-provider-ca-internal' }).kind).toBe('issuer');
  });

  it('bounds the intermediate duration: from twice the CA lookahead (120d) to what Go reads', () => {
    const duration = (d: string) => parse({ issuer: 'ClusterIssuer/x', trustAnchors: 'Secret/r', intermediateDuration: d });
    expect(duration('120d')).toMatchObject({ duration: days(120) });
    expect(duration('2562047h')).toMatchObject({ duration: hours(2_562_047) });
    expect(() => duration('2562048h')).toThrow('accepts a duration such as 500ms, 15s, 10m or 1h30m, from 120d to 2562047h');
    expect(() => duration('90 days')).toThrow('from 120d to 2562047h');
    expect(() => duration('2879h59m')).toThrow(
      'invalid value "2879h59m" for --ca-intermediate-duration (env ESO_MTLS_CA_INTERMEDIATE_DURATION): too short, the least is 120d. An intermediate is renewed 60d (the CA lookahead) before its notAfter',
    );
    // The least follows the policy's lookahead.
    expect(() => parse({ issuer: 'ClusterIssuer/x', trustAnchors: 'Secret/r', intermediateDuration: '120d' }, { policy: { caLookahead: days(61) } })).toThrow(
      'the least is 122d',
    );
  });

  it.each(['59s', '0', '7d1ms', '8d', 'soon'])('refuses the request deadline %j', (deadline) => {
    expect(refusal({ issuer: 'ClusterIssuer/x', trustAnchors: 'Secret/r', requestDeadline: deadline })).toBe(
      `invalid value ${JSON.stringify(deadline)} for --ca-request-deadline (env ESO_MTLS_CA_REQUEST_DEADLINE): accepts a duration such as 500ms, 15s, 10m or 1h30m, from 1m to 7d`,
    );
  });
});

describe('the --ca-* flags in parseControllerConfig', () => {
  const config = (argv: string[], env: Record<string, string> = {}) => {
    const r: ConfigResult = parseControllerConfig(argv, env);
    if (r.kind !== 'config') throw new Error(r.kind === 'error' ? r.error.message : r.kind);
    return r.config;
  };
  const error = (argv: string[], env: Record<string, string> = {}) => {
    const r = parseControllerConfig(argv, env);
    return r.kind === 'error' ? r.error.message : `not an error: ${r.kind}`;
  };

  it('gives the self-signed source by default; the defaults of the issuer flags are not "given"', () => {
    expect(config([]).caSource).toBe(SELF_SIGNED);
  });

  it('reads the flags, or their variables; a flag wins over its variable', () => {
    expect(config(['--ca-issuer=ClusterIssuer/org-ca', '--ca-trust-anchors', 'ConfigMap/roots']).caSource).toEqual({
      kind: 'issuer',
      issuer: { kind: 'ClusterIssuer', name: 'org-ca', group: 'cert-manager.io' },
      trustAnchors: { kind: 'ConfigMap', name: 'roots', key: 'ca.crt' },
      requestDeadline: hours(1),
    });
    const env = { ESO_MTLS_CA_FROM_SECRET: 'org-intermediate', ESO_MTLS_CA_TRUST_ANCHORS: 'Secret/org-roots' };
    expect(config([], env).caSource).toEqual({ kind: 'secret', secretName: 'org-intermediate', trustAnchors: ANCHORS });
    expect(config(['--ca-from-secret=other'], env).caSource).toMatchObject({ secretName: 'other' });
    // An empty variable is unset, as for every flag.
    expect(config([], { ESO_MTLS_CA_ISSUER: '', ESO_MTLS_CA_TRUST_ANCHORS: '' }).caSource).toBe(SELF_SIGNED);
  });

  it('refuses with a ConfigError naming the flags, and checks the names against --ca-secret-name and --hsm-module', () => {
    expect(error(['--ca-issuer=ClusterIssuer/a', '--ca-from-secret=b', '--ca-trust-anchors=Secret/r'])).toContain('are both set');
    expect(error(['--ca-trust-anchors=Secret/r'])).toContain('is set but neither --ca-issuer nor --ca-from-secret is');
    expect(error(['--ca-from-secret=my-ca', '--ca-secret-name=my-ca', '--ca-trust-anchors=Secret/r'])).toContain(
      'names the Secret "my-ca", which the controller writes (--ca-secret-name)',
    );
    expect(
      error(['--ca-from-secret=org-intermediate', '--ca-trust-anchors=Secret/r', '--hsm-module=/opt/hsm/lib.so', '--hsm-token-label=eso'], {
        ESO_MTLS_HSM_PIN: '1234',
      }),
    ).toContain('cannot be used with --hsm-module');
    expect(error(['--ca-request-deadline=1h'])).toContain('--ca-request-deadline (env ESO_MTLS_CA_REQUEST_DEADLINE) is set but --ca-issuer is not');
  });

  it('lists the flags in --help with their defaults and what they accept', () => {
    const r = parseControllerConfig(['--help'], {});
    const text = r.kind === 'help' ? r.text : '';
    for (const flag of ['ca-issuer', 'ca-issuer-group', 'ca-intermediate-duration', 'ca-request-deadline', 'ca-from-secret', 'ca-trust-anchors']) {
      expect(text).toContain(`--${flag} <value>`);
    }
    expect(text).toContain('(default cert-manager.io)');
    expect(text).toContain('(default 1h)');
    expect(text).toContain('(default: the CA validity, 365d)');
    expect(text.replace(/\s+/g, ' ')).toContain('Secret/NAME[/KEY] or ConfigMap/NAME[/KEY], in --namespace (KEY default ca.crt)');
  });
});
