import { afterAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { V1Deployment } from '@kubernetes/client-node';
import { CONTROLLER_FLAGS, type ConfigResult, parseControllerConfig } from '../../packages/controller/src/index.js';
import { find } from '@eso-mtls/test-kit/manifests';
import { Helm, HelmError, type Values, chartDir } from '@eso-mtls/test-kit/helm';
import { expectRefusals } from './support/refusals.js';
import { containerInput } from './support/release.js';

// Issue 23 item 13: every chart value that becomes a controller flag is refused by the chart
// exactly when the controller would refuse it at start-up (exit 2, a crash-looping pod). The
// controller decides: each probe value is put into the args the chart renders and read by the
// controller's own parser (parseControllerConfig), and helm must agree with its verdict.
// Scale: about 140 `helm template` runs, no apiserver.

const NAMESPACE = 'external-secrets-system';
const HSM = { enabled: true, modulePath: '/opt/hsm/libsofthsm2.so', tokenLabel: 'eso', pinSecret: { name: 'pin' } };

/** A value and the flag it becomes; `base` turns on what renders the flag, `flagValue` words the value as the flag. */
interface Mapping {
  readonly path: string;
  readonly flag: string;
  readonly base?: Values;
  readonly flagValue?: (value: string) => string;
  readonly probes: readonly (string | number)[];
}

/** Sets a dotted path in a copy of `values`. */
function withValue(values: Values, path: string, value: unknown): Values {
  const [head, ...rest] = path.split('.') as [string, ...string[]];
  if (rest.length === 0) return { ...values, [head]: value };
  return { ...values, [head]: withValue((values[head] as Values | undefined) ?? {}, rest.join('.'), value) };
}

/** An issuer source with every value rendered, and a Secret source: what renders the --ca-* flags. */
const CA_ISSUER = {
  ca: { source: 'issuer', issuer: { kind: 'ClusterIssuer', name: 'org-ca', duration: '180d' }, trustAnchors: { kind: 'Secret', name: 'org-roots' } },
};
const CA_SECRET = { ca: { source: 'secret', secret: { name: 'org-intermediate' }, trustAnchors: { kind: 'Secret', name: 'org-roots' } } };

const label63 = 'a'.repeat(63);
const label64 = 'a'.repeat(64);
const reconcileMax = largestAccepted('reconcile-interval');

/**
 * The largest --reconcile-interval, in ms, the controller's parser accepts: found by bisection over
 * the controller itself, so the chart's bound follows the policy's rules instead of a copy of them.
 */
function largestAccepted(flag: string): number {
  const ok = (ms: number) => parseControllerConfig([`--${flag}=${ms}ms`], {}).kind === 'config';
  let [low, high] = [1000, 10 * 365 * 86_400_000];
  if (!ok(low) || ok(high)) throw new Error(`--${flag}: no bound between ${low}ms and ${high}ms`);
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2);
    if (ok(mid)) low = mid;
    else high = mid;
  }
  return low;
}

const DURATION_PROBES = ['0', '0s', '0.5ms', '1.5ms', '999ms', '1s', '1.5s', '1.0005s', '0.001s', '10m', '1h30m', '1d12h', '99999999999999999999h'];

