import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { CoreV1Api, type KubeConfig, type V1Deployment, type V1LabelSelector, type V1Pod, type V1Service } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { type ControlPlane, startControlPlane } from '../envtest/src/index.js';
import { type Manifest, applyAll, find, kustomizeBuild } from '@eso-mtls/test-kit/manifests';
import { repoRoot } from '@eso-mtls/test-kit/repo';
import { codeBlocks } from '../docs/markdown-blocks.js';
import { Helm, HelmError, chartDir } from '@eso-mtls/test-kit/helm';
import type { Answer } from '@eso-mtls/test-kit/answers';
import { type NetworkPolicy, createNetworkPolicyStrictly, ingressPorts, selectorQuery } from './support/network-policy.js';

// Threat T1, the network path: the shipped NetworkPolicies as objects on a real apiserver. No CNI
// runs here, so nothing enforces them; what is checked is that the apiserver takes them as they are
// written (strict field validation) and that their selectors and ports fit the shipped Deployments
// and Services: the apiserver itself matches each selector against pods made from the Deployments'
// templates and against decoys with ESO's other components' labels.

const ESO_NS = 'external-secrets-system';
const PROVIDER_NS = 'provider-file';
const DOCS = 'docs/network-policies.md';
/** TEST-NET-1 (RFC 5737): documentation addresses that route nowhere. */
const TEST_NET_1 = /^192\.0\.2\.\d{1,3}\/32$/;

/** ESO's own pods as ESO's Helm chart labels them: only the core controller may call a provider. */
const ESO_PODS = {
  'eso-core': { 'app.kubernetes.io/name': 'external-secrets', 'app.kubernetes.io/instance': 'external-secrets' },
  'eso-webhook': { 'app.kubernetes.io/name': 'external-secrets-webhook', 'app.kubernetes.io/instance': 'external-secrets' },
  'eso-cert-controller': { 'app.kubernetes.io/name': 'external-secrets-cert-controller', 'app.kubernetes.io/instance': 'external-secrets' },
};

const isNetworkPolicy = (m: Manifest): boolean => m.kind === 'NetworkPolicy';

/** A Pod as the Deployment's ReplicaSet would create it: the template's labels and spec. */
function podOf(deployment: V1Deployment): V1Pod {
  const template = deployment.spec!.template;
  return {
    metadata: { name: `${deployment.metadata!.name}-pod`, namespace: deployment.metadata!.namespace, labels: template.metadata!.labels },
    spec: template.spec!,
  };
}

/** Creates the ServiceAccount `default` (no controller-manager runs to do it), ignoring one that exists. */
async function defaultServiceAccount(core: CoreV1Api, namespace: string): Promise<void> {
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'default' } } }).catch((e: { code?: number }) => {
    if (e.code !== 409) throw e;
  });
}

/**
 * Creates what `manifests` hold on the apiserver: NetworkPolicies strictly (their answers are
 * returned), everything else as it is, plus a Pod per Deployment.
 */
async function install(admin: KubeConfig, manifests: readonly Manifest[]): Promise<Answer[]> {
  const core = admin.makeApiClient(CoreV1Api);
  await applyAll(
    admin,
    manifests.filter((m) => !isNetworkPolicy(m)),
  );
  for (const d of manifests.filter((m) => m.kind === 'Deployment') as V1Deployment[]) {
    await defaultServiceAccount(core, d.metadata!.namespace!);
    await core.createNamespacedPod({ namespace: d.metadata!.namespace!, body: podOf(d) });
  }
  const answers: Answer[] = [];
  for (const np of manifests.filter(isNetworkPolicy)) answers.push(await createNetworkPolicyStrictly(admin, np as NetworkPolicy, false));
  return answers;
}

/** The names of the pods of `namespace` that the apiserver finds with `selector`. */
async function podsSelected(core: CoreV1Api, namespace: string, selector: V1LabelSelector): Promise<string[]> {
  const list = await core.listNamespacedPod({ namespace, labelSelector: selectorQuery(selector) });
  return list.items.map((p) => p.metadata!.name!).sort();
}

/** The NetworkPolicy and Deployment named `name` in `manifests`, and its Service `service`: what a policy is read against. */
function policyObjects(manifests: readonly Manifest[], name: string, service: string): [NetworkPolicy, V1Deployment, V1Service] {
  return [
    find<NetworkPolicy>(manifests, 'NetworkPolicy', name),
    find<V1Deployment>(manifests, 'Deployment', name),
    find<V1Service>(manifests, 'Service', service),
  ];
}

