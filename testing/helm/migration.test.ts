import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { AppsV1Api, CoreV1Api, type KubeConfig, type V1Deployment } from '@kubernetes/client-node';
import { DEFAULT_POLICY } from '@eso-mtls/core';
import { type ControlPlane, startControlPlane } from '../envtest/src/index.js';
import { codeBlocks } from '../docs/markdown-blocks.js';
import { type Manifest, find, kustomizeBuild } from '@eso-mtls/test-kit/manifests';
import { repoRoot } from '@eso-mtls/test-kit/repo';
import { Helm, HelmError, type Values, chartDir, ensured } from '@eso-mtls/test-kit/helm';
import {
  type CertificateState,
  type Installation,
  convergedState,
  providerNamespace,
  resourceVersions,
  runInstalledController,
  serials,
} from './support/release.js';
import { ISSUER_OVERLAY_VALUES, SECRET_OVERLAY_VALUES } from './support/ca-source.js';

// Issue 23 item 4: moving an installation from `kubectl apply -k deploy` to the chart and back.
// The kustomize install is made by deploy/README.md's commands, the moves by the chart README's
// (both run here as written, in bash, with real kubectl and helm against a real kube-apiserver),
// and after each the controller runs from the installed Deployment's own args. Scale: one
// apiserver, three controller runs, five provider namespaces of one or two Services.
// The CA, the client certificate and every provider certificate must stay the very same (same
// serial, Secrets not even written), and no controller may report another's Secret as a Conflict.

const NS = DEFAULT_POLICY.esoNamespace;
const RELEASE = 'eso-mtls';
const NAME = 'eso-mtls-controller';
const SA_USER = `system:serviceaccount:${NS}:${NAME}`;

/** The one `sh` block of a Markdown file whose info string carries `flag` (```` ```sh migrate-to-helm ````). */
function documentedBlock(file: string, flag: string): string {
  const found = codeBlocks(readFileSync(join(repoRoot, file), 'utf8'), file).filter((b) => b.language === 'sh' && b.flags.includes(flag));
  if (found.length !== 1) throw new Error(`${file} has ${found.length} \`sh ${flag}\` blocks; the test runs exactly one`);
  return found[0]!.code;
}

const key = (m: Manifest): string => `${m.kind} ${m.metadata?.namespace ?? ''}/${m.metadata?.name}`;

/** Each kustomize build and the chart values that render it (the chart README's list, in "Moving from kustomize to Helm"). */
const BUILDS: Readonly<Record<string, Values>> = {
  deploy: {},
  'deploy/overlays/prometheus-rule': { metrics: { prometheusRule: { enabled: true } } },
  'deploy/overlays/pod-certificates': { modes: ['pod-certificate'] },
  'deploy/overlays/pod-certificates-migration': { modes: ['secret', 'pod-certificate'] },
  'deploy/overlays/provider-label-policy': { providerLabelPolicy: { enabled: true, controllerCheck: true } },
  'deploy/overlays/network-policies': { networkPolicies: { controller: { enabled: true, apiServerCIDRs: ['192.0.2.1/32'] } } },
  'deploy/overlays/prune-orphaned-secrets': { pruneOrphanedSecrets: { enabled: true } },
  'deploy/overlays/ca-issuer': ISSUER_OVERLAY_VALUES,
  'deploy/overlays/ca-from-secret': SECRET_OVERLAY_VALUES,
};

describe('each kustomize build and its chart values', () => {
  it('render the same objects under the same names, so that the documented marking hands every one of them to the release', () => {
    const helm = new Helm();
    try {
      for (const [dir, values] of Object.entries(BUILDS)) {
        const fromChart = helm.template(chartDir, RELEASE, NS, values).map(key).sort();
        expect({ dir, objects: fromChart }).toEqual({ dir, objects: kustomizeBuild(dir).map(key).sort() });
      }
    } finally {
      helm.remove();
    }
  });

  it('cover every overlay in deploy/overlays', () => {
    const overlays = readdirSync(join(repoRoot, 'deploy/overlays')).map((d) => `deploy/overlays/${d}`);
    expect(
      Object.keys(BUILDS)
        .filter((d) => d !== 'deploy')
        .sort(),
    ).toEqual(overlays.sort());
  });
});

