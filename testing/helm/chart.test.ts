import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  type V1ConfigMap,
  type V1Deployment,
  type V1ValidatingAdmissionPolicyBinding,
} from '@kubernetes/client-node';
import { parse } from 'yaml';
import { type ControlPlane, startControlPlane } from '../envtest/src/index.js';
import { ControllerProcess } from '@eso-mtls/test-kit/controller-process';
import { type Manifest, find, kustomizeBuild } from '@eso-mtls/test-kit/manifests';
import { repoRoot } from '@eso-mtls/test-kit/repo';
import { Helm, type Values, applyPrometheusCrds, chartDir } from '@eso-mtls/test-kit/helm';
import { expectRefusals } from './support/refusals.js';
import {
  type Installation,
  controllerConfigOf,
  convergedState,
  deployedController,
  providerNamespace,
  serviceAccountKubeconfigFile,
} from './support/release.js';

// The chart with real helm: linted, rendered and compared with `kustomize build deploy`, then
// installed on a real apiserver into a namespace other than the default, where the controller runs
// as the chart's ServiceAccount and the chart's admission policies guard that namespace.

/** The labels Helm's conventions add to every object deploy/base labels. */
const HELM_LABELS = ['app.kubernetes.io/instance', 'app.kubernetes.io/managed-by', 'app.kubernetes.io/version', 'helm.sh/chart'];

/**
 * Where the default rendering may differ from deploy/base, and why. Anything else that differs
 * fails the comparison.
 */
const EXPECTED_DIFFERENCES = {
  labels: `Helm's labels are added to the objects' metadata: ${HELM_LABELS.join(', ')}`,
  args: 'the chart passes every value as a flag; parsed, the two argument lists give the same configuration',
  imagePullPolicy: 'the chart sets image.pullPolicy (IfNotPresent, what Kubernetes defaults a tagged image to)',
} as const;

/** A manifest with the listed differences taken out, for a deep comparison. */
function comparable(m: Manifest): Manifest {
  const copy = structuredClone(m) as Manifest & { metadata: { labels?: Record<string, string> } };
  const labels = copy.metadata.labels;
  if (labels) for (const key of HELM_LABELS) delete labels[key];
  if (m.kind === 'Deployment') {
    for (const c of (copy as unknown as V1Deployment).spec!.template.spec!.containers) {
      delete c.args;
      delete c.imagePullPolicy;
    }
  }
  return copy;
}

const key = (m: Manifest): string => `${m.kind} ${m.metadata?.namespace ?? ''}/${m.metadata?.name}`;

/** Values far from the defaults: another namespace, another cluster domain, other names, every extra. */
const RELEASE_NS = 'platform-secrets';
const CLUSTER_DOMAIN = 'corp.example';
const OTHER_VALUES: Values = {
  fullnameOverride: 'platform-eso-mtls',
  clusterDomain: CLUSTER_DOMAIN,
  caSecretName: 'platform-ca',
  clientSecretName: 'platform-client',
  eso: { serviceAccount: 'eso-core' },
  leaderElection: { id: 'platform-leader' },
  replicaCount: 3,
  logLevel: 'debug',
  reconcileInterval: '5m',
  propagationDelay: '30s',
  floodControl: { maxIssuancesPerReconcile: 200, maxNamespaces: 50 },
  image: { repository: 'registry.example/eso-mtls/controller', digest: `sha256:${'0123456789abcdef'.repeat(4)}` },
  podDisruptionBudget: { enabled: true },
  topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway' }],
  priorityClassName: 'system-cluster-critical',
  metrics: { podMonitor: { enabled: true }, prometheusRule: { enabled: true, labels: { release: 'kube-prometheus-stack' } } },
  exampleProvider: { enabled: true },
};