/** What a controller NetworkPolicy allows, read against the controller's Deployment and metrics Service. */
async function controllerFacts(core: CoreV1Api, np: NetworkPolicy, deployment: V1Deployment, metrics: V1Service) {
  const container = deployment.spec!.template.spec!.containers.find((c) => c.name === 'controller')!;
  const containerPorts = (container.ports ?? []).map((p) => p.name);
  const ports = ingressPorts(np).flat();
  const egress = np.spec!.egress ?? [];
  return {
    policyTypes: np.spec!.policyTypes,
    selected: await podsSelected(core, np.metadata!.namespace!, np.spec!.podSelector),
    ingressPorts: ports,
    portsNoContainerHas: ports.filter((p) => !containerPorts.includes(String(p))),
    metricsServiceTargetAllowed: ports.includes(metrics.spec!.ports![0]!.targetPort as string),
    egressPeers: egress.flatMap((r) => (r.to ?? []).map((peer) => Object.keys(peer).join('+'))),
    egressCidrs: egress.flatMap((r) => (r.to ?? []).map((peer) => peer.ipBlock?.cidr)),
    egressPorts: egress.flatMap((r) => (r.ports ?? []).map((p) => p.port)),
  };
}

/** What a provider NetworkPolicy allows, read against the provider's Deployment and labelled Service. */
async function providerFacts(core: CoreV1Api, np: NetworkPolicy, deployment: V1Deployment, service: V1Service) {
  const container = deployment.spec!.template.spec!.containers[0]!;
  const [grpc, health] = np.spec!.ingress!;
  const esoPeer = grpc!.from![0]!;
  const namespaces = await core.listNamespace({ labelSelector: selectorQuery(esoPeer.namespaceSelector!) });
  return {
    policyTypes: np.spec!.policyTypes,
    selected: await podsSelected(core, np.metadata!.namespace!, np.spec!.podSelector),
    grpcPorts: (grpc!.ports ?? []).map((p) => p.port),
    serviceTargetPort: service.spec!.ports![0]!.targetPort,
    grpcPeerNamespaces: namespaces.items.map((n) => n.metadata!.name),
    grpcPeerPods: await podsSelected(core, ESO_NS, esoPeer.podSelector!),
    healthPorts: (health?.ports ?? []).map((p) => p.port),
    probePorts: [container.livenessProbe?.httpGet?.port, container.readinessProbe?.httpGet?.port],
    containerPorts: (container.ports ?? []).map((p) => p.name),
    egressRules: np.spec!.egress ?? [],
  };
}