describe('moving between the kustomize install and the Helm chart by the documented commands keeps every certificate', () => {
  let plane: ControlPlane;
  let admin: KubeConfig;
  let helm: Helm;
  const providers = new Map<string, readonly string[]>();
  const installation = (): Installation => ({
    namespace: NS,
    caSecretName: 'eso-provider-ca-internal',
    clientSecretName: 'eso-provider-client-tls',
    clusterDomain: 'cluster.local',
    providers,
  });
  let first: CertificateState;

  beforeAll(async () => {
    plane = await startControlPlane({ audit: true });
    admin = plane.adminKubeConfig;
    helm = new Helm(plane.adminKubeconfigPath);
  }, 120_000);
  afterAll(async () => {
    helm?.remove();
    await plane?.stop();
  });

  /** Runs a documented block from the clone's root as a reader's shell would, with kubectl and helm on PATH and the admin's kubeconfig. */
  function sh(script: string): string {
    const path = [dirname(ensured('ensure-helm.sh')), dirname(ensured('ensure-kubectl.sh')), process.env.PATH].join(':');
    try {
      return execFileSync('bash', ['-c', `set -euo pipefail\n${script}`], {
        cwd: repoRoot,
        env: { ...helm.env(), PATH: path },
        encoding: 'utf8',
        stdio: 'pipe',
      });
    } catch (e) {
      throw new Error(`the documented block failed:\n${script}\n${String((e as { stderr?: string }).stderr ?? e)}`, { cause: e });
    }
  }

  const auditMark = (): number => plane.auditEvents().length;

  /** Writes by anyone but the apiserver itself, after audit event `mark`, to the Secrets of `state`. */
  function writesTo(state: CertificateState, mark: number): string[] {
    const secrets = new Set(Object.keys(serials(state)));
    return plane
      .auditEvents()
      .slice(mark)
      .filter((e) => ['create', 'update', 'patch', 'delete'].includes(e.verb) && e.objectRef?.resource === 'secrets')
      .filter((e) => secrets.has(`${e.objectRef!.namespace}/${e.objectRef!.name}`))
      .map((e) => `${e.user.username} ${e.verb} ${e.objectRef!.namespace}/${e.objectRef!.name}`);
  }

  /** The certificates of `first` are still there, in Secrets nobody wrote after audit event `mark`. */
  function expectUnchanged(later: CertificateState, mark: number): void {
    const before = { serials: serials(first), resourceVersions: resourceVersions(first) };
    const now = { serials: serials(later), resourceVersions: resourceVersions(later) };
    for (const k of Object.keys(now.serials)) if (!(k in before.serials)) delete now.serials[k];
    for (const k of Object.keys(now.resourceVersions)) if (!(k in before.resourceVersions)) delete now.resourceVersions[k];
    expect(now).toEqual(before);
    expect(writesTo(first, mark)).toEqual([]);
  }

  /** Every Conflict Event so far: a controller that found a Secret of another installation. */
  async function conflicts(): Promise<string[]> {
    const events = await admin.makeApiClient(CoreV1Api).listEventForAllNamespaces();
    return events.items.filter((e) => e.reason === 'Conflict').map((e) => `${e.metadata.namespace}/${e.involvedObject.name}: ${e.message}`);
  }

  /** The controller of the installed Deployment, until a new provider namespace converges too; the audit mark of its start. */
  async function runController(name: string, namespace: string): Promise<{ state: CertificateState; mark: number }> {
    await providerNamespace(admin, namespace, ['provider']);
    providers.set(namespace, ['provider']);
    const mark = auditMark();
    const { state } = await runInstalledController(plane, { name, namespace: NS, deployment: NAME, serviceAccount: NAME, installation: installation() });
    return { state, mark };
  }

  const installedDeployment = (): Promise<V1Deployment> => admin.makeApiClient(AppsV1Api).readNamespacedDeployment({ namespace: NS, name: NAME });
  const argsOf = (d: V1Deployment): string[] | undefined => d.spec!.template.spec!.containers.find((c) => c.name === 'controller')!.args;
  const releases = (): { name: string; status: string }[] =>
    JSON.parse(helm.run(['list', '--namespace', NS, '--output', 'json'])) as { name: string; status: string }[];

  it("installs with kustomize by deploy/README.md's commands; the controller of that Deployment issues the CA and every certificate", async () => {
    sh(documentedBlock('deploy/README.md', 'kustomize-install'));
    expect(argsOf(await installedDeployment())).toEqual(argsOf(find<V1Deployment>(kustomizeBuild('deploy'), 'Deployment', NAME)));
    await providerNamespace(admin, 'team-a', ['vault']);
    await providerNamespace(admin, 'team-b', ['aws', 'gcp']);
    providers.set('team-a', ['vault']).set('team-b', ['aws', 'gcp']);
    first = (await runController('controller-kustomize', 'team-c')).state;
    expect(first.providers.size).toBe(3);
  }, 150_000);

  it('refuses a bare helm install over it (the reported failure), and leaves no release behind', () => {
    let error: unknown;
    try {
      helm.install(chartDir, RELEASE, NS);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(HelmError);
    expect((error as HelmError).stderr).toMatch(/exists and cannot be imported into the current release/);
    expect(releases()).toEqual([]);
  });

  it("moves to the chart by the chart README's commands: Helm adopts every object, nothing the controller wrote is touched, and the chart's controller re-issues nothing", async () => {
    const mark = auditMark();
    sh(documentedBlock('deploy/helm/eso-mtls/README.md', 'migrate-to-helm'));
    expect(releases().map((r) => [r.name, r.status])).toEqual([[RELEASE, 'deployed']]);
    // The same objects, now the release's; the Deployment runs the chart's args.
    expect(helm.manifest(RELEASE, NS).map(key).sort()).toEqual(kustomizeBuild('deploy').map(key).sort());
    const deployment = await installedDeployment();
    expect(deployment.metadata!.labels!['app.kubernetes.io/managed-by']).toBe('Helm');
    expect(argsOf(deployment)).toEqual(argsOf(find<V1Deployment>(helm.manifest(RELEASE, NS), 'Deployment', NAME)));
    const afterHelm = await convergedState(admin, installation());
    expect(afterHelm).toBeDefined();
    expectUnchanged(afterHelm!, mark);

    const { state, mark: started } = await runController('controller-chart', 'team-d');
    expectUnchanged(state, started);
    expect(await conflicts()).toEqual([]);
  }, 150_000);

  it("moves back by the chart README's commands: the release is gone, the kustomize objects are back, and their controller re-issues nothing", async () => {
    const mark = auditMark();
    sh(documentedBlock('deploy/helm/eso-mtls/README.md', 'migrate-to-kustomize'));
    expect(releases()).toEqual([]);
    expect(argsOf(await installedDeployment())).toEqual(argsOf(find<V1Deployment>(kustomizeBuild('deploy'), 'Deployment', NAME)));
    const afterMove = await convergedState(admin, installation());
    expect(afterMove).toBeDefined();
    expectUnchanged(afterMove!, mark);

    const { state, mark: started } = await runController('controller-kustomize-again', 'team-e');
    expectUnchanged(state, started);
    expect(await conflicts()).toEqual([]);
    expect(
      plane
        .auditEvents()
        .filter((e) => e.user.username === SA_USER && e.responseStatus?.code === 403)
        .map((e) => `${e.verb} ${e.requestURI}`),
    ).toEqual([]);
  }, 150_000);
});
