import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import {
  CoreV1Api,
  type KubeConfig,
  PatchStrategy,
  type V1ClusterRole,
  type V1ConfigMap,
  type V1Deployment,
  type V1PolicyRule,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../envtest/src/index.js';
import { ControllerProcess } from '@eso-mtls/test-kit/controller-process';
import { type Manifest, find, kustomizeBuild } from '@eso-mtls/test-kit/manifests';
import { repoRoot } from '@eso-mtls/test-kit/repo';
import { Helm, HelmError, type Values, chartDir } from '@eso-mtls/test-kit/helm';
import { containerOf, flagsOf, ruleSet } from './support/pod-certificates.js';
import {
  type Installation,
  convergedState,
  deployedController,
  parsedControllerConfig,
  providerNamespace,
  serviceAccountKubeconfigFile,
  storedCertificate,
} from './support/release.js';

// The controller's own namespace check (threat T3, --require-namespace-label): in the chart,
// providerLabelPolicy.controllerCheck; in kustomize, the component
// deploy/overlays/provider-label-policy/namespace-check, which that overlay lists. Either passes
// the flag with the policies' namespace label and adds read rights on namespaces, and only then.
const helm = new Helm();
afterAll(() => helm.remove());

const NAME = 'eso-mtls-controller';
const OVERLAY = 'deploy/overlays/provider-label-policy';
const NAMESPACES_RULE: V1PolicyRule = { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] };

const render = (values: Values) => helm.template(chartDir, 'eso-mtls', 'external-secrets-system', { fullnameOverride: NAME, ...values });
const rulesOf = (ms: Manifest[]) => find<V1ClusterRole>(ms, 'ClusterRole', NAME).rules ?? [];
const grantsNamespaces = (ms: Manifest[]) => rulesOf(ms).filter((r) => r.resources?.some((x) => x === 'namespaces' || x === '*'));
const flagOf = (ms: Manifest[]) => flagsOf(containerOf(find<V1Deployment>(ms, 'Deployment', NAME), 'controller').args ?? [])['require-namespace-label'];
/** The provider-label admission policies and their bindings among `ms`. */
const labelPolicies = (ms: Manifest[]) => ms.filter((m) => m.kind?.startsWith('ValidatingAdmissionPolicy') && m.metadata!.name!.includes('provider-'));
const requirementOf = (ms: Manifest[]) => parsedControllerConfig(find<V1Deployment>(ms, 'Deployment', NAME)).namespaceRequirement;