describe('shipped NetworkPolicies on a real apiserver (nothing enforces them: no CNI runs here)', () => {
  let plane: ControlPlane;
  let core: CoreV1Api;
  let kustomized: Manifest[];
  let example: Manifest[];
  let answers: Answer[];
  const helm = new Helm();

  beforeAll(async () => {
    plane = await startControlPlane();
    core = plane.adminKubeConfig.makeApiClient(CoreV1Api);
    kustomized = kustomizeBuild('deploy/overlays/network-policies');
    example = kustomizeBuild('deploy/examples/file-provider-network-policy');
    answers = [
      ...(await install(plane.adminKubeConfig, [...kustomizeBuild('deploy/namespace'), ...kustomized])),
      ...(await install(plane.adminKubeConfig, example)),
    ];
    for (const [name, labels] of Object.entries(ESO_PODS)) {
      await core.createNamespacedPod({ namespace: ESO_NS, body: { metadata: { name, labels }, spec: { containers: [{ name: 'c', image: 'eso' }] } } });
    }
  }, 120_000);
  afterAll(async () => {
    helm.remove();
    await plane?.stop();
  });

  it('takes every shipped NetworkPolicy with strict field validation, and refuses a misspelt field and a bad address (the check can fail)', async () => {
    expect([...kustomized, ...example].filter(isNetworkPolicy).map((m) => `${m.metadata!.namespace}/${m.metadata!.name}`)).toEqual([
      `${ESO_NS}/eso-mtls-controller`,
      `${PROVIDER_NS}/file-provider`,
    ]);
    expect(answers).toEqual([
      { code: 200, message: '' },
      { code: 200, message: '' },
    ]);
    const shipped = find<NetworkPolicy>(kustomized, 'NetworkPolicy', 'eso-mtls-controller');
    const misspelt = { ...shipped, metadata: { ...shipped.metadata, name: 'misspelt' }, spec: { ...shipped.spec, podSelectr: {} } };
    const refused = await createNetworkPolicyStrictly(plane.adminKubeConfig, misspelt as NetworkPolicy);
    expect(refused).toEqual({ code: 400, message: expect.stringContaining('unknown field "spec.podSelectr"') });
    const badCidr = structuredClone(shipped);
    badCidr.metadata!.name = 'bad-cidr';
    badCidr.spec!.egress![0]!.to![0]!.ipBlock!.cidr = '192.0.2.1';
    expect((await createNetworkPolicyStrictly(plane.adminKubeConfig, badCidr)).code).toBe(422);
  });

  it("selects the controller's pods only, lets in only its metrics port, and lets out only to the placeholder apiserver address (no DNS)", async () => {
    const [np, deployment, metrics] = policyObjects(kustomized, 'eso-mtls-controller', 'eso-mtls-controller-metrics');
    const facts = await controllerFacts(core, np, deployment, metrics);
    expect(facts).toEqual({
      policyTypes: ['Ingress', 'Egress'],
      selected: ['eso-mtls-controller-pod'],
      ingressPorts: ['metrics'],
      portsNoContainerHas: [],
      metricsServiceTargetAllowed: true,
      egressPeers: ['ipBlock'],
      egressCidrs: [expect.stringMatching(TEST_NET_1)],
      egressPorts: [6443],
    });
    // Prometheus, in any namespace, by the label its operator gives it.
    expect(np.spec!.ingress![0]!.from).toEqual([{ namespaceSelector: {}, podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } } }]);
  });

  it('takes your apiserver endpoints by the overlay patch docs/network-policies.md shows', async () => {
    const block = codeBlocks(readFileSync(resolve(repoRoot, DOCS), 'utf8'), DOCS).find((b) => b.flags.includes('overlay'));
    expect(block).toBeDefined();
    const dir = mkdtempSync(join(tmpdir(), 'eso-mtls-np-overlay-'));
    try {
      const overlay = resolve(repoRoot, 'deploy/overlays/network-policies');
      writeFileSync(join(dir, 'kustomization.yaml'), block!.code.replace('../eso-mtls/deploy/overlays/network-policies', relative(dir, overlay)));
      const patched = find<NetworkPolicy>(kustomizeBuild(dir), 'NetworkPolicy', 'eso-mtls-controller');
      const documented = parse(block!.code) as { patches: { patch: string }[] };
      expect(patched.spec!.egress).toEqual([
        {
          to: (parse(documented.patches[0]!.patch) as { value: unknown }[])[0]!.value,
          ports: [{ port: 443, protocol: 'TCP' }],
        },
      ]);
      expect(patched.spec!.egress![0]!.to!.map((p) => p.ipBlock!.cidr)).not.toContainEqual(expect.stringMatching(TEST_NET_1));
      expect({ ...patched.spec, egress: [] }).toEqual({ ...find<NetworkPolicy>(kustomized, 'NetworkPolicy', 'eso-mtls-controller').spec, egress: [] });
      const renamed = { ...patched, metadata: { ...patched.metadata, name: 'documented' } };
      expect(await createNetworkPolicyStrictly(plane.adminKubeConfig, renamed)).toEqual({ code: 200, message: '' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("selects the example provider's pods, lets only ESO core's pods reach the Service's gRPC target, Prometheus the health port, and nothing out", async () => {
    const facts = await providerFacts(core, ...policyObjects(example, 'file-provider', 'file-provider'));
    expect(facts).toEqual({
      policyTypes: ['Ingress', 'Egress'],
      selected: ['file-provider-pod'],
      grpcPorts: ['grpc'],
      serviceTargetPort: 'grpc',
      grpcPeerNamespaces: [ESO_NS],
      grpcPeerPods: ['eso-core'],
      healthPorts: ['health'],
      probePorts: ['health', 'health'],
      containerPorts: ['grpc', 'health'],
      egressRules: [],
    });
    // Neither the eso-mtls controller nor ESO's webhook or cert controller may call the provider.
    expect(await core.listNamespacedPod({ namespace: ESO_NS }).then((l) => l.items.map((p) => p.metadata!.name).sort())).toEqual([
      'eso-cert-controller',
      'eso-core',
      'eso-mtls-controller-pod',
      'eso-webhook',
    ]);
  });

  it('takes the provider templates of docs/network-policies.md with strict field validation', async () => {
    const templates = codeBlocks(readFileSync(resolve(repoRoot, DOCS), 'utf8'), DOCS)
      .filter((b) => b.flags.includes('template'))
      .map((b) => parse(b.code) as NetworkPolicy);
    expect(templates.length).toBeGreaterThanOrEqual(2);
    for (const np of templates) {
      expect(np.kind).toBe('NetworkPolicy');
      await core.createNamespace({ body: { metadata: { name: np.metadata!.namespace! } } }).catch(() => undefined);
      const created = await createNetworkPolicyStrictly(plane.adminKubeConfig, np);
      expect({ template: np.metadata!.name, ...created }).toEqual({ template: np.metadata!.name, code: 200, message: '' });
    }
  });

  describe('in the Helm chart (networkPolicies)', () => {
    const RELEASE_NS = 'platform-secrets';
    const values = {
      fullnameOverride: 'platform-eso-mtls',
      exampleProvider: { enabled: true, namespace: 'platform-provider' },
      networkPolicies: {
        controller: {
          enabled: true,
          apiServerCIDRs: ['10.0.0.10/32', '10.0.0.11/32'],
          apiServerPorts: [443],
          healthFrom: [{ ipBlock: { cidr: '10.1.0.0/16' } }],
        },
        exampleProvider: { enabled: true },
      },
    };
    let chart: Manifest[];

    beforeAll(async () => {
      chart = helm.template(chartDir, 'platform', RELEASE_NS, values);
      await core.createNamespace({ body: { metadata: { name: RELEASE_NS } } });
      answers = await install(plane.adminKubeConfig, chart);
    }, 60_000);

    it('renders no NetworkPolicy by default', () => {
      expect(helm.template(chartDir, 'eso-mtls', ESO_NS, { exampleProvider: { enabled: true } }).filter(isNetworkPolicy)).toEqual([]);
    });

    it("renders the controller's and the example provider's, which the apiserver takes strictly and which fit the chart's own objects", async () => {
      expect(answers).toEqual([
        { code: 200, message: '' },
        { code: 200, message: '' },
      ]);
      expect(await controllerFacts(core, ...policyObjects(chart, 'platform-eso-mtls', 'platform-eso-mtls-metrics'))).toEqual({
        policyTypes: ['Ingress', 'Egress'],
        selected: ['platform-eso-mtls-pod'],
        ingressPorts: ['metrics', 'health'],
        portsNoContainerHas: [],
        metricsServiceTargetAllowed: true,
        egressPeers: ['ipBlock', 'ipBlock'],
        egressCidrs: ['10.0.0.10/32', '10.0.0.11/32'],
        egressPorts: [443],
      });
      const [provider, deployment, service] = policyObjects(chart, 'file-provider', 'file-provider');
      expect(provider.metadata!.namespace).toBe('platform-provider');
      const facts = await providerFacts(core, provider, deployment, service);
      // ESO's namespace is the release's: ESO core there, not in external-secrets-system, may call it.
      expect(facts).toMatchObject({ selected: ['file-provider-pod'], grpcPorts: ['grpc'], serviceTargetPort: 'grpc', grpcPeerNamespaces: [RELEASE_NS] });
      const expected = structuredClone(find<NetworkPolicy>(example, 'NetworkPolicy', 'file-provider').spec!);
      expected.ingress![0]!.from![0]!.namespaceSelector = { matchLabels: { 'kubernetes.io/metadata.name': RELEASE_NS } };
      expect(provider.spec).toEqual(expected);
    });

    it('refuses values that would ship a policy that cannot work', () => {
      expect(() => helm.template(chartDir, 'r', RELEASE_NS, { networkPolicies: { controller: { enabled: true } } })).toThrow(
        /networkPolicies.controller.enabled needs networkPolicies.controller.apiServerCIDRs: the apiserver's endpoint addresses/,
      );
      expect(() => helm.template(chartDir, 'r', RELEASE_NS, { networkPolicies: { exampleProvider: { enabled: true } } })).toThrow(HelmError);
      expect(() => helm.template(chartDir, 'r', RELEASE_NS, { networkPolicies: { controller: { enabled: true, apiServerCIDRs: ['10.0.0.10'] } } })).toThrow(
        /apiServerCIDRs\/0/,
      );
    });
  });
});
