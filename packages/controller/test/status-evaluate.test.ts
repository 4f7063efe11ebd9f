import { describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CertificateCache,
  type Issued,
  bundlePem,
  issueCa,
  issueClientLeaf,
  issueServerLeaf,
  namespaceDnsNames,
  parseNamespaceRequirement,
  resolvePolicy,
} from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { COMPONENT_LABEL, INSTALLATION_ANNOTATION, MANAGED_BY, MANAGED_BY_LABEL, installationId, installationOf } from '@eso-mtls/kubernetes';
import type { V1Secret, V1Service } from '@kubernetes/client-node';
import type { ClusterState } from '../src/status/cluster-state.js';
import { evaluateStatus } from '../src/status/evaluate.js';
import { StatusExit, statusExitCode } from '../src/status/exit-codes.js';
import { STATUS_FLAGS, commandUsage, readCliOptions } from '../src/status/options.js';
import { paletteFor, renderText } from '../src/status/render-text.js';
import { runCli } from '@eso-mtls/test-kit/cli-run';

// The parts of status that need no apiserver: what it concludes when some Secrets cannot be read,
// how it reads flags and environment, and how it colours.
const crypto = createNodeCryptoBackend();
const policy = resolvePolicy();
const NOW = Date.now();
const ESO = policy.esoNamespace;
const assumed = {
  ...installationOf({ policy, caSecretName: 'eso-provider-ca-internal', clientSecretName: 'eso-provider-client-tls' }, 'status-test'),
  sources: new Map(),
};
const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** A Secret of this installation, as the controller writes it. */
function ourSecret(namespace: string, name: string, component: string, data: Record<string, string>): V1Secret {
  const meta = {
    labels: { [MANAGED_BY_LABEL]: MANAGED_BY, [COMPONENT_LABEL]: component },
    annotations: { [INSTALLATION_ANNOTATION]: installationId(ESO, assumed.caSecretName) },
  };
  return {
    type: component === 'ca' ? 'Opaque' : 'kubernetes.io/tls',
    metadata: { name, namespace, resourceVersion: '1', ...meta },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
  };
}
const leafData = (leaf: Issued, bundle: string) => ({ 'tls.crt': leaf.certificate.pem, 'tls.key': leaf.privateKeyPem, 'ca.crt': bundle });
const providerSecret = (namespace: string, leaf: Issued, bundle: string): V1Secret =>
  ourSecret(namespace, 'external-secrets-provider-tls', 'provider-tls', leafData(leaf, bundle));
const service = (namespace: string, name: string): V1Service => ({ metadata: { namespace, name, labels: { 'external-secrets.io/provider': 'true' } } });

describe('evaluateStatus with Secrets it may not read', () => {
  it('does not judge leaves against a CA it could not read: signature unknown, no problem, renewal by expiry', async () => {
    const ctx = { crypto, policy, now: NOW };
    const ca = await issueCa(ctx);
    const leaf = await issueServerLeaf(ctx, ca, namespaceDnsNames([{ namespace: 'team-a', name: 'vault' }], policy.clusterDomain));
    const state: ClusterState = {
      services: [service('team-a', 'vault'), service('team-b', 'aws')],
      providerSecrets: [providerSecret('team-a', leaf, bundlePem([ca.certificate]))],
      unreadableNamespaces: new Map([['team-b', 'Secret team-b/external-secrets-provider-tls not checked: HTTP 403 Forbidden']]),
      caSecret: { kind: 'unreadable', why: 'Secret external-secrets-system/eso-provider-ca-internal not checked: HTTP 403 Forbidden' },
      clientSecret: { kind: 'unreadable', why: 'no' },
    };
    const report = evaluateStatus(state, assumed, NOW, new CertificateCache(crypto.verifier));
    const [a, b] = report.namespaces;
    expect(a).toMatchObject({ namespace: 'team-a', checked: true, signedByActiveCa: null, chainsToBundle: true, bundleCurrent: null, problems: [] });
    expect(a!.nextRotation!.reason).toBe('expiring');
    expect(b).toMatchObject({ namespace: 'team-b', checked: false, services: ['aws'] });
    expect(report.summary).toEqual({ healthy: false, problems: 0, unchecked: 3, exitCode: StatusExit.incomplete });
    const text = renderText(report, paletteFor(false, {}));
    expect(text).toContain('signed by the active CA: unknown; chains to its ca.crt: yes');
    expect(text).not.toContain('PRIVATE KEY');
    expect(JSON.stringify(report)).not.toContain(leaf.privateKeyPem.split('\n')[1]!);
  });

  it('exit codes: a problem wins over what could not be checked', () => {
    expect(statusExitCode({ problems: 0, unchecked: 0 })).toBe(0);
    expect(statusExitCode({ problems: 2, unchecked: 1 })).toBe(1);
    expect(statusExitCode({ problems: 0, unchecked: 1 })).toBe(4);
  });
});