describe('eso-mtls Helm chart, rendered by helm', () => {
  const helm = new Helm();
  afterAll(() => helm.remove());

  it('passes helm lint --strict with the default values and with the non-default set', () => {
    expect(helm.run(['lint', chartDir, '--strict'])).toContain('1 chart(s) linted, 0 chart(s) failed');
    expect(helm.run(['lint', chartDir, '--strict', '--namespace', RELEASE_NS, ...helm.valuesArgs(OTHER_VALUES)])).toContain(
      '1 chart(s) linted, 0 chart(s) failed',
    );
  });

  it('renders, with the default values, what kustomize build deploy renders, but for the named differences', () => {
    const chart = helm.template(chartDir, 'eso-mtls', 'external-secrets-system');
    const base = kustomizeBuild('deploy');
    // Neither owns the namespace: deleting either install would delete the CA Secret in it.
    expect([...base, ...chart].filter((m) => m.kind === 'Namespace')).toEqual([]);
    expect(chart.map(key).sort()).toEqual(base.map(key).sort());
    for (const b of base) {
      const c = chart.find((m) => key(m) === key(b))!;
      // EXPECTED_DIFFERENCES.labels: Helm's and no others.
      const extra = Object.keys(c.metadata!.labels ?? {}).filter((k) => !(k in (b.metadata!.labels ?? {})));
      expect({ object: key(b), extra: extra.sort() }).toEqual({ object: key(b), extra: [...HELM_LABELS].sort() });
      expect(comparable(c)).toEqual(comparable(b));
    }
    // EXPECTED_DIFFERENCES.args
    const fromChart = controllerConfigOf(find<V1Deployment>(chart, 'Deployment', 'eso-mtls-controller'));
    const fromBase = controllerConfigOf(find<V1Deployment>(base, 'Deployment', 'eso-mtls-controller'));
    expect(fromChart.kind).toBe('config');
    expect(fromChart).toEqual(fromBase);
    // EXPECTED_DIFFERENCES.imagePullPolicy; the image is the same.
    const containerOf = (ms: Manifest[]) => find<V1Deployment>(ms, 'Deployment', 'eso-mtls-controller').spec!.template.spec!.containers[0]!;
    expect(containerOf(chart).image).toBe(containerOf(base).image);
    expect(containerOf(chart).imagePullPolicy).toBe('IfNotPresent');
    expect(Object.keys(EXPECTED_DIFFERENCES)).toHaveLength(3);
  });

  it('follows another namespace in kustomize (an overlay namespace) as in Helm (the release namespace): the same parameters and controller configuration', () => {
    const overlay = mkdtempSync(join(tmpdir(), 'eso-mtls-ns-overlay-'));
    try {
      writeFileSync(join(overlay, 'kustomization.yaml'), `namespace: ${RELEASE_NS}\nresources:\n- ${relative(overlay, resolve(repoRoot, 'deploy/base'))}\n`);
      const moved = kustomizeBuild(overlay);
      const chart = helm.template(chartDir, 'eso-mtls', RELEASE_NS);
      const params = (ms: Manifest[]) => find<V1ConfigMap>(ms, 'ConfigMap', 'eso-mtls-controller-admission').data;
      expect(params(moved)).toEqual(params(chart));
      expect(params(chart)).toMatchObject({ serviceAccountNamespace: RELEASE_NS, esoNamespace: RELEASE_NS, leaseNamespace: RELEASE_NS });
      const config = (ms: Manifest[]) => controllerConfigOf(find<V1Deployment>(ms, 'Deployment', 'eso-mtls-controller'));
      expect(config(moved)).toEqual(config(chart));
      const parsed = config(chart);
      if (parsed.kind !== 'config') throw new Error('args do not parse');
      expect([parsed.config.policy.esoNamespace, parsed.config.leaderElection.namespace]).toEqual([RELEASE_NS, RELEASE_NS]);
    } finally {
      rmSync(overlay, { recursive: true, force: true });
    }
  });

  it('renders the non-default set into the release namespace: namespace, cluster domain, names and policy parameters follow', () => {
    const chart = helm.template(chartDir, 'platform', RELEASE_NS, OTHER_VALUES);
    // Nothing of the defaults is left anywhere (the alerts' texts name the default CA Secret: they are
    // one rule file for every installation, deploy/prometheus/alerts.yaml).
    const text = JSON.stringify(chart.filter((m) => m.kind !== 'PrometheusRule'));
    for (const literal of ['external-secrets-system', 'cluster.local', 'eso-provider-ca-internal', 'eso-provider-client-tls', '"eso-mtls-controller']) {
      expect({ literal, found: text.includes(literal) }).toEqual({ literal, found: false });
    }
    const namespaced = chart.filter((m) => m.metadata?.namespace !== undefined && m.metadata.namespace !== 'provider-file');
    expect(namespaced.length).toBeGreaterThanOrEqual(10);
    for (const m of namespaced) expect({ object: key(m), namespace: m.metadata!.namespace }).toEqual({ object: key(m), namespace: RELEASE_NS });

    const deployment = find<V1Deployment>(chart, 'Deployment', 'platform-eso-mtls');
    const parsed = controllerConfigOf(deployment);
    if (parsed.kind !== 'config') throw new Error(`the chart's args do not parse: ${JSON.stringify(parsed)}`);
    const c = parsed.config;
    expect([c.policy.esoNamespace, c.policy.clusterDomain, c.policy.serviceAccount, c.caSecretName, c.clientSecretName]).toEqual([
      RELEASE_NS,
      CLUSTER_DOMAIN,
      'eso-core',
      'platform-ca',
      'platform-client',
    ]);
    expect([c.leaderElection.enabled, c.leaderElection.namespace, c.leaderElection.leaseName, c.logLevel]).toEqual([
      true,
      RELEASE_NS,
      'platform-leader',
      'debug',
    ]);
    expect([c.policy.reconcileInterval, c.policy.propagationDelay]).toEqual([5 * 60_000, 30_000]);
    expect([c.maxIssuancesPerReconcile, c.maxNamespaces]).toEqual([200, 50]);
    expect(deployment.spec!.replicas).toBe(3);
    expect(deployment.spec!.template.spec!.containers[0]!.image).toBe(`registry.example/eso-mtls/controller@sha256:${'0123456789abcdef'.repeat(4)}`);
    expect(deployment.spec!.template.spec!.priorityClassName).toBe('system-cluster-critical');
    expect(deployment.spec!.template.spec!.topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: 'topology.kubernetes.io/zone',
        whenUnsatisfiable: 'ScheduleAnyway',
        labelSelector: { matchLabels: deployment.spec!.selector.matchLabels },
      },
    ]);

    const params = find<V1ConfigMap>(chart, 'ConfigMap', 'platform-eso-mtls-admission');
    expect(params.data).toEqual({
      serviceAccountNamespace: RELEASE_NS,
      serviceAccountName: deployment.spec!.template.spec!.serviceAccountName,
      esoNamespace: RELEASE_NS,
      caSecretName: 'platform-ca',
      clientSecretName: 'platform-client',
      providerSecretName: 'external-secrets-provider-tls',
      leaseNamespace: RELEASE_NS,
      leaseName: 'platform-leader',
    });
    for (const policy of ['platform-eso-mtls-secret-writes', 'platform-eso-mtls-lease-creates']) {
      const binding = find<V1ValidatingAdmissionPolicyBinding>(chart, 'ValidatingAdmissionPolicyBinding', policy);
      expect(binding.spec!.policyName).toBe(policy);
      expect(binding.spec!.paramRef).toEqual({ name: 'platform-eso-mtls-admission', namespace: RELEASE_NS, parameterNotFoundAction: 'Allow' });
    }
  });

  it('keeps the admission policies word for word those of deploy/base: only names and labels differ', () => {
    const chart = helm.template(chartDir, 'platform', RELEASE_NS, OTHER_VALUES);
    const base = kustomizeBuild('deploy');
    for (const suffix of ['secret-writes', 'lease-creates']) {
      const ours = find(chart, 'ValidatingAdmissionPolicy', `platform-eso-mtls-${suffix}`);
      expect(ours.spec).toEqual(find(base, 'ValidatingAdmissionPolicy', `eso-mtls-controller-${suffix}`).spec);
    }
  });

  it('never renders a Secret, whatever the values: the controller owns the CA, client and provider Secrets', () => {
    for (const values of [{}, OTHER_VALUES, { serviceAccount: { create: false, name: 'existing' }, leaderElection: { enabled: false }, replicaCount: 1 }]) {
      const kinds = helm.template(chartDir, 'r', RELEASE_NS, values).map((m) => m.kind);
      expect(kinds).not.toContain('Secret');
      expect(kinds).toContain('Deployment');
    }
  });

  it('renders the PrometheusRule from deploy/prometheus/alerts.yaml, and monitors with honorLabels: true', () => {
    const alerts = parse(readFileSync(resolve(repoRoot, 'deploy/prometheus/alerts.yaml'), 'utf8')) as { groups: unknown };
    const generated = parse(readFileSync(resolve(repoRoot, 'deploy/prometheus/prometheusrule.yaml'), 'utf8')) as { spec: unknown };
    const chart = helm.template(chartDir, 'platform', RELEASE_NS, OTHER_VALUES);
    const rule = find(chart, 'PrometheusRule', 'platform-eso-mtls');
    expect(rule.spec).toEqual({ groups: alerts.groups });
    expect(rule.spec).toEqual(generated.spec);
    expect(rule.metadata!.labels!.release).toBe('kube-prometheus-stack');
    const podMonitor = find(chart, 'PodMonitor', 'platform-eso-mtls') as Manifest & { spec: { podMetricsEndpoints: { honorLabels: boolean; port: string }[] } };
    expect(podMonitor.spec.podMetricsEndpoints).toEqual([expect.objectContaining({ port: 'metrics', honorLabels: true })]);
    const withServiceMonitor = helm.template(chartDir, 'platform', RELEASE_NS, { metrics: { serviceMonitor: { enabled: true } } });
    const serviceMonitor = find(withServiceMonitor, 'ServiceMonitor', 'eso-mtls-controller') as Manifest & {
      spec: { endpoints: { honorLabels: boolean }[]; selector: { matchLabels: Record<string, string> } };
    };
    expect(serviceMonitor.spec.endpoints).toEqual([expect.objectContaining({ port: 'metrics', honorLabels: true })]);
    const service = find(withServiceMonitor, 'Service', 'eso-mtls-controller-metrics');
    for (const [k, v] of Object.entries(serviceMonitor.spec.selector.matchLabels)) expect(service.metadata!.labels![k]).toBe(v);
  });

  it('renders the Grafana dashboard of deploy/grafana/eso-mtls.json as a ConfigMap with the sidecar label, only when enabled', () => {
    const dashboard = readFileSync(resolve(repoRoot, 'deploy/grafana/eso-mtls.json'), 'utf8');
    const configMaps = (ms: Manifest[]) => ms.filter((m) => m.kind === 'ConfigMap' && m.metadata!.labels?.['app.kubernetes.io/component'] === 'dashboard');
    expect(configMaps(helm.template(chartDir, 'platform', RELEASE_NS, OTHER_VALUES))).toEqual([]);

    const defaults = find<V1ConfigMap>(
      helm.template(chartDir, 'eso-mtls', RELEASE_NS, { grafanaDashboard: { enabled: true } }),
      'ConfigMap',
      'eso-mtls-controller-dashboard',
    );
    expect(defaults.metadata!.namespace).toBe(RELEASE_NS);
    expect(defaults.metadata!.labels!.grafana_dashboard).toBe('1');
    // Byte for byte the file: the chart reads it through the files/eso-mtls.json link.
    expect(defaults.data).toEqual({ 'eso-mtls.json': dashboard });
    expect((JSON.parse(defaults.data!['eso-mtls.json']!) as { uid: string }).uid).toBe('eso-mtls');

    const other = find<V1ConfigMap>(
      helm.template(chartDir, 'platform', RELEASE_NS, {
        ...OTHER_VALUES,
        grafanaDashboard: {
          enabled: true,
          label: 'grafana.example/dashboard',
          labelValue: 'eso',
          namespace: 'monitoring',
          annotations: { grafana_folder: 'Security' },
        },
      }),
      'ConfigMap',
      'platform-eso-mtls-dashboard',
    );
    expect(other.metadata!.namespace).toBe('monitoring');
    expect(other.metadata!.labels!['grafana.example/dashboard']).toBe('eso');
    expect(other.metadata!.labels!.grafana_dashboard).toBeUndefined();
    expect(other.metadata!.annotations).toEqual({ grafana_folder: 'Security' });
    expect(other.data).toEqual({ 'eso-mtls.json': dashboard });
  });

  it('rejects bad values, naming the value and what is wrong', () => {
    const refusals: [Values, string][] = [
      [{ keyAlgorithm: 'DSA' }, "at '/keyAlgorithm': value must be one of 'ECDSA-P256', 'RSA-2048', 'RSA-3072'"],
      [{ clusterDomain: 'Bad_Domain' }, "at '/clusterDomain': 'Bad_Domain' does not match pattern"],
      [{ image: { digest: 'sha256:xyz' } }, "at '/image/digest': 'sha256:xyz' does not match pattern"],
      [{ replicaCount: 0 }, "at '/replicaCount': minimum: got 0, want 1"],
      [{ logLevel: 'loud' }, "at '/logLevel': value must be one of 'trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'"],
      [{ reconcileInterval: 'soon' }, "at '/reconcileInterval': 'soon' does not match pattern"],
      [{ replicas: 2 }, "additional properties 'replicas' not allowed"],
      [{ namespaceOverride: 'Platform' }, "at '/namespaceOverride': 'Platform' does not match pattern"],
      [{ grafanaDashboard: { label: 'Grafana Dashboard' } }, "at '/grafanaDashboard/label': 'Grafana Dashboard' does not match pattern"],
      [{ extraArgs: ['verbose'] }, "at '/extraArgs/0': 'verbose' does not match pattern"],
      [{ leaderElection: { enabled: false } }, 'replicaCount is 2 but leaderElection.enabled is false: every replica would write certificates'],
      [
        { metrics: { serviceMonitor: { enabled: true }, podMonitor: { enabled: true } } },
        'metrics.serviceMonitor.enabled and metrics.podMonitor.enabled are both true',
      ],
      [{ metrics: { service: { enabled: false }, serviceMonitor: { enabled: true } } }, 'metrics.serviceMonitor.enabled needs metrics.service.enabled'],
      [{ caSecretName: 'external-secrets-provider-tls' }, 'caSecretName is "external-secrets-provider-tls", the provider Secret name: choose another'],
      [{ clientSecretName: 'eso-provider-ca-internal' }, 'caSecretName and clientSecretName are both "eso-provider-ca-internal"'],
      [{ podDisruptionBudget: { enabled: true }, replicaCount: 1 }, 'podDisruptionBudget.enabled with replicaCount 1 would block every node drain'],
    ];
    expectRefusals((values) => helm.template(chartDir, 'r', RELEASE_NS, values), refusals);
  });
});

