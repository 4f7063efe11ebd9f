import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  AuthorizationV1Api,
  type V1ClusterRole,
  type V1Deployment,
  type V1PodSpec,
  type V1ResourceAttributes,
  type V1Role,
  type V1Volume,
} from '@kubernetes/client-node';
import { parse } from 'yaml';
import { type ControlPlane, startControlPlane } from '../envtest/src/index.js';
import { type Manifest, find, kustomizeBuild } from '@eso-mtls/test-kit/manifests';
import { repoRoot } from '@eso-mtls/test-kit/repo';
import { Helm, type Values, chartDir } from '@eso-mtls/test-kit/helm';
import { expectRefusals } from './support/refusals.js';
import { Kubectl } from './support/kubectl.js';
import { parseFileProviderConfig } from '../../examples/file-provider/src/config.js';
import {
  CLIENT_SIGNER,
  SERVER_SIGNER,
  SHARED_RULES,
  containerOf,
  credentialVolume,
  expectedSources,
  flagsOf,
  ruleSet,
  secretRightsOutside,
  signerRules,
} from './support/pod-certificates.js';

// The pod-certificate manifests (issue 15): the kustomize overlays deploy/overlays/pod-certificates
// and pod-certificates-migration, the examples deploy/examples/file-provider-pod-certificates and
// eso-core-pod-certificates, and the chart's modes. Rendered by real kustomize and helm, checked
// against the mode's contract, then created on a real v1.37.2 apiserver with strict field
// validation and asked, by SubjectAccessReview, what the controller's ServiceAccount may do.

const ESO_NS = 'external-secrets-system';
const CONTROLLER = 'eso-mtls-controller';
/** The flags the pod-certificate mode adds to the controller's args, with the contract's defaults. */
const POD_FLAGS = {
  'server-signer-name': SERVER_SIGNER,
  'client-signer-name': CLIENT_SIGNER,
  'pod-certificate-max-validity': '24h',
};

const clusterRoleRules = (ms: Manifest[], name = CONTROLLER) => find<V1ClusterRole>(ms, 'ClusterRole', name).rules ?? [];
const secretsRoleRules = (ms: Manifest[], name = `${CONTROLLER}-secrets`) => find<V1Role>(ms, 'Role', name).rules ?? [];
const controllerArgs = (ms: Manifest[], name = CONTROLLER) => containerOf(find<V1Deployment>(ms, 'Deployment', name), 'controller').args ?? [];
const podOf = (ms: Manifest[], name: string): V1PodSpec => find<V1Deployment>(ms, 'Deployment', name).spec!.template.spec!;
const yamlStream = (ms: readonly Manifest[]) => ms.map((m) => JSON.stringify(m)).join('\n---\n');

const base = kustomizeBuild('deploy');
const podOnly = kustomizeBuild('deploy/overlays/pod-certificates');
const migration = kustomizeBuild('deploy/overlays/pod-certificates-migration');
const exampleSecret = kustomizeBuild('deploy/examples/file-provider');
const examplePod = kustomizeBuild('deploy/examples/file-provider-pod-certificates');
const esoPatchPath = resolve(repoRoot, 'deploy/examples/eso-core-pod-certificates/volume-patch.yaml');
const esoPatch = parse(readFileSync(esoPatchPath, 'utf8')) as V1Deployment;