describe('evaluateStatus with a namespace requirement (--require-namespace-label)', () => {
  const requirement = parseNamespaceRequirement('eso-mtls.io/providers-allowed=true')!;
  const guarded = { ...assumed, namespaceRequirement: requirement };

  /** A healthy cluster as the controller leaves it: team-a served; team-b's Service labelled later, in a namespace without the label. */
  async function cluster(): Promise<Omit<ClusterState, 'allowedNamespaces'>> {
    const ctx = { crypto, policy, now: NOW };
    const ca = await issueCa(ctx);
    const bundle = bundlePem([ca.certificate]);
    const client = await issueClientLeaf(ctx, ca);
    const leaf = await issueServerLeaf(ctx, ca, namespaceDnsNames([{ namespace: 'team-a', name: 'vault' }], policy.clusterDomain));
    return {
      services: [service('team-a', 'vault'), service('team-b', 'aws')],
      providerSecrets: [providerSecret('team-a', leaf, bundle)],
      unreadableNamespaces: new Map(),
      caSecret: { kind: 'read', secret: ourSecret(ESO, assumed.caSecretName, 'ca', { 'ca.crt': ca.certificate.pem, 'ca.key': ca.privateKeyPem }) },
      clientSecret: { kind: 'read', secret: ourSecret(ESO, assumed.clientSecretName, 'client-tls', leafData(client, bundle)) },
    };
  }

  it('reports a provider namespace without the label as not_allowed, with the way to allow it, and nothing else about it (exit 1)', async () => {
    const state: ClusterState = { ...(await cluster()), allowedNamespaces: { kind: 'read', names: new Set(['team-a', 'unrelated']) } };
    const report = evaluateStatus(state, guarded, NOW, new CertificateCache(crypto.verifier));
    const [a, b] = report.namespaces;
    expect(a).toMatchObject({ namespace: 'team-a', checked: true, signedByActiveCa: true, bundleCurrent: true, problems: [] });
    expect(b).toEqual({
      namespace: 'team-b',
      secret: 'team-b/external-secrets-provider-tls',
      services: ['aws'],
      checked: true,
      dnsNames: [],
      problems: [{ kind: 'not_allowed', message: expect.stringContaining('kubectl label namespace team-b eso-mtls.io/providers-allowed=true') }],
    });
    expect(b!.problems[0]!.message).toContain('lacks the label eso-mtls.io/providers-allowed=true');
    expect(report.summary).toEqual({ healthy: false, problems: 1, unchecked: 0, exitCode: StatusExit.attention });
    expect(report.policy.requireNamespaceLabel).toBe('eso-mtls.io/providers-allowed=true');
    const text = renderText(report, paletteFor(false, {}));
    expect(text).toContain('provider namespaces served: only those labelled eso-mtls.io/providers-allowed=true');
    expect(text).toMatch(/Namespace team-b {2}1 PROBLEM\n {2}Services {9}aws\n {2}problem \(not_allowed\): namespace team-b is not allowed/);
    expect(text).not.toContain('namespace team-b: the Secret does not exist');

    // Once labelled, team-b is judged as any namespace: its Secret is still to be issued.
    const allowed = evaluateStatus(
      { ...state, allowedNamespaces: { kind: 'read', names: new Set(['team-a', 'team-b']) } },
      guarded,
      NOW,
      new CertificateCache(crypto.verifier),
    );
    expect(allowed.namespaces[1]!.problems.map((p) => p.kind)).toEqual(['missing']);
  });

  it('leaves a namespace that lost the label out whole: its Secret of ours is neither judged nor scheduled for renewal', async () => {
    const base = await cluster();
    const state: ClusterState = { ...base, services: [service('team-a', 'vault')], allowedNamespaces: { kind: 'read', names: new Set() } };
    const report = evaluateStatus(state, guarded, NOW, new CertificateCache(crypto.verifier));
    expect(report.namespaces.map((n) => [n.namespace, n.problems.map((p) => p.kind), n.nextRotation])).toEqual([['team-a', ['not_allowed'], undefined]]);
  });

  it('says each provider namespace is NOT CHECKED when the labelled namespaces cannot be listed (exit 4), naming the right', async () => {
    const why =
      'the namespaces labelled eso-mtls.io/providers-allowed=true (--require-namespace-label) not checked: HTTP 403 Forbidden; it needs list on namespaces (ClusterRole eso-mtls-status)';
    const state: ClusterState = { ...(await cluster()), allowedNamespaces: { kind: 'unreadable', why } };
    const report = evaluateStatus(state, guarded, NOW, new CertificateCache(crypto.verifier));
    expect(report.namespaces.map((n) => [n.namespace, n.checked, n.unchecked, n.problems])).toEqual([
      ['team-a', false, why, []],
      ['team-b', false, why, []],
    ]);
    expect(report.summary).toEqual({ healthy: false, problems: 0, unchecked: 2, exitCode: StatusExit.incomplete });
  });

  it('words each count in its number: 1 problem needs attention, 2 problems need attention, 1 day left', async () => {
    const plain = paletteFor(false, {});
    const allowed: ClusterState['allowedNamespaces'] = { kind: 'read', names: new Set(['team-a']) };
    const one = evaluateStatus({ ...(await cluster()), allowedNamespaces: allowed }, guarded, NOW, new CertificateCache(crypto.verifier));
    expect(renderText(one, plain)).toContain('Summary: 1 problem needs attention (exit code 1)');
    const base = await cluster();
    const two = evaluateStatus(
      { ...base, services: [...base.services, service('team-c', 'gcp')], allowedNamespaces: allowed, clientSecret: { kind: 'unreadable', why: 'HTTP 403' } },
      guarded,
      NOW,
      new CertificateCache(crypto.verifier),
    );
    expect(renderText(two, plain)).toContain('Summary: 2 problems need attention; 1 object not checked for lack of rights (exit code 1)');
    // A CA a day from its notAfter, and one a day past it.
    const ca = one.ca.certificates[0]!;
    const days = renderText(
      {
        ...one,
        ca: {
          ...one.ca,
          certificates: [
            { ...ca, daysLeft: 1 },
            { ...ca, slot: 'retired', daysLeft: -1 },
          ],
        },
      },
      plain,
    );
    expect(days).toContain('(1 day left)');
    expect(days).toContain('(expired 1 day ago)');
  });

  it('without the requirement, the same cluster has every namespace served', async () => {
    const report = evaluateStatus(await cluster(), assumed, NOW, new CertificateCache(crypto.verifier));
    expect(report.namespaces.map((n) => n.problems.map((p) => p.kind))).toEqual([[], ['missing']]);
    expect(report.policy.requireNamespaceLabel).toBeUndefined();
  });
});