/** `kustomize build` of a throw-away kustomization of deploy/base with the given components of deploy/overlays. */
function withComponents(components: readonly string[]): Manifest[] {
  const dir = mkdtempSync(join(tmpdir(), 'eso-mtls-components-'));
  try {
    const path = (p: string) => relative(dir, resolve(repoRoot, p));
    const lines = ['resources:', `- ${path('deploy/base')}`, 'components:', ...components.map((c) => `- ${path(`deploy/overlays/${c}`)}`)];
    writeFileSync(join(dir, 'kustomization.yaml'), `${lines.join('\n')}\n`);
    return kustomizeBuild(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the namespace check in the chart and in kustomize', () => {
  it('is off by default: no flag and no right on namespaces, in deploy/base or the chart, the label policies on or off', () => {
    for (const manifests of [kustomizeBuild('deploy'), render({}), render({ providerLabelPolicy: { enabled: true } })]) {
      expect(flagOf(manifests)).toBeUndefined();
      expect(grantsNamespaces(manifests)).toEqual([]);
      expect(requirementOf(manifests)).toBeUndefined();
    }
  });

  it("passes the policies' namespace label as the flag and adds the one read rule, in the chart as in the overlay", () => {
    const chart = render({ providerLabelPolicy: { enabled: true, controllerCheck: true } });
    const overlay = kustomizeBuild(OVERLAY);
    const params = find<V1ConfigMap>(overlay, 'ConfigMap', `${NAME}-provider-label`).data!;
    for (const manifests of [chart, overlay]) {
      expect(flagOf(manifests)).toBe(`${params.namespaceLabel}=${params.namespaceLabelValue}`);
      expect(requirementOf(manifests)).toEqual({ key: params.namespaceLabel, value: params.namespaceLabelValue });
      expect(grantsNamespaces(manifests)).toEqual([NAMESPACES_RULE]);
    }
    // Nothing else changes: the rest of the ClusterRole is deploy/base's, and so is the rest of the configuration.
    expect(ruleSet(rulesOf(chart))).toEqual(ruleSet(rulesOf(overlay)));
    expect(ruleSet(rulesOf(overlay))).toEqual(ruleSet([...rulesOf(kustomizeBuild('deploy')), NAMESPACES_RULE]));
    const configOf = (ms: Manifest[]) => ({ ...parsedControllerConfig(find<V1Deployment>(ms, 'Deployment', NAME)), namespaceRequirement: undefined });
    expect(configOf(overlay)).toEqual(configOf(kustomizeBuild('deploy')));
  });

  it('in the chart, is independent of providerLabelPolicy.enabled and follows the namespace label values', () => {
    const alone = render({ providerLabelPolicy: { controllerCheck: true, namespaceLabel: 'example.com/eso-providers', namespaceLabelValue: 'allowed' } });
    expect(flagOf(alone)).toBe('example.com/eso-providers=allowed');
    expect(requirementOf(alone)).toEqual({ key: 'example.com/eso-providers', value: 'allowed' });
    expect(grantsNamespaces(alone)).toEqual([NAMESPACES_RULE]);
    expect(labelPolicies(alone)).toEqual([]);
    // Pod-certificate mode: the same flag and rule next to the signer's rules.
    const podCertificates = render({ modes: ['pod-certificate'], providerLabelPolicy: { controllerCheck: true } });
    expect(requirementOf(podCertificates)).toEqual({ key: 'eso-mtls.io/providers-allowed', value: 'true' });
    expect(grantsNamespaces(podCertificates)).toEqual([NAMESPACES_RULE]);
  });

  it('in kustomize, is a component of its own: next to deploy/base alone, or with pruning, each adding its flag and rule', () => {
    const alone = withComponents(['provider-label-policy/namespace-check']);
    expect(flagOf(alone)).toBe('eso-mtls.io/providers-allowed=true');
    expect(ruleSet(rulesOf(alone))).toEqual(ruleSet([...rulesOf(kustomizeBuild('deploy')), NAMESPACES_RULE]));
    expect(labelPolicies(alone)).toEqual([]);
    const both = withComponents(['provider-label-policy/namespace-check', 'prune-orphaned-secrets/pruning']);
    const config = parsedControllerConfig(find<V1Deployment>(both, 'Deployment', NAME));
    expect([config.namespaceRequirement, config.pruneOrphanedSecretsAfter]).toEqual([{ key: 'eso-mtls.io/providers-allowed', value: 'true' }, 24 * 3_600_000]);
    expect(grantsNamespaces(both)).toEqual([NAMESPACES_RULE]);
  });

  it('refuses, in the chart, a check without a label value, naming the values', () => {
    let error: unknown;
    try {
      render({ providerLabelPolicy: { controllerCheck: true, namespaceLabelValue: '' } });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(HelmError);
    expect((error as HelmError).stderr).toContain(
      'providerLabelPolicy.controllerCheck needs providerLabelPolicy.namespaceLabelValue: --require-namespace-label takes key=value with a value, e.g. eso-mtls.io/providers-allowed=true',
    );
  });
});

describe("the chart's namespace check on a real apiserver, the controller running as the chart's ServiceAccount", () => {
  const NS = 'eso-check';
  const SA_USER = `system:serviceaccount:${NS}:${NAME}`;
  const ALLOW = { 'eso-mtls.io/providers-allowed': 'true' };
  const installation = (providers: [string, string[]][]): Installation => ({
    namespace: NS,
    caSecretName: 'eso-provider-ca-internal',
    clientSecretName: 'eso-provider-client-tls',
    clusterDomain: 'cluster.local',
    providers: new Map(providers),
  });
  let plane: ControlPlane;
  let admin: KubeConfig;
  let cluster: Helm;

  /** Waits for `done` as a controller would converge: 60 s, or at once when the controller exits. */
  async function until(what: string, controller: ControllerProcess, done: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (!(await done())) {
      if (!controller.alive || Date.now() > deadline) {
        throw new Error(`${what}: not within 60 s (controller alive: ${controller.alive}); last lines: ${controller.stdout.slice(-3000)}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  const refusedNamespaces = () =>
    plane.auditEvents().filter((e) => e.user.username === SA_USER && e.objectRef?.resource === 'namespaces' && e.responseStatus?.code === 403);

  beforeAll(async () => {
    plane = await startControlPlane({ audit: true });
    admin = plane.adminKubeConfig;
    cluster = new Helm(plane.adminKubeconfigPath);
    cluster.install(chartDir, 'check', NS, { fullnameOverride: NAME, replicaCount: 1, providerLabelPolicy: { controllerCheck: true } });
    await providerNamespace(admin, 'team-open', ['vault']);
    await providerNamespace(admin, 'team-closed', ['aws']);
    await admin
      .makeApiClient(CoreV1Api)
      .patchNamespace({ name: 'team-open', body: { metadata: { labels: ALLOW } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  }, 180_000);
  afterAll(async () => {
    cluster?.remove();
    await plane?.stop();
  });

  it('serves the labelled namespace, not the other until an admin labels it, with zero 403s', async () => {
    const kubeconfig = await serviceAccountKubeconfigFile(plane, NS, NAME);
    const { args, env } = await deployedController(admin, NS, NAME, kubeconfig, 'check-pod-1');
    const core = admin.makeApiClient(CoreV1Api);
    const controller = new ControllerProcess('namespace-check', args, env);
    try {
      await until('team-open served', controller, async () => (await convergedState(admin, installation([['team-open', ['vault']]]))) !== undefined);
      await until('a NamespaceNotAllowed Event in team-closed', controller, async () =>
        (await core.listNamespacedEvent({ namespace: 'team-closed' })).items.some((e) => e.reason === 'NamespaceNotAllowed' && e.type === 'Warning'),
      );
      expect(await storedCertificate(admin, 'team-closed', 'external-secrets-provider-tls', 'tls.crt')).toBeUndefined();
      // The label reaches the controller through its watch on namespaces.
      await core.patchNamespace({ name: 'team-closed', body: { metadata: { labels: ALLOW } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
      const both = installation([
        ['team-open', ['vault']],
        ['team-closed', ['aws']],
      ]);
      await until('team-closed served once labelled', controller, async () => (await convergedState(admin, both)) !== undefined);
      controller.signal('SIGTERM');
      expect(await controller.exited).toEqual({ code: 0, signal: null });
    } finally {
      await controller.kill();
    }
    const ours = plane.auditEvents().filter((e) => e.user.username === SA_USER);
    expect(ours.some((e) => e.objectRef?.resource === 'namespaces' && e.verb === 'watch')).toBe(true);
    expect(ours.filter((e) => e.responseStatus?.code === 403).map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
  }, 120_000);

  it('needs the rule: the same flag through extraArgs, without controllerCheck, is refused the namespaces', async () => {
    cluster.upgrade(chartDir, 'check', NS, {
      fullnameOverride: NAME,
      replicaCount: 1,
      extraArgs: ['--require-namespace-label=eso-mtls.io/providers-allowed=true'],
    });
    expect(refusedNamespaces()).toEqual([]);
    const kubeconfig = await serviceAccountKubeconfigFile(plane, NS, NAME);
    const { args, env } = await deployedController(admin, NS, NAME, kubeconfig, 'check-pod-2');
    expect(flagsOf(args)['require-namespace-label']).toBe('eso-mtls.io/providers-allowed=true');
    const controller = new ControllerProcess('namespace-check-without-rbac', args, env);
    try {
      await until('a 403 on namespaces', controller, async () => refusedNamespaces().length > 0);
    } finally {
      await controller.kill();
    }
  }, 120_000);
});