const MAPPINGS: readonly Mapping[] = [
  { path: 'reconcileInterval', flag: 'reconcile-interval', probes: [...DURATION_PROBES, `${reconcileMax}ms`, `${reconcileMax + 1}ms`, '22d', '527h25m'] },
  { path: 'propagationDelay', flag: 'propagation-delay', probes: [...DURATION_PROBES, '9999ms', '10s', '5m', '1h', '3600001ms', '2h'] },
  // The two share the CA's lookahead: the longer the delay, the shorter the longest interval.
  { path: 'propagationDelay', flag: 'propagation-delay', base: { reconcileInterval: '527h' }, probes: ['10s', '30m', '1800001ms', '1h'] },
  { path: 'reconcileInterval', flag: 'reconcile-interval', base: { propagationDelay: '1h' }, probes: ['10m', '526h30m', '526h30m1ms'] },
  {
    path: 'leaderElection.leaseDuration',
    flag: 'leader-election-lease-duration',
    probes: [...DURATION_PROBES, '10s', '10001ms', '9007199254740991ms', '9007199254740992ms'],
  },
  { path: 'leaderElection.renewDeadline', flag: 'leader-election-renew-deadline', probes: [...DURATION_PROBES, '2400ms', '2401ms', '15s', '14999ms', '20s'] },
  { path: 'leaderElection.retryPeriod', flag: 'leader-election-retry-period', probes: [...DURATION_PROBES, '8333ms', '8334ms', '8s'] },
  {
    path: 'clusterDomain',
    flag: 'cluster-domain',
    probes: ['cluster.local', label63, label64, `${label63}.local`, `${label64}.local`, 'Cluster.local', 'a..b'],
  },
  { path: 'eso.serviceAccount', flag: 'service-account', probes: ['eso', `${label63}.x`, `${label64}.x`, 'a_b'] },
  { path: 'caSecretName', flag: 'ca-secret-name', probes: ['ca', `x.${label63}`, `x.${label64}`] },
  { path: 'clientSecretName', flag: 'client-secret-name', probes: ['client', `x.${label63}`, `x.${label64}`] },
  { path: 'leaderElection.id', flag: 'leader-election-id', probes: ['lease', `${label63}.x`, `${label64}.x`] },
  {
    path: 'podCertificate.serverSignerName',
    flag: 'server-signer-name',
    base: { modes: ['pod-certificate'] },
    probes: ['example.com/server', `${label63}.com/server`, `${label64}.com/server`, 'example/server', 'example.com/'],
  },
  {
    path: 'podCertificate.clientSignerName',
    flag: 'client-signer-name',
    base: { modes: ['pod-certificate'] },
    probes: ['example.com/client', `${label63}.com/client`, `${label64}.com/client`],
  },
  {
    path: 'podCertificate.maxValidity',
    flag: 'pod-certificate-max-validity',
    base: { modes: ['pod-certificate'] },
    probes: ['1h', '2184h', '2185h', '59m', '0h'],
  },
  {
    path: 'podCertificate.maxPending',
    flag: 'pod-certificate-max-pending',
    base: { modes: ['pod-certificate'] },
    probes: [1, 10_000, 1_000_000, 1_000_001, 0, -1],
  },
  {
    path: 'podCertificate.maxPendingPerNamespace',
    flag: 'pod-certificate-max-pending-per-namespace',
    base: { modes: ['pod-certificate'] },
    probes: [1, 1_000, 1_000_000, 1_000_001, 0, -1],
  },
  // Not 0h, which the controller reads as "off": the chart says off with enabled: false (and then grants no delete).
  { path: 'pruneOrphanedSecrets.after', flag: 'prune-orphaned-secrets-after', base: { pruneOrphanedSecrets: { enabled: true } }, probes: ['1h', '24h', '59m'] },
  {
    path: 'providerLabelPolicy.namespaceLabel',
    flag: 'require-namespace-label',
    base: { providerLabelPolicy: { controllerCheck: true } },
    flagValue: (key) => `${key}=true`,
    probes: [
      'eso-mtls.io/providers-allowed',
      `${label63}.io/x`,
      `${label64}.io/x`,
      `${[label63, label63, label63, 'a'.repeat(61)].join('.')}/x`,
      `${[label63, label63, label63, 'a'.repeat(62)].join('.')}/x`,
      'x'.repeat(63),
      'x'.repeat(64),
    ],
  },
  {
    path: 'hsm.tokenLabel',
    flag: 'hsm-token-label',
    base: { hsm: HSM },
    probes: ['eso', 'a'.repeat(32), 'a'.repeat(33), 'é'.repeat(32), '😀'.repeat(16), '😀'.repeat(17)],
  },
  // Not a relative path, which the controller would take and the chart's schema refuses: the module is a file in the image.
  { path: 'hsm.modulePath', flag: 'hsm-module', base: { hsm: HSM }, probes: ['/opt/hsm/libsofthsm2.so', ''] },
  { path: 'keyAlgorithm', flag: 'key-algorithm', probes: ['ECDSA-P256', 'RSA-3072', 'RSA-4096', 'ecdsa-p256'] },
  { path: 'logLevel', flag: 'log-level', probes: ['info', 'silent', 'loud', 'INFO'] },
  { path: 'floodControl.maxIssuancesPerReconcile', flag: 'max-issuances-per-reconcile', probes: [0, 1, 1_000_000, 1_000_001, -1] },
  { path: 'floodControl.maxNamespaces', flag: 'max-namespaces', probes: [0, 1_000_000, 1_000_001, -1] },
  {
    path: 'leaderElection.namespace',
    flag: 'leader-election-namespace',
    base: { leaderElection: { namespace: 'leases' } },
    probes: ['leases', label63, label64, 'a.b', 'Leases'],
  },
  {
    path: 'providerLabelPolicy.namespaceLabelValue',
    flag: 'require-namespace-label',
    base: { providerLabelPolicy: { controllerCheck: true } },
    flagValue: (value) => `eso-mtls.io/providers-allowed=${value}`,
    probes: ['true', 'a'.repeat(63), 'a'.repeat(64), '', '-x', 'a b'],
  },
  // Not port 0 (the OS picks one), which the controller takes and the schema refuses: a probe needs a known port.
  { path: 'metrics.port', flag: 'metrics-bind-address', flagValue: (port) => `:${port}`, probes: [8080, 65535, 65536] },
  { path: 'healthProbePort', flag: 'health-probe-bind-address', flagValue: (port) => `:${port}`, probes: [8081, 65535, 65536] },
  { path: 'hsm.keyLabelPrefix', flag: 'hsm-key-label-prefix', base: { hsm: HSM }, probes: ['', 'eso-', 'a'.repeat(64), 'a'.repeat(65), 'with space', 'é'] },
  {
    path: 'ca.issuer.name',
    flag: 'ca-issuer',
    base: CA_ISSUER,
    flagValue: (name) => `ClusterIssuer/${name}`,
    probes: ['org-ca', `x.${label63}`, `x.${label64}`, 'Org_CA', ''],
  },
  {
    path: 'ca.issuer.kind',
    flag: 'ca-issuer',
    base: CA_ISSUER,
    flagValue: (kind) => `${kind}/org-ca`,
    probes: ['ClusterIssuer', 'Issuer', 'clusterissuer', 'Certificate'],
  },
  {
    path: 'ca.issuer.group',
    flag: 'ca-issuer-group',
    base: CA_ISSUER,
    probes: ['cert-manager.io', 'vault.example.com', 'cert-manager', `${label63}.io`, `${label64}.io`, 'Cert-Manager.io'],
  },
  // Not '' (the chart then renders no flag: the CA validity), which the controller refuses as a value.
  {
    path: 'ca.issuer.duration',
    flag: 'ca-intermediate-duration',
    base: CA_ISSUER,
    probes: [...DURATION_PROBES, '120d', '2880h', '2879h59m59s999ms', '90d', '2562047h', '2562048h'],
  },
  { path: 'ca.issuer.requestDeadline', flag: 'ca-request-deadline', base: CA_ISSUER, probes: [...DURATION_PROBES, '1m', '59999ms', '7d', '168h1ms', '8d'] },
  {
    path: 'ca.secret.name',
    flag: 'ca-from-secret',
    base: CA_SECRET,
    probes: ['org-intermediate', `x.${label63}`, `x.${label64}`, 'eso-provider-ca-internal', 'eso-provider-client-tls', 'external-secrets-provider-tls'],
  },
  {
    path: 'ca.trustAnchors.name',
    flag: 'ca-trust-anchors',
    base: CA_ISSUER,
    flagValue: (name) => `Secret/${name}/ca.crt`,
    probes: ['org-roots', 'Org-Roots', `x.${label64}`, 'eso-provider-ca-internal', ''],
  },
  {
    path: 'ca.trustAnchors.key',
    flag: 'ca-trust-anchors',
    base: CA_ISSUER,
    flagValue: (key) => `Secret/org-roots/${key}`,
    probes: ['ca.crt', 'root_1.pem', '..', '.', 'a b', 'a'.repeat(253), 'a'.repeat(254), ''],
  },
  {
    path: 'ca.trustAnchors.kind',
    flag: 'ca-trust-anchors',
    base: CA_ISSUER,
    flagValue: (kind) => `${kind}/org-roots/ca.crt`,
    probes: ['Secret', 'ConfigMap', 'secret', 'ClusterTrustBundle'],
  },
];