describe('pod-certificate manifests, rendered by kustomize', () => {
  it("gives the pod-certificates overlay's ClusterRole exactly the contract's rules, and no Secret right outside ESO's namespace", () => {
    expect(ruleSet(clusterRoleRules(podOnly))).toEqual(ruleSet([...SHARED_RULES, ...signerRules(SERVER_SIGNER, CLIENT_SIGNER)]));
    expect(secretRightsOutside(podOnly, ESO_NS, CONTROLLER)).toEqual([]);
    // The check sees the Secret mode's two cluster-wide Secret rules, so it can fail.
    expect(secretRightsOutside(base, ESO_NS, CONTROLLER)).toHaveLength(2);
    // The CA Secret's create moved into the Role of ESO's namespace; the rest of the Role is deploy/base's.
    expect(ruleSet(secretsRoleRules(podOnly))).toEqual(ruleSet([...secretsRoleRules(base), { apiGroups: [''], resources: ['secrets'], verbs: ['create'] }]));
    expect(find<V1Role>(podOnly, 'Role', `${CONTROLLER}-secrets`).metadata!.namespace).toBe(ESO_NS);
    // The admission policies stay (they grant nothing; the Secret one bounds that create).
    for (const kind of ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']) {
      expect(podOnly.filter((m) => m.kind === kind)).toEqual(base.filter((m) => m.kind === kind));
    }
  });

  it("gives the migration overlay's ClusterRole deploy/base's rules plus the signer's, and the Secret mode's rights, no more", () => {
    expect(ruleSet(clusterRoleRules(migration))).toEqual(ruleSet([...clusterRoleRules(base), ...signerRules(SERVER_SIGNER, CLIENT_SIGNER)]));
    expect(secretRightsOutside(migration, ESO_NS, CONTROLLER)).toEqual(secretRightsOutside(base, ESO_NS, CONTROLLER));
    expect(secretsRoleRules(migration)).toEqual(secretsRoleRules(base));
  });

  it('passes each mode and the signer names as flags, the same names the ClusterRole grants sign and attest on, and changes nothing else', () => {
    for (const [overlay, modes] of [
      [podOnly, 'pod-certificate'],
      [migration, 'secret,pod-certificate'],
    ] as const) {
      const args = controllerArgs(overlay);
      const flags = flagsOf(args);
      expect(flags).toMatchObject({ modes, ...POD_FLAGS });
      const signers = clusterRoleRules(overlay).filter((r) => r.resources?.includes('signers'));
      expect(signers.map((r) => r.resourceNames)).toEqual([[flags['server-signer-name'], flags['client-signer-name']]]);
      // deploy/base's args, then the four flags of the mode.
      expect(args).toEqual([...controllerArgs(base), ...Object.entries({ modes, ...POD_FLAGS }).map(([k, v]) => `--${k}=${v}`)]);
      const withoutArgs = (ms: Manifest[]) => {
        const d = structuredClone(find<V1Deployment>(ms, 'Deployment', CONTROLLER));
        containerOf(d, 'controller').args = [];
        return d;
      };
      expect(withoutArgs(overlay)).toEqual(withoutArgs(base));
      const rest = (ms: Manifest[]) => ms.filter((m) => !['ClusterRole', 'Role', 'Deployment'].includes(m.kind!));
      expect(rest(overlay)).toEqual(rest(base));
    }
  });

  it("mounts, in the example provider, one projected volume for the server signer's certificate and the client signer's trust bundle, and no Secret", () => {
    const pod = podOf(examplePod, 'file-provider');
    const volume = credentialVolume(pod, 'provider', '/etc/provider/certs');
    expect(volume.sources).toEqual(expectedSources(SERVER_SIGNER, CLIENT_SIGNER));
    expect(volume.subPath).toBeUndefined();
    expect(pod.volumes!.filter((v: V1Volume) => v.secret !== undefined)).toEqual([]);
    // The provider's own parser reads the pod-certificate layout from the folder mounted.
    const provider = containerOf(find<V1Deployment>(examplePod, 'Deployment', 'file-provider'), 'provider');
    // Its env as the kubelet gives it: the one fieldRef is the pod's namespace.
    const env = Object.fromEntries(
      (provider.env ?? []).map((e) => [e.name, e.valueFrom?.fieldRef?.fieldPath === 'metadata.namespace' ? 'provider-file' : e.value]),
    );
    const config = parseFileProviderConfig(provider.args ?? [], env);
    expect([config.certLayout, config.certDir]).toEqual(['pod-certificate', '/etc/provider/certs']);
    // The same provider otherwise: its image, env and probes, one flag more, and the same Namespace and Service.
    const secretProvider = containerOf(find<V1Deployment>(exampleSecret, 'Deployment', 'file-provider'), 'provider');
    expect(provider.args).toEqual([...secretProvider.args!, '--cert-layout=pod-certificate']);
    expect({ ...provider, args: [], volumeMounts: [] }).toEqual({ ...secretProvider, args: [], volumeMounts: [] });
    expect({ ...pod, containers: [], volumes: [] }).toEqual({ ...podOf(exampleSecret, 'file-provider'), containers: [], volumes: [] });
    const others = (ms: Manifest[]) => ms.filter((m) => m.kind !== 'Deployment');
    expect(others(examplePod)).toEqual(others(exampleSecret));
  });

  it("patches ESO core's Deployment with one projected volume for the client signer's certificate and the server signer's trust bundle", () => {
    expect([esoPatch.kind, esoPatch.metadata!.name, esoPatch.metadata!.namespace]).toEqual(['Deployment', 'external-secrets', ESO_NS]);
    const pod = esoPatch.spec!.template.spec!;
    const volume = credentialVolume(pod, 'external-secrets', '/etc/eso/client-certs');
    expect(volume.sources).toEqual(expectedSources(CLIENT_SIGNER, SERVER_SIGNER));
    expect(volume.subPath).toBeUndefined();
  });
});

