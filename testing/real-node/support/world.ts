import { type KeyObject, X509Certificate, createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { PROVIDER_LABEL, ROTATE_ANNOTATION } from '@eso-mtls/core';
import { CA_SECRET, CLIENT_SECRET, ESO_NS, PROVIDER_SECRET, SA_USER } from '@eso-mtls/test-kit/cluster';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { applyAll, kustomizeBuild } from '@eso-mtls/test-kit/manifests';
import { repoRoot } from '@eso-mtls/test-kit/repo';
import { splitImageName } from '@eso-mtls/devtools/cluster';
import { Helm, type Values, chartDir } from '@eso-mtls/test-kit/helm';
import { parseExposition } from '@eso-mtls/test-kit/exposition';
import { untilAnswer } from '@eso-mtls/test-kit/answers';
import type { TestCluster } from './cluster.js';
import {
  type CallerProgress,
  type ClientMode,
  ESO_SERVICE_ACCOUNT,
  type FailedCall,
  type ServerCertificateSeen,
  clientPod,
  failedCalls,
  lastProgress,
  providerManifests,
  serverCertificates,
} from './workloads.js';

/** Secret-mode providers (the shipped example), and one in pod-certificate mode (its pod-certificate overlay). */
export const SECRET_PROVIDERS = ['provider-a', 'provider-b', 'provider-c'] as const;
export const POD_PROVIDER = 'provider-pod';
export const PROVIDERS: readonly string[] = [...SECRET_PROVIDERS, POD_PROVIDER];
export const RELEASE = 'eso-mtls';
const LEASE = 'eso-mtls-controller';

/**
 * ESO's client pods and whom each calls: with the client Secret, every provider; with a pod
 * certificate, one provider of each mode.
 */
export const CLIENTS: readonly { readonly pod: string; readonly mode: ClientMode; readonly providers: readonly string[] }[] = [
  { pod: 'eso-client', mode: 'secret', providers: PROVIDERS },
  { pod: 'eso-client-pod', mode: 'pod-certificate', providers: ['provider-a', POD_PROVIDER] },
];
/** Every caller: one client pod's container calling one provider. */
export const CALLERS = CLIENTS.flatMap((c) => c.providers.map((provider) => ({ pod: c.pod, provider })));

/** The parts of certificates.k8s.io/v1 objects read here (the client library has no types for them yet). */
export type TrustBundle = KubernetesObject & { spec: { trustBundle: string } };
export type PodCertificateRequest = KubernetesObject & {
  spec?: { podName?: string };
  status?: { certificateChain?: string; conditions?: { type: string; reason: string }[] };
};

/** The Secrets holding Secret-mode leaves: each provider's (a server certificate) and ESO's client's. */
export const SECRET_LEAVES: readonly { readonly namespace: string; readonly name: string; readonly purpose: 'sslserver' | 'sslclient' }[] = [
  ...SECRET_PROVIDERS.map((namespace) => ({ namespace, name: PROVIDER_SECRET, purpose: 'sslserver' as const })),
  { namespace: ESO_NS, name: CLIENT_SECRET, purpose: 'sslclient' },
];

/** A Secret-mode leaf's Secret, read. */
export interface SecretLeaf {
  readonly namespace: string;
  readonly name: string;
  readonly purpose: 'sslserver' | 'sslclient';
  readonly tlsCrt: string;
  readonly caCrt: string;
}

/**
 * What both real-node suites set up and read: the chart installed from the local image, the four
 * providers, ESO's client pod, and the views of them the assertions take (all from the apiserver:
 * objects, pod logs, the pod proxy).
 */
export class World {
  readonly admin: KubeConfig;
  readonly core: CoreV1Api;
  readonly apps: AppsV1Api;
  readonly objects: KubernetesObjectApi;
  readonly helm: Helm;
  /** The admin's kubeconfig file (helm's, and cert-manager's beside the cluster). */
  readonly kubeconfigPath: string;
  /** The values of the last install or upgrade, which the next upgrade starts from. */
  private values: Values = {};
  /** Where {@link saveLogs} writes this run's logs, once it has. */
  private logDir: string | undefined;

  constructor(readonly tc: TestCluster) {
    this.admin = tc.cluster.controlPlane.kubeconfigFor('admin');
    this.core = this.admin.makeApiClient(CoreV1Api);
    this.apps = this.admin.makeApiClient(AppsV1Api);
    this.objects = KubernetesObjectApi.makeApiClient(this.admin);
    this.kubeconfigPath = join(tc.cluster.controlPlane.dir, 'admin-kubeconfig.json');
    writeFileSync(this.kubeconfigPath, this.admin.exportConfig(), { mode: 0o600 });
    this.helm = new Helm(this.kubeconfigPath);
  }

  /** The chart's values for the locally built controller image (never pulled), plus `values`. */
  chartValues(values: Values): Values {
    const { repository, tag } = splitImageName(this.tc.images.byRole.controller.name);
    return { image: { repository, tag, pullPolicy: 'Never' }, replicaCount: 2, ...values };
  }

  /** `helm install` of the chart; resolves once both replicas are Ready and ESO's client Secret exists. */
  async install(values: Values): Promise<void> {
    this.values = values;
    this.helm.install(chartDir, RELEASE, ESO_NS, this.chartValues(values));
    await this.controllerReady();
  }

  /** `helm upgrade` with the last values and `values` over them (top-level keys replaced); resolves once both new replicas are Ready. */
  async upgrade(values: Values): Promise<void> {
    this.values = { ...this.values, ...values };
    this.helm.upgrade(chartDir, RELEASE, ESO_NS, this.chartValues(this.values));
    await this.controllerReady();
  }

  async controllerReady(): Promise<void> {
    await this.deploymentReady(ESO_NS, 'eso-mtls-controller', 2, 240_000);
    await eventually(() => this.secretExists(ESO_NS, 'eso-provider-client-tls'), 60_000, "ESO's client Secret");
  }

  async deploymentReady(namespace: string, name: string, replicas: number, timeoutMs: number): Promise<void> {
    await eventually(
      async () => {
        const d = await this.apps.readNamespacedDeployment({ namespace, name });
        // The controller manager has seen the latest spec (after an upgrade or a restart, the old status says nothing).
        const observed = (d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0);
        return observed && d.status?.readyReplicas === replicas && d.status.updatedReplicas === replicas && (d.status.replicas ?? 0) === replicas;
      },
      timeoutMs,
      `${namespace}/${name} to have ${replicas} Ready replica(s)`,
    );
  }

  /** The four providers from the shipped examples and the local file-provider image; resolves once each is Ready. */
  async deployProviders(): Promise<void> {
    const image = this.tc.images.byRole['file-provider'].name;
    await applyAll(this.admin, [
      ...providerManifests(kustomizeBuild(join(repoRoot, 'deploy/examples/file-provider')), SECRET_PROVIDERS, image),
      ...providerManifests(kustomizeBuild(join(repoRoot, 'deploy/examples/file-provider-pod-certificates')), [POD_PROVIDER], image),
    ]);
    // Bounded as the Deployments are: on a loaded machine the controller pod's 20m CPU request is all it may get.
    for (const ns of SECRET_PROVIDERS) await eventually(() => this.secretExists(ns, PROVIDER_SECRET), 180_000, `${ns}'s provider Secret`);
    for (const ns of PROVIDERS) await this.deploymentReady(ns, 'file-provider', 1, 180_000);
  }

  /**
   * Deletes the only provider pod in `namespace` and resolves once it is gone and its replacement is
   * Ready, with when each happened (the span in which that provider's callers may fail).
   */
  async replaceProviderPod(namespace: string): Promise<{ readonly deletedAt: number; readonly readyAt: number }> {
    const name = await this.onlyPod(namespace);
    const deletedAt = Date.now();
    await this.core.deleteNamespacedPod({ namespace, name });
    await eventually(
      async () => (await this.core.listNamespacedPod({ namespace })).items.every((p) => p.metadata!.name !== name),
      180_000,
      `${namespace}/${name} gone`,
    );
    await this.deploymentReady(namespace, 'file-provider', 1, 180_000);
    return { deletedAt, readyAt: Date.now() };
  }

  /**
   * Restarts a provider's Deployment as `kubectl rollout restart` does (the new pod Ready before the
   * old one stops) and resolves once only the new pod is left, with when the restart began and when
   * it ended (the span in which that provider's callers may fail).
   */
  async restartProvider(namespace: string): Promise<{ readonly deletedAt: number; readonly readyAt: number }> {
    const body = { spec: { template: { metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': new Date().toISOString() } } } } };
    const deletedAt = Date.now();
    await this.apps.patchNamespacedDeployment({ namespace, name: 'file-provider', body }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await this.deploymentReady(namespace, 'file-provider', 1, 180_000);
    await eventually(async () => (await this.core.listNamespacedPod({ namespace })).items.length === 1, 180_000, `${namespace}'s old provider pod gone`);
    return { deletedAt, readyAt: Date.now() };
  }

  /** ESO's client pods (ESO's ServiceAccount first, for the pod-certificate one); resolves once every caller has made `calls` calls. */
  async startCallers(calls: number): Promise<void> {
    await this.core.createNamespacedServiceAccount({ namespace: ESO_NS, body: { metadata: { name: ESO_SERVICE_ACCOUNT } } });
    const image = this.tc.images.byRole['eso-client'].name;
    for (const c of CLIENTS) await this.core.createNamespacedPod({ namespace: ESO_NS, body: clientPod(c.pod, image, c.providers, c.mode) });
    await eventually(async () => (await this.callers()).every((c) => c.calls >= calls), 180_000, `every caller to make ${calls} calls`);
  }

  async callers(): Promise<CallerProgress[]> {
    return Promise.all(CALLERS.map(async ({ pod, provider }) => ({ ...lastProgress(await this.callerLog(pod, provider)), provider: `${pod}/${provider}` })));
  }

  async failedCalls(): Promise<FailedCall[]> {
    return (await Promise.all(CALLERS.map(async ({ pod, provider }) => failedCalls(`${pod}/${provider}`, await this.callerLog(pod, provider))))).flat();
  }

  /** Every caller's first call on each provider certificate it met. */
  async serverCertificates(): Promise<ServerCertificateSeen[]> {
    return (await Promise.all(CALLERS.map(async ({ pod, provider }) => serverCertificates(`${pod}/${provider}`, await this.callerLog(pod, provider))))).flat();
  }

  /** Resolves once every caller has made `more` calls beyond `before`. */
  async callersProgressed(before: readonly CallerProgress[], more: number, timeoutMs: number): Promise<void> {
    const progressed = (c: CallerProgress): boolean => c.calls >= (before.find((b) => b.provider === c.provider)?.calls ?? 0) + more;
    await eventually(async () => (await this.callers()).every(progressed), timeoutMs, `every caller to make ${more} more calls`);
  }

  /** A caller's log; empty while its container has not started (the apiserver answers 400 then). */
  private async callerLog(pod: string, provider: string): Promise<string> {
    try {
      return await this.core.readNamespacedPodLog({ namespace: ESO_NS, name: pod, container: provider });
    } catch (e) {
      if ((e as { code?: number }).code === 400 && /waiting to start/.test(String((e as { body?: unknown }).body))) return '';
      throw e;
    }
  }

  /**
   * Writes every container log of the controller's and the providers' pods (one file per
   * container, the previous instance's too) to a folder of this run,
   * `$TMPDIR/eso-mtls-<suite>-logs/<start time>`, so a failed run can be read after the node is
   * gone, apart from every other run's; says where on stderr. Called again, writes the same folder.
   */
  async saveLogs(suite: string): Promise<void> {
    const dir = (this.logDir ??= join(tmpdir(), `eso-mtls-${suite}-logs`, new Date().toISOString().replace(/[:.]/g, '-')));
    mkdirSync(dir, { recursive: true });
    let saved = 0;
    for (const namespace of [ESO_NS, ...PROVIDERS]) {
      for (const pod of (await this.core.listNamespacedPod({ namespace }).catch(() => ({ items: [] }))).items) {
        for (const c of pod.spec?.containers ?? []) {
          for (const previous of [false, true]) {
            const name = pod.metadata!.name!;
            const log = await this.core.readNamespacedPodLog({ namespace, name, container: c.name, previous }).catch(() => undefined);
            if (!log) continue;
            writeFileSync(join(dir, `${namespace}_${name}_${c.name}${previous ? '_previous' : ''}.log`), log);
            saved++;
          }
        }
      }
    }
    if (saved > 0) process.stderr.write(`${suite}: ${saved} container logs of the pods are in ${dir}\n`);
  }

  async secretExists(namespace: string, name: string): Promise<boolean> {
    return this.core.readNamespacedSecret({ namespace, name }).then(
      () => true,
      () => false,
    );
  }

  async podCertificateRequests(namespace: string): Promise<PodCertificateRequest[]> {
    return (await this.objects.list<PodCertificateRequest>('certificates.k8s.io/v1', 'PodCertificateRequest', namespace)).items;
  }

  async trustBundles(): Promise<TrustBundle[]> {
    return (
      await this.objects.list<TrustBundle>(
        'certificates.k8s.io/v1',
        'ClusterTrustBundle',
        undefined,
        undefined,
        undefined,
        undefined,
        undefined,
        'eso-mtls.io/trust-bundle=true',
      )
    ).items;
  }

  /** The chain the newest Issued PodCertificateRequest in `namespace` carries (leaf first), or undefined. */
  async newestPodCertificateChain(namespace: string): Promise<string | undefined> {
    const issued = (await this.podCertificateRequests(namespace)).filter((r) => (r.status?.certificateChain ?? '') !== '');
    const at = (r: PodCertificateRequest): number => Date.parse(String(r.metadata?.creationTimestamp ?? 0));
    return issued.sort((a, b) => at(b) - at(a))[0]?.status?.certificateChain;
  }

  async leaseHolder(): Promise<string | undefined> {
    return (await this.admin.makeApiClient(CoordinationV1Api).readNamespacedLease({ namespace: ESO_NS, name: LEASE })).spec?.holderIdentity;
  }

  /** The leader pod's /metrics, through the apiserver's pod proxy. */
  async scrapeLeader(): Promise<string> {
    return this.scrapePod(ESO_NS, `${await this.leaseHolder()}:8080`);
  }

  /** A pod's /metrics (`pod` is name:port), through the apiserver's pod proxy. */
  async scrapePod(namespace: string, pod: string): Promise<string> {
    return this.core.connectGetNamespacedPodProxyWithPath({ namespace, name: pod, path: 'metrics' });
  }

  /** The name of the only pod in `namespace` (a provider's). */
  async onlyPod(namespace: string): Promise<string> {
    const pods = (await this.core.listNamespacedPod({ namespace })).items.filter((p) => p.metadata?.deletionTimestamp === undefined);
    if (pods.length !== 1) throw new Error(`expected one pod in ${namespace}, found ${pods.map((p) => p.metadata!.name).join(', ') || 'none'}`);
    return pods[0]!.metadata!.name!;
  }

  /**
   * Makes the apiserver refuse every write of the controller's ServiceAccount to one Secret, as a
   * cluster admin's ValidatingAdmissionPolicy would. Resolves once the policy is in force (a
   * server-side dry run as that ServiceAccount is refused), with the function that lifts it.
   */
  async refuseControllerWrites(namespace: string, secret: string): Promise<() => Promise<void>> {
    const name = `real-node-refuse-${namespace}-${secret}`;
    const policy = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE', 'DELETE'], resources: ['secrets'] }] },
        matchConditions: [
          { name: 'the-controller', expression: `request.userInfo.username == '${SA_USER}'` },
          { name: 'the-secret', expression: `request.namespace == '${namespace}' && request.name == '${secret}'` },
        ],
        validations: [
          { expression: 'false', reason: 'Forbidden', message: `the real-node suite refuses the controller's writes to Secret ${namespace}/${secret}` },
        ],
      },
    };
    const binding = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name },
      spec: { policyName: name, validationActions: ['Deny'] },
    };
    await applyAll(this.admin, [policy, binding]);
    const asController = this.asUser(SA_USER).makeApiClient(CoreV1Api);
    const body = { metadata: { annotations: { 'real-node.eso-mtls.io/probe': String(Date.now()) } } };
    const options = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    const refused = await untilAnswer(
      `the policy refusing the controller's writes to ${namespace}/${secret}`,
      () => asController.patchNamespacedSecret({ namespace, name: secret, body, dryRun: 'All' }, options),
      403,
    );
    // Refused by this policy, not by RBAC.
    if (!refused.message.includes(`ValidatingAdmissionPolicy '${name}'`)) throw new Error(`the dry run was refused by something else: ${refused.message}`);
    return async () => {
      await this.objects.delete(binding);
      await this.objects.delete(policy);
    };
  }

  /** A client of the apiserver as `user` (the admin impersonating it). */
  private asUser(user: string): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: this.admin.clusters,
      contexts: this.admin.contexts,
      currentContext: this.admin.currentContext,
      users: this.admin.users.map((u) => ({ ...u, impersonateUser: user })),
    });
    return kc;
  }

  /** A namespace with `labels` and one labelled Service that selects nothing (a provider not yet deployed). */
  async labelledNamespace(name: string, labels: Readonly<Record<string, string>>): Promise<void> {
    await this.core.createNamespace({ body: { metadata: { name, labels: { ...labels } } } });
    await this.core.createNamespacedService({
      namespace: name,
      body: {
        metadata: { name: 'file-provider', labels: { [PROVIDER_LABEL]: 'true' } },
        spec: { ports: [{ port: 8443 }], selector: { app: 'none' } },
      },
    });
  }

  /** Replaces the private key in a provider Secret with one its certificate does not hold, as a mistaken edit would. */
  async replaceProviderKey(namespace: string): Promise<void> {
    const secret = await this.core.readNamespacedSecret({ namespace, name: PROVIDER_SECRET });
    const key = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' });
    secret.data = { ...secret.data, 'tls.key': Buffer.from(key).toString('base64') };
    await this.core.replaceNamespacedSecret({ namespace, name: PROVIDER_SECRET, body: secret });
  }

  /** True when a provider Secret's key is the one its certificate holds. */
  async providerPairMatches(namespace: string): Promise<boolean> {
    const data = (await this.core.readNamespacedSecret({ namespace, name: PROVIDER_SECRET })).data!;
    const spki = (k: KeyObject): Buffer => k.export({ type: 'spki', format: 'der' });
    const certificate = new X509Certificate(Buffer.from(data['tls.crt']!, 'base64'));
    return spki(certificate.publicKey).equals(spki(createPublicKey(createPrivateKey(Buffer.from(data['tls.key']!, 'base64')))));
  }

  /** The CA certificates the CA Secret holds now. */
  async caCertificates(): Promise<X509Certificate[]> {
    return pemCertificates(
      Buffer.from((await this.core.readNamespacedSecret({ namespace: ESO_NS, name: CA_SECRET })).data!['ca.crt']!, 'base64').toString('utf8'),
    );
  }

  /** Asks for a rotation with the `eso-mtls.io/rotate` annotation (a new value each time): of the CA, or of a provider Service's leaf. */
  async requestRotation(target: { readonly secret: string } | { readonly service: string }, namespace: string): Promise<void> {
    const body = { metadata: { annotations: { [ROTATE_ANNOTATION]: `real-node-${Date.now()}` } } };
    const options = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    if ('secret' in target) await this.core.patchNamespacedSecret({ namespace, name: target.secret, body }, options);
    else await this.core.patchNamespacedService({ namespace, name: target.service, body }, options);
  }

  /** True once no Secret-mode leaf (the providers' and ESO's client's) is signed by any of `oldCas`. */
  async secretLeavesMovedFrom(oldCas: readonly X509Certificate[]): Promise<boolean> {
    return (await Promise.all(SECRET_LEAVES.map(async ({ namespace, name }) => !(await this.leafSignedBy(namespace, name, oldCas))))).every(Boolean);
  }

  /** Every Secret-mode leaf's Secret as it is now: its tls.crt (the leaf, then the intermediates) and ca.crt (the anchors). */
  async secretLeaves(): Promise<SecretLeaf[]> {
    return Promise.all(
      SECRET_LEAVES.map(async (leaf) => {
        const data = (await this.core.readNamespacedSecret(leaf)).data!;
        const text = (key: string): string => Buffer.from(data[key] ?? '', 'base64').toString('utf8');
        return { ...leaf, tlsCrt: text('tls.crt'), caCrt: text('ca.crt') };
      }),
    );
  }

  /** The leaf in a Secret, and whether one of `cas` signed it. */
  async leafSignedBy(namespace: string, name: string, cas: readonly X509Certificate[]): Promise<boolean> {
    const leaf = new X509Certificate(Buffer.from((await this.core.readNamespacedSecret({ namespace, name })).data!['tls.crt']!, 'base64'));
    return cas.some((ca) => leaf.checkIssued(ca) && leaf.verify(ca.publicKey));
  }
}

/** The certificates of a PEM bundle. */
export function pemCertificates(pem: string): X509Certificate[] {
  return (pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map((b) => new X509Certificate(b));
}

/** The value of the series of `name` with exactly `labels` in a Prometheus scrape, or undefined when it has none. */
export function sampleValue(scrape: string, name: string, labels: Readonly<Record<string, string>> = {}): number | undefined {
  const same = (l: Readonly<Record<string, string>>): boolean =>
    Object.keys(l).length === Object.keys(labels).length && Object.entries(labels).every(([k, v]) => l[k] === v);
  return parseExposition(scrape).find((s) => s.name === name && same(s.labels))?.value;
}