/** The controller container's args (after the subcommand) and env as the chart renders them for `values`. */
function rendered(helm: Helm, values: Values): { args: string[]; env: Record<string, string> } {
  return containerInput(find<V1Deployment>(helm.template(chartDir, 'eso-mtls', NAMESPACE, values), 'Deployment', 'eso-mtls-controller'), 'pod-name');
}

/** `args` with `--flag` given `value` in place of the chart's (the place and form the chart renders it in). */
function withFlag(args: readonly string[], flag: string, value: string): string[] {
  const prefix = `--${flag}=`;
  if (!args.some((a) => a.startsWith(prefix))) throw new Error(`the chart renders no ${prefix} in ${args.join(' ')}`);
  return args.map((a) => (a.startsWith(prefix) ? `${prefix}${value}` : a));
}

function helmVerdict(helm: Helm, values: Values): { accepted: boolean; message: string } {
  try {
    helm.template(chartDir, 'eso-mtls', NAMESPACE, values);
    return { accepted: true, message: '' };
  } catch (e) {
    if (!(e instanceof HelmError)) throw e;
    return { accepted: false, message: e.stderr };
  }
}

const verdict = (r: ConfigResult): string =>
  r.kind === 'config' ? 'accepted' : r.kind === 'error' ? `refused: ${r.error.message}` : 'refused: prints help and exits';