describe('pod-certificate modes of the Helm chart, rendered by helm', () => {
  const helm = new Helm();
  afterAll(() => helm.remove());
  const render = (values: Values, release = 'eso-mtls', namespace = ESO_NS) => helm.template(chartDir, release, namespace, values);

  it('passes helm lint --strict in each mode, with the example provider', () => {
    for (const modes of [['secret'], ['pod-certificate'], ['secret', 'pod-certificate']]) {
      const out = helm.run(['lint', chartDir, '--strict', ...helm.valuesArgs({ modes, exampleProvider: { enabled: true } })]);
      expect({ modes, out }).toEqual({ modes, out: expect.stringContaining('1 chart(s) linted, 0 chart(s) failed') });
    }
  });

  it("renders, for each mode, the matching overlay's ClusterRole, Role and mode flags", () => {
    const cases: [Values, Manifest[], string | undefined][] = [
      [{}, base, undefined],
      [{ modes: ['secret'] }, base, undefined],
      [{ modes: ['pod-certificate'] }, podOnly, 'pod-certificate'],
      // Either order gives the one canonical flag.
      [{ modes: ['pod-certificate', 'secret'] }, migration, 'secret,pod-certificate'],
      [{ modes: ['secret', 'pod-certificate'] }, migration, 'secret,pod-certificate'],
    ];
    for (const [values, overlay, modes] of cases) {
      const chart = render(values);
      expect({ values, rules: ruleSet(clusterRoleRules(chart)) }).toEqual({ values, rules: ruleSet(clusterRoleRules(overlay)) });
      expect({ values, rules: ruleSet(secretsRoleRules(chart)) }).toEqual({ values, rules: ruleSet(secretsRoleRules(overlay)) });
      expect(secretRightsOutside(chart, ESO_NS, CONTROLLER)).toEqual(secretRightsOutside(overlay, ESO_NS, CONTROLLER));
      const flags = flagsOf(controllerArgs(chart));
      const podFlags = Object.fromEntries(Object.entries(flags).filter(([k]) => k === 'modes' || k in POD_FLAGS));
      expect({ values, podFlags }).toEqual({ values, podFlags: modes === undefined ? {} : { modes, ...POD_FLAGS } });
    }
    expect(secretRightsOutside(render({ modes: ['pod-certificate'] }), ESO_NS, CONTROLLER)).toEqual([]);
  });

  it("passes the signer names and max validity to the flags, the ClusterRole's resourceNames and the example provider's volume", () => {
    const server = 'signer.example/provider';
    const client = 'signer.example/eso';
    const chart = render(
      {
        modes: ['pod-certificate'],
        podCertificate: { serverSignerName: server, clientSignerName: client, maxValidity: '72h' },
        exampleProvider: { enabled: true },
      },
      'platform',
      'platform-secrets',
    );
    expect(flagsOf(controllerArgs(chart))).toMatchObject({
      modes: 'pod-certificate',
      'server-signer-name': server,
      'client-signer-name': client,
      'pod-certificate-max-validity': '72h',
    });
    expect(ruleSet(clusterRoleRules(chart))).toEqual(ruleSet([...SHARED_RULES, ...signerRules(server, client)]));
    const pod = podOf(chart, 'file-provider');
    expect(credentialVolume(pod, 'provider', '/etc/provider/certs').sources).toEqual(expectedSources(server, client));
    expect(pod.volumes!.filter((v: V1Volume) => v.secret !== undefined)).toEqual([]);
  });

  it('renders the example provider of deploy/examples/file-provider-pod-certificates when the modes include pod-certificate, the Secret one otherwise, with the same probes and preStop wait', () => {
    const volumesAndMounts = (pod: V1PodSpec) => {
      const { volumeMounts: mounts, args, startupProbe, livenessProbe, readinessProbe, lifecycle } = pod.containers[0]!;
      return { volumes: pod.volumes, mounts, args, probes: { startupProbe, livenessProbe, readinessProbe }, lifecycle };
    };
    for (const modes of [['pod-certificate'], ['secret', 'pod-certificate']]) {
      const chart = render({ modes, exampleProvider: { enabled: true } });
      expect({ modes, ...volumesAndMounts(podOf(chart, 'file-provider')) }).toEqual({ modes, ...volumesAndMounts(podOf(examplePod, 'file-provider')) });
    }
    const secretMode = render({ exampleProvider: { enabled: true } });
    expect(volumesAndMounts(podOf(secretMode, 'file-provider'))).toEqual(volumesAndMounts(podOf(exampleSecret, 'file-provider')));
    // Kept serving for 10 s after eviction, while kube-proxy drops its endpoint (docs/connections-and-rotation.md).
    expect(podOf(exampleSecret, 'file-provider').containers[0]!.lifecycle).toEqual({ preStop: { sleep: { seconds: 10 } } });
  });

  it('rejects bad pod-certificate values, naming the value and what is wrong', () => {
    const refusals: [Values, string][] = [
      [{ modes: [] }, "at '/modes': minItems: got 0, want 1"],
      [{ modes: ['pods'] }, "at '/modes/0': value must be one of 'secret', 'pod-certificate'"],
      [{ modes: ['secret', 'secret'] }, "at '/modes': items at 0 and 1 are equal"],
      [{ modes: 'pod-certificate' }, "at '/modes': got string, want array"],
      [{ podCertificate: { maxValidity: '2185h' } }, "at '/podCertificate/maxValidity': '2185h' does not match pattern"],
      [{ podCertificate: { maxValidity: '90m' } }, "at '/podCertificate/maxValidity': '90m' does not match pattern"],
      [{ podCertificate: { serverSignerName: 'provider-server' } }, "at '/podCertificate/serverSignerName': 'provider-server' does not match pattern"],
      [{ podCertificate: { clientSignerName: 'Example.com/ESO' } }, "at '/podCertificate/clientSignerName': 'Example.com/ESO' does not match pattern"],
      [{ podCertificate: { maxExpirationSeconds: 86400 } }, "additional properties 'maxExpirationSeconds' not allowed"],
      [
        { modes: ['pod-certificate'], podCertificate: { clientSignerName: SERVER_SIGNER } },
        `podCertificate.serverSignerName and podCertificate.clientSignerName are both "${SERVER_SIGNER}"`,
      ],
    ];
    expectRefusals(render, refusals);
    // The bounds themselves are accepted.
    for (const maxValidity of ['1h', '2184h'])
      expect(flagsOf(controllerArgs(render({ modes: ['pod-certificate'], podCertificate: { maxValidity } })))).toMatchObject({
        'pod-certificate-max-validity': maxValidity,
      });
  });
});