describe('status flags and environment', () => {
  const read = (argv: string[], env: Record<string, string> = {}) => readCliOptions('eso-mtls status', STATUS_FLAGS, argv, { HOME: '/nonexistent', ...env });

  it('reads the controller policy variables, names their source, and ignores the controller-only ones', () => {
    const r = read(['-n', 'team-a', '-o=json', '--cluster-domain', 'corp.example'], {
      ESO_MTLS_NAMESPACE: 'eso',
      ESO_MTLS_METRICS_BIND_ADDRESS: 'not an address',
      ESO_MTLS_KUBECONFIG: '/controller/kubeconfig',
    });
    if (r.kind !== 'options') throw new Error(JSON.stringify(r));
    expect(r.options.values.get('namespace')).toBe('team-a');
    expect(r.options.values.get('output')).toBe('json');
    expect(r.options.assumed.policy).toMatchObject({ esoNamespace: 'eso', clusterDomain: 'corp.example' });
    expect(Object.fromEntries(r.options.assumed.sources)).toMatchObject({ 'eso-namespace': 'env', 'cluster-domain': 'flag', 'key-algorithm': 'default' });
    // The user's credentials, never the controller's.
    expect(r.options.kubeconfig).toBeUndefined();
  });

  it('with $KUBECONFIG set, reads no other file, as kubectl: a missing one is an error naming $KUBECONFIG, not --kubeconfig', async () => {
    const home = mkdtempSync(join(tmpdir(), 'status-home-'));
    try {
      // A usable ~/.kube/config that must not be read while KUBECONFIG is set.
      mkdirSync(join(home, '.kube'));
      const fallback = join(home, '.kube', 'config');
      writeFileSync(fallback, 'apiVersion: v1\nkind: Config\n');
      const options = (env: Record<string, string>) => readCliOptions('eso-mtls status', STATUS_FLAGS, [], { HOME: home, ...env });
      expect(options({})).toMatchObject({ kind: 'options', options: { kubeconfig: { path: fallback, setting: '~/.kube/config' } } });
      expect(options({ KUBECONFIG: `/a/missing:${fallback}` })).toMatchObject({
        kind: 'options',
        options: { kubeconfig: { path: fallback, setting: '$KUBECONFIG' } },
      });
      for (const command of ['status', 'renew'] as const) {
        const run = await runCli(command, ['--client'].slice(command === 'status' ? 1 : 0), { HOME: home, KUBECONFIG: '/nonexistent' });
        expect(run.code).toBe(StatusExit.usage);
        expect(run.stderr).toBe(
          `eso-mtls ${command}: $KUBECONFIG /nonexistent: no such file; as with kubectl, ~/.kube/config is not read while KUBECONFIG is set: correct it, unset it, or pass --kubeconfig\n`,
        );
      }
      // A file $KUBECONFIG names that cannot be used is named as $KUBECONFIG's too.
      const broken = join(home, 'broken');
      writeFileSync(broken, 'not: [a kubeconfig');
      const run = await runCli('status', [], { HOME: home, KUBECONFIG: broken });
      expect(run.code).toBe(StatusExit.usage);
      expect(run.stderr).toContain(`kubeconfig ${broken}: cannot read it`);
      expect(run.stderr).not.toContain('--kubeconfig');
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('reads --require-namespace-label as the controller does, from the flag or ESO_MTLS_REQUIRE_NAMESPACE_LABEL', () => {
    const fromEnv = read([], { ESO_MTLS_REQUIRE_NAMESPACE_LABEL: 'eso-mtls.io/providers-allowed=true' });
    if (fromEnv.kind !== 'options') throw new Error(JSON.stringify(fromEnv));
    expect(fromEnv.options.assumed.namespaceRequirement).toEqual({ key: 'eso-mtls.io/providers-allowed', value: 'true' });
    expect(fromEnv.options.assumed.sources.get('require-namespace-label')).toBe('env');
    const fromFlag = read(['--require-namespace-label=tier=providers']);
    expect(fromFlag).toMatchObject({ kind: 'options', options: { assumed: { namespaceRequirement: { key: 'tier', value: 'providers' } } } });
    const off = read([], { ESO_MTLS_REQUIRE_NAMESPACE_LABEL: '' });
    expect(off).toMatchObject({ kind: 'options' });
    expect(off.kind === 'options' && off.options.assumed.namespaceRequirement).toBeUndefined();
    expect(read(['--require-namespace-label', 'no-value'])).toMatchObject({
      kind: 'error',
      message: expect.stringContaining('--require-namespace-label (env ESO_MTLS_REQUIRE_NAMESPACE_LABEL)'),
    });
    expect(commandUsage('eso-mtls status', 'x', STATUS_FLAGS)).toContain('env ESO_MTLS_REQUIRE_NAMESPACE_LABEL, as for the controller');
  });

  it('reads --propagation-delay as the controller does into the policy it plans with, and says which it assumed', () => {
    const fromFlag = read(['--propagation-delay=30s'], { ESO_MTLS_PROPAGATION_DELAY: '2m' });
    if (fromFlag.kind !== 'options') throw new Error(JSON.stringify(fromFlag));
    expect(fromFlag.options.assumed.policy.propagationDelay).toBe(30_000);
    expect(fromFlag.options.assumed.sources.get('propagation-delay')).toBe('flag');
    const fromEnv = read([], { ESO_MTLS_PROPAGATION_DELAY: '2m' });
    expect(fromEnv).toMatchObject({ kind: 'options', options: { assumed: { policy: { propagationDelay: 120_000 } } } });
    expect(read(['--propagation-delay=5s'])).toEqual({
      kind: 'error',
      message:
        'invalid value "5s" for --propagation-delay (env ESO_MTLS_PROPAGATION_DELAY): accepts a duration such as 500ms, 15s, 10m or 1h30m, from 10s to 1h',
    });
    const unread = { kind: 'unreadable', why: 'HTTP 403 Forbidden' } as const;
    const state: ClusterState = { services: [], providerSecrets: [], unreadableNamespaces: new Map(), caSecret: unread, clientSecret: unread };
    const report = evaluateStatus(state, fromFlag.options.assumed, NOW, new CertificateCache(crypto.verifier));
    expect(report.policy.propagationDelay).toBe('30s');
    expect(renderText(report, paletteFor(false, {}))).toContain('reconcile interval 10m (default), propagation delay 30s (flag)');
    expect(commandUsage('eso-mtls status', 'x', STATUS_FLAGS)).toContain('env ESO_MTLS_PROPAGATION_DELAY, as for the controller');
  });

  it('words errors with the flag as status names it', () => {
    expect(read(['--reconcile-interval', 'soon'])).toEqual({
      kind: 'error',
      message:
        'invalid value "soon" for --reconcile-interval (env ESO_MTLS_RECONCILE_INTERVAL): accepts a duration such as 500ms, 15s, 10m or 1h30m, at least 1s',
    });
    expect(read([], { ESO_MTLS_NAMESPACE: 'Bad' })).toMatchObject({
      kind: 'error',
      message: expect.stringContaining('ESO_MTLS_NAMESPACE (flag --eso-namespace)'),
    });
    expect(read(['--namespace', 'a/b'])).toMatchObject({ kind: 'error', message: expect.stringContaining('--namespace "a/b" is not a namespace name') });
    expect(read(['--leader-elect'])).toMatchObject({ kind: 'error', message: expect.stringContaining('unknown flag --leader-elect') });
  });

  it('aligns its help columns', () => {
    const rows = commandUsage('eso-mtls status [flags]', 'x', STATUS_FLAGS)
      .split('\n')
      .map((l) => /^ {2}(?:-[a-z], | {4})--[a-z-]+(?: <value>)? +/.exec(l)?.[0].length)
      .filter((n) => n !== undefined);
    expect(rows.length).toBe(STATUS_FLAGS.length + 1);
    expect(new Set(rows).size).toBe(1);
  });

  it('colours on a terminal only, and never under NO_COLOR or TERM=dumb', () => {
    expect(paletteFor(true, {}).ok('x')).toBe('\u001b[32mx\u001b[0m');
    expect(paletteFor(false, {}).ok('x')).toBe('x');
    expect(paletteFor(true, { NO_COLOR: '1' }).ok('x')).toBe('x');
    expect(paletteFor(true, { TERM: 'dumb' }).ok('x')).toBe('x');
  });
});