describe('chart values that become controller flags: refused by the chart exactly when the controller refuses them', () => {
  const helm = new Helm();
  afterAll(() => helm.remove());

  it.each(MAPPINGS.map((m) => [m.base ? `${m.path} with ${JSON.stringify(m.base)}` : m.path, m] as const))('%s', (_title, m) => {
    const base = m.base ?? {};
    const { args, env } = rendered(helm, base);
    const rows = m.probes.map((probe) => {
      const controller = parseControllerConfig(withFlag(args, m.flag, (m.flagValue ?? String)(String(probe))), env);
      const chart = helmVerdict(helm, withValue(base, m.path, probe));
      return { probe, controller: verdict(controller), chart };
    });
    // Neither side alone decides: each mapping has values both accept and values both refuse.
    expect(rows.some((r) => r.controller === 'accepted')).toBe(true);
    expect(rows.some((r) => r.controller !== 'accepted')).toBe(true);
    for (const r of rows) {
      expect({ probe: r.probe, controller: r.controller, chartAccepts: r.chart.accepted }).toEqual({
        probe: r.probe,
        controller: r.controller,
        chartAccepts: r.controller === 'accepted',
      });
      // A refusal names the value (schema: at '/<path>'; templates: <path>).
      if (!r.chart.accepted)
        expect({ probe: r.probe, message: r.chart.message }).toEqual({ probe: r.probe, message: expect.stringMatching(namesValue(m.path)) });
    }
  });

  it('refuses what the issue found, with a message that names the value and what to do', () => {
    expectRefusals(
      (values) => helm.template(chartDir, 'r', NAMESPACE, values),
      [
        [{ reconcileInterval: '0s' }, 'reconcileInterval is "0s": the controller needs at least 1s (--reconcile-interval) and exits at start-up otherwise'],
        [
          { propagationDelay: '5s' },
          'propagationDelay is "5s": the controller accepts from 10s to 1h (--propagation-delay) and exits at start-up otherwise. Keep the default 5m in production',
        ],
        [
          { leaderElection: { renewDeadline: '20s' } },
          'leaderElection.leaseDuration (15s) must be greater than leaderElection.renewDeadline (20s): a leader must give up before another may take over',
        ],
        [{ resources: { limits: { memory: 'lots' } } }, "at '/resources/limits/memory'"],
        [{ resources: { requests: { cpu: '-1' } } }, "at '/resources/requests/cpu'"],
        [{ resources: { limit: { memory: '1Gi' } } }, "additional properties 'limit' not allowed"],
        [{ metrics: { port: 8081 } }, 'metrics.port and healthProbePort are both 8081: the controller cannot listen twice on one port'],
      ],
    );
    // Quantities the apiserver takes are taken.
    const resources = { requests: { cpu: '100m', memory: '96Mi', 'ephemeral-storage': '1e9' }, limits: { cpu: 0.5, memory: '1Gi' } };
    expect(
      find<V1Deployment>(helm.template(chartDir, 'r', NAMESPACE, { resources }), 'Deployment', 'eso-mtls-controller').spec!.template.spec!.containers[0]!
        .resources,
    ).toEqual(resources);
  });

  it('checks extraArgs as the controller reads them: known flags, a value where one is needed, none the chart already sets', () => {
    const { args, env } = rendered(helm, {});
    const cases: [string[], string][] = [
      [['--reconcile-intervall=5m'], 'extraArgs has "--reconcile-intervall=5m", but the controller has no flag --reconcile-intervall'],
      [['--help'], 'the controller has no flag --help'],
      [['--kubeconfig'], 'extraArgs has "--kubeconfig" without a value: give it as --kubeconfig=<value>'],
      [['--reconcile-interval=0s'], 'extraArgs has "--reconcile-interval=0s", but the chart already sets --reconcile-interval from a value'],
    ];
    for (const [extraArgs] of cases) {
      expect({ extraArgs, controller: verdict(parseControllerConfig([...args, ...extraArgs], env)) }).toEqual({
        extraArgs,
        controller: expect.stringMatching(/^refused/),
      });
    }
    expectRefusals(
      (values) => helm.template(chartDir, 'r', NAMESPACE, values),
      cases.map(([extraArgs, message]) => [{ extraArgs }, message] as const),
    );
    // A valid value of a flag the chart sets is refused too: one place for each setting, where it is checked.
    expectRefusals((values) => helm.template(chartDir, 'r', NAMESPACE, values), [[{ extraArgs: ['--log-level=debug'] }, 'set that value instead']]);
    // Flags the chart does not set pass, bare switches included.
    const free = rendered(helm, {
      extraArgs: ['--require-namespace-label=team=a', '--kubeconfig=/etc/kube/config'],
      leaderElection: { enabled: false },
      replicaCount: 1,
    });
    expect(verdict(parseControllerConfig([...free.args, '--leader-elect'], free.env))).toBe('accepted');
    expect(helmVerdict(helm, { extraArgs: ['--leader-elect'], leaderElection: { enabled: false }, replicaCount: 1 }).accepted).toBe(true);
  });

  it("knows the controller's flags: the chart's list is CONTROLLER_FLAGS", () => {
    const template = readFileSync(resolve(chartDir, 'templates/_controller-flags.tpl'), 'utf8');
    const block = (name: string): string[] => {
      const m = new RegExp(`define "eso-mtls\\.${name}" -}}\\n(.*)\\n`).exec(template);
      if (!m) throw new Error(`no eso-mtls.${name} in _controller-flags.tpl`);
      return m[1]!.split(' ');
    };
    expect(block('controllerFlagNames')).toEqual(CONTROLLER_FLAGS.map((f) => f.name));
    expect(block('controllerBoolFlags')).toEqual(CONTROLLER_FLAGS.filter((f) => f.kind === 'bool').map((f) => f.name));
  });
});

/** What a refusal of the value at `path` contains: the schema's location or the template's name for it. */
function namesValue(path: string): RegExp {
  const escaped = path.replaceAll('.', '\\.');
  return new RegExp(`at '/${path.replaceAll('.', '/')}'|${escaped}`);
}