/** The controller ServiceAccount's user as the apiserver authenticates it. */
const serviceAccountUser = (namespace: string, name: string) => ({
  user: `system:serviceaccount:${namespace}:${name}`,
  groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
});

describe('pod-certificate manifests on a real apiserver (v1.37.2)', () => {
  let plane: ControlPlane;
  let kubectl: Kubectl;
  const helm = new Helm();
  const CHART_NS = 'platform-pods';
  const CHART_SERVER = 'platform.example/provider-server';
  const CHART_CLIENT = 'platform.example/eso-client';
  const chartPodOnly = () =>
    helm.template(chartDir, 'platform', CHART_NS, {
      fullnameOverride: 'platform-eso-mtls',
      modes: ['pod-certificate'],
      podCertificate: { serverSignerName: CHART_SERVER, clientSignerName: CHART_CLIENT },
      exampleProvider: { enabled: true, namespace: 'provider-pods' },
    });

  beforeAll(async () => {
    plane = await startControlPlane();
    kubectl = new Kubectl(plane.adminKubeconfigPath);
    // ESO's namespace comes from its own build, applied once before any overlay (deploy/README.md).
    apply(kustomizeBuild('deploy/namespace'));
  }, 180_000);
  afterAll(async () => {
    kubectl?.remove();
    helm.remove();
    await plane?.stop();
  });

  /** Creates or updates with server-side apply and strict field validation: an unknown or misspelt field is an error, not dropped. */
  const apply = (ms: readonly Manifest[], ...extra: string[]) =>
    kubectl.run(['apply', '--server-side', '--field-manager=eso-mtls-test', '--validate=strict', ...extra, '-f', '-'], yamlStream(ms));
  const stored = <T>(kind: string, namespace: string, name: string): T => JSON.parse(kubectl.run(['get', kind, name, '-n', namespace, '-o', 'json'])) as T;

  /** Whether the apiserver's authorizers allow `who` the request `attributes` (SubjectAccessReview). */
  async function allowed(who: { user: string; groups: string[] }, attributes: V1ResourceAttributes): Promise<boolean> {
    const review = await plane.adminKubeConfig.makeApiClient(AuthorizationV1Api).createSubjectAccessReview({
      body: { spec: { ...who, resourceAttributes: attributes } },
    });
    return review.status!.allowed;
  }

  /**
   * What the controller's ServiceAccount is allowed, as "verb resource[/subresource] [name] in
   * namespace": the signer's rights on the two signer names, and none of the listed others.
   */
  async function rightsOf(who: { user: string; groups: string[] }, esoNamespace: string, server: string, client: string): Promise<string[]> {
    const asked: V1ResourceAttributes[] = [];
    for (const verb of ['sign', 'attest']) {
      for (const name of [server, client, 'eso-mtls.io/other', 'kubernetes.io/kube-apiserver-client', `${server.split('/')[0]}/*`]) {
        asked.push({ group: 'certificates.k8s.io', resource: 'signers', verb, name });
      }
    }
    for (const verb of ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete']) {
      asked.push({ group: 'certificates.k8s.io', resource: 'podcertificaterequests', verb, namespace: 'provider-file' });
      asked.push({ group: 'certificates.k8s.io', resource: 'clustertrustbundles', verb });
      asked.push({ group: '', resource: 'pods', verb, namespace: 'provider-file' });
    }
    for (const verb of ['update', 'patch'])
      asked.push({ group: 'certificates.k8s.io', resource: 'podcertificaterequests', subresource: 'status', verb, namespace: 'p' });
    // Every Secret verb, in a provider namespace (by name and not), in every namespace, and in ESO's.
    for (const verb of ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection']) {
      asked.push({ group: '', resource: 'secrets', verb, namespace: 'provider-file' });
      asked.push({ group: '', resource: 'secrets', verb, namespace: 'provider-file', name: 'external-secrets-provider-tls' });
      asked.push({ group: '', resource: 'secrets', verb });
      asked.push({ group: '', resource: 'secrets', verb, namespace: esoNamespace });
    }
    const granted: string[] = [];
    for (const a of asked) {
      if (await allowed(who, a)) {
        granted.push(
          `${a.verb} ${a.resource}${a.subresource ? `/${a.subresource}` : ''}${a.name ? ` ${a.name}` : ''}${a.namespace ? ` in ${a.namespace}` : ''}`,
        );
      }
    }
    return granted.sort();
  }

  it('creates the pod-certificates overlay and the example provider as rendered (strict field validation), projections included', () => {
    apply(podOnly);
    apply(examplePod);
    const pod = stored<V1Deployment>('deployment', 'provider-file', 'file-provider').spec!.template.spec!;
    expect(credentialVolume(pod, 'provider', '/etc/provider/certs').sources).toEqual(expectedSources(SERVER_SIGNER, CLIENT_SIGNER));
    const role = stored<V1ClusterRole>('clusterrole', '', CONTROLLER);
    expect(ruleSet(role.rules!)).toEqual(ruleSet(clusterRoleRules(podOnly)));
  });

  it("accepts the migration overlay and the chart's migration mode (server-side dry run, strict field validation)", () => {
    apply(migration, '--dry-run=server', '--force-conflicts');
    kubectl.run(['create', 'namespace', 'platform-migration']);
    apply(
      helm.template(chartDir, 'migration', 'platform-migration', { fullnameOverride: 'migration-eso-mtls', modes: ['secret', 'pod-certificate'] }),
      '--dry-run=server',
    );
  });

  it("lets the pod-certificates overlay's ServiceAccount sign and attest for the two signers only, with no Secret verb outside ESO's namespace", async () => {
    expect(await rightsOf(serviceAccountUser(ESO_NS, CONTROLLER), ESO_NS, SERVER_SIGNER, CLIENT_SIGNER)).toEqual(
      [
        `attest signers ${SERVER_SIGNER}`,
        `attest signers ${CLIENT_SIGNER}`,
        `sign signers ${SERVER_SIGNER}`,
        `sign signers ${CLIENT_SIGNER}`,
        'get podcertificaterequests in provider-file',
        'list podcertificaterequests in provider-file',
        'watch podcertificaterequests in provider-file',
        'update podcertificaterequests/status in p',
        'get clustertrustbundles',
        'list clustertrustbundles',
        'watch clustertrustbundles',
        'create clustertrustbundles',
        'update clustertrustbundles',
        'get pods in provider-file',
        'list pods in provider-file',
        'watch pods in provider-file',
        // The CA Secret, in ESO's namespace only.
        `create secrets in ${ESO_NS}`,
      ].sort(),
    );
  });

  it("creates the chart's pod-only mode (strict field validation) and lets its ServiceAccount sign for its values' signers only, with no Secret verb outside its namespace", async () => {
    kubectl.run(['create', 'namespace', CHART_NS]);
    apply(chartPodOnly());
    const pod = stored<V1Deployment>('deployment', 'provider-pods', 'file-provider').spec!.template.spec!;
    expect(credentialVolume(pod, 'provider', '/etc/provider/certs').sources).toEqual(expectedSources(CHART_SERVER, CHART_CLIENT));
    const rights = await rightsOf(serviceAccountUser(CHART_NS, 'platform-eso-mtls'), CHART_NS, CHART_SERVER, CHART_CLIENT);
    expect(rights.filter((r) => r.includes('signers'))).toEqual(
      [`attest signers ${CHART_SERVER}`, `attest signers ${CHART_CLIENT}`, `sign signers ${CHART_SERVER}`, `sign signers ${CHART_CLIENT}`].sort(),
    );
    expect(rights.filter((r) => r.includes('secrets'))).toEqual([`create secrets in ${CHART_NS}`]);
  });

  it("turns ESO core's Deployment into the pod-certificate layout with the patch, coming from the Secret mode or not", () => {
    const esoDeployment = (volumes: V1Volume[], mounts: { name: string; mountPath: string; readOnly: boolean }[]): Manifest => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'external-secrets', namespace: ESO_NS },
      spec: {
        selector: { matchLabels: { app: 'external-secrets' } },
        template: {
          metadata: { labels: { app: 'external-secrets' } },
          spec: {
            serviceAccountName: 'external-secrets',
            containers: [{ name: 'external-secrets', image: 'ghcr.io/external-secrets/external-secrets:v0.20.0', volumeMounts: mounts }],
            volumes,
          },
        },
      },
    });
    // docs/eso-integration.md's Secret-mode mount, then none at all (ESO as its chart installs it).
    const secretMode = esoDeployment(
      [{ name: 'provider-client-tls', secret: { secretName: 'eso-provider-client-tls', optional: true } }],
      [{ name: 'provider-client-tls', mountPath: '/etc/eso/client-certs', readOnly: true }],
    );
    for (const before of [secretMode, esoDeployment([], [])]) {
      kubectl.run(['delete', 'deployment', 'external-secrets', '-n', ESO_NS, '--ignore-not-found']);
      apply([before]);
      kubectl.run(['patch', 'deployment', 'external-secrets', '-n', ESO_NS, '--type=strategic', '--patch-file', esoPatchPath]);
      const pod = stored<V1Deployment>('deployment', ESO_NS, 'external-secrets').spec!.template.spec!;
      const volume = credentialVolume(pod, 'external-secrets', '/etc/eso/client-certs');
      expect(volume.sources).toEqual(expectedSources(CLIENT_SIGNER, SERVER_SIGNER));
      expect(pod.volumes!.map((v) => v.name)).toEqual([volume.name]);
      expect(pod.containers[0]!.volumeMounts).toEqual([{ name: volume.name, mountPath: '/etc/eso/client-certs', readOnly: true }]);
    }
  });
});