/** The HTTP status and message of an API call's answer. */
async function answer(call: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await call;
    return { code: 200, message: '' };
  } catch (e) {
    if (!(e instanceof ApiException)) throw e;
    const body = String(e.body);
    try {
      return { code: e.code, message: (JSON.parse(body) as { message: string }).message };
    } catch {
      return { code: e.code, message: body };
    }
  }
}

describe('eso-mtls Helm chart, installed on a real apiserver in another namespace', () => {
  let plane: ControlPlane;
  let admin: KubeConfig;
  let helm: Helm;
  const SA = 'platform-eso-mtls';
  const SA_USER = `system:serviceaccount:${RELEASE_NS}:${SA}`;

  beforeAll(async () => {
    plane = await startControlPlane({ audit: true });
    admin = plane.adminKubeConfig;
    helm = new Helm(plane.adminKubeconfigPath);
    await applyPrometheusCrds(admin);
    helm.install(chartDir, 'platform', RELEASE_NS, OTHER_VALUES);
  }, 180_000);
  afterAll(async () => {
    helm?.remove();
    await plane?.stop();
  });

  it('creates every object the release renders, as rendered (plus the defaults the apiserver adds)', async () => {
    const objects = KubernetesObjectApi.makeApiClient(admin);
    const manifest = helm.manifest('platform', RELEASE_NS);
    expect(manifest.map((m) => m.kind).sort()).toEqual(
      [
        'ClusterRole',
        'ClusterRoleBinding',
        'ConfigMap',
        'Deployment',
        'Deployment',
        'Namespace',
        'PodDisruptionBudget',
        'PodMonitor',
        'PrometheusRule',
        'Role',
        'Role',
        'RoleBinding',
        'RoleBinding',
        'Service',
        'Service',
        'ServiceAccount',
        'ValidatingAdmissionPolicy',
        'ValidatingAdmissionPolicy',
        'ValidatingAdmissionPolicyBinding',
        'ValidatingAdmissionPolicyBinding',
      ].sort(),
    );
    for (const m of manifest) {
      const stored = (await objects.read({
        apiVersion: m.apiVersion,
        kind: m.kind,
        metadata: { name: m.metadata!.name!, namespace: m.metadata!.namespace },
      })) as Manifest;
      // As rendered, plus what the apiserver adds (defaults, status, its own labels).
      expect({ object: key(m), stored }).toMatchObject({ object: key(m), stored: m });
    }
  });

  it('renders, with the default values, objects the apiserver accepts (server-side dry run)', async () => {
    const objects = KubernetesObjectApi.makeApiClient(admin);
    await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: 'external-secrets-system' } } });
    const defaults = helm.template(chartDir, 'eso-mtls', 'external-secrets-system', {
      metrics: { serviceMonitor: { enabled: true }, prometheusRule: { enabled: true } },
    });
    for (const m of defaults) {
      const r = await answer(objects.create(m, undefined, 'All'));
      expect({ object: key(m), ...r }).toEqual({ object: key(m), code: 200, message: '' });
    }
  });

  it('renders, with the HSM mode, the namespace check and the flood bounds set, objects the apiserver accepts (server-side dry run)', async () => {
    const objects = KubernetesObjectApi.makeApiClient(admin);
    await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: 'hsm-system' } } });
    const rendered = helm.template(chartDir, 'hsm', 'hsm-system', {
      fullnameOverride: 'hsm-eso-mtls',
      floodControl: { maxIssuancesPerReconcile: 0, maxNamespaces: 1_000_000 },
      providerLabelPolicy: { enabled: true, controllerCheck: true },
      hsm: {
        enabled: true,
        modulePath: '/opt/hsm/libsofthsm2.so',
        tokenLabel: 'eso',
        pinSecret: { name: 'eso-mtls-hsm-pin' },
        image: { repository: 'registry.example/eso-mtls/controller-hsm' },
        volumes: [{ name: 'softhsm-tokens', emptyDir: {} }],
        volumeMounts: [{ name: 'softhsm-tokens', mountPath: '/var/lib/softhsm/tokens' }],
      },
    });
    expect(rendered.map((m) => m.kind)).toContain('Deployment');
    for (const m of rendered) {
      const r = await answer(objects.create(m, undefined, 'All'));
      expect({ object: key(m), ...r }).toEqual({ object: key(m), code: 200, message: '' });
    }
  });

  it("runs the controller as the chart's ServiceAccount, with the Deployment's args, with zero 403s", async () => {
    const installation: Installation = {
      namespace: RELEASE_NS,
      caSecretName: 'platform-ca',
      clientSecretName: 'platform-client',
      clusterDomain: CLUSTER_DOMAIN,
      providers: new Map([
        ['team-1', ['vault']],
        ['team-2', ['aws', 'gcp']],
        ['provider-file', ['file-provider']], // the chart's example provider
      ]),
    };
    await providerNamespace(admin, 'team-1', ['vault']);
    await providerNamespace(admin, 'team-2', ['aws', 'gcp']);
    const kubeconfig = await serviceAccountKubeconfigFile(plane, RELEASE_NS, SA);
    const { args, env } = await deployedController(admin, RELEASE_NS, 'platform-eso-mtls', kubeconfig, 'platform-eso-mtls-pod-1');
    const controller = new ControllerProcess('chart-controller', args, env);
    try {
      const deadline = Date.now() + 60_000;
      while (!(await convergedState(admin, installation))) {
        if (!controller.alive || Date.now() > deadline) {
          throw new Error(`the controller did not converge within 60 s (alive: ${controller.alive}); last lines: ${controller.stdout.slice(-3000)}`);
        }
        await new Promise((r) => setTimeout(r, 250));
      }
      const lease = await admin.makeApiClient(CoordinationV1Api).readNamespacedLease({ namespace: RELEASE_NS, name: 'platform-leader' });
      expect(lease.spec!.holderIdentity).toBe('platform-eso-mtls-pod-1');
      controller.signal('SIGTERM');
      expect(await controller.exited).toEqual({ code: 0, signal: null });
    } finally {
      await controller.kill();
    }
    const ours = plane.auditEvents().filter((e) => e.user.username === SA_USER);
    expect(ours.filter((e) => e.objectRef?.resource === 'secrets' && e.verb === 'create').length).toBeGreaterThanOrEqual(2 + installation.providers.size);
    expect(ours.filter((e) => e.responseStatus?.code === 403).map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
  }, 120_000);

  it("refuses, by the release's admission policy, the service-account-token Secret and a foreign Lease in the release's namespace", async () => {
    const kubeconfig = await serviceAccountKubeconfigFile(plane, RELEASE_NS, SA);
    const sa = new KubeConfig();
    sa.loadFromFile(kubeconfig);
    const adminCore = admin.makeApiClient(CoreV1Api);
    await adminCore.createNamespace({ body: { metadata: { name: 'victim' } } });
    await adminCore.createNamespacedServiceAccount({ namespace: 'victim', body: { metadata: { name: 'powerful' } } });
    const tokenSecret = await answer(
      sa.makeApiClient(CoreV1Api).createNamespacedSecret({
        namespace: 'victim',
        body: {
          metadata: {
            name: 'external-secrets-provider-tls',
            labels: { 'app.kubernetes.io/managed-by': 'eso-mtls', 'app.kubernetes.io/component': 'provider-tls' },
            annotations: { 'kubernetes.io/service-account.name': 'powerful' },
          },
          type: 'kubernetes.io/service-account-token',
        },
      }),
    );
    expect(tokenSecret.code).toBe(403);
    expect(tokenSecret.message).toContain("ValidatingAdmissionPolicy 'platform-eso-mtls-secret-writes'");
    expect(tokenSecret.message).toContain('may write Secrets of type kubernetes.io/tls or Opaque only, not kubernetes.io/service-account-token');

    // ESO's own leader-election Lease in the release's namespace: the Role's create allows it, the policy does not.
    const foreign = await answer(
      sa.makeApiClient(CoordinationV1Api).createNamespacedLease({
        namespace: RELEASE_NS,
        body: { metadata: { name: 'external-secrets-controller' }, spec: { holderIdentity: SA, leaseDurationSeconds: 2_147_483_647 } },
      }),
    );
    expect(foreign.code).toBe(403);
    expect(foreign.message).toContain("ValidatingAdmissionPolicy 'platform-eso-mtls-lease-creates'");
    expect(foreign.message).toContain('may create only its own leader-election Lease platform-leader (--leader-election-id), not external-secrets-controller');
    // The CA name of this release is refused outside the release's namespace.
    const caElsewhere = await answer(
      sa.makeApiClient(CoreV1Api).createNamespacedSecret({
        namespace: 'victim',
        body: {
          metadata: { name: 'platform-ca', labels: { 'app.kubernetes.io/managed-by': 'eso-mtls', 'app.kubernetes.io/component': 'ca' } },
          type: 'Opaque',
        },
      }),
    );
    expect(caElsewhere).toEqual({ code: 403, message: expect.stringContaining(`may write platform-ca only in namespace ${RELEASE_NS}, not victim`) });
  });
});
