import { expect } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppsV1Api, CoreV1Api, type KubeConfig, type V1Deployment, type V1Secret } from '@kubernetes/client-node';
import type { ControlPlane } from '../../../testing/envtest/src/index.js';
import { type ConfigResult, type ControllerConfig, parseControllerConfig } from '../../../packages/controller/src/index.js';
import { ControllerProcess } from '@eso-mtls/test-kit/controller-process';
import { serviceAccountKubeConfig } from '@eso-mtls/test-kit/manifests';

/** Only loopback, free ports; and short Lease timings, so a test waits seconds for leadership, not 15 s. */
const OVERRIDDEN = /^--(metrics-bind-address|health-probe-bind-address|leader-election-(lease-duration|renew-deadline|retry-period))=/;
const LOCAL_AND_FAST = [
  '--metrics-bind-address=127.0.0.1:0',
  '--health-probe-bind-address=127.0.0.1:0',
  '--leader-election-lease-duration=4s',
  '--leader-election-renew-deadline=3s',
  '--leader-election-retry-period=500ms',
];

/**
 * The controller container's arguments (after the `controller` subcommand) and environment as the
 * kubelet would give them to a pod named `podName`: fieldRef values resolved, other sources refused.
 */
export function containerInput(deployment: V1Deployment, podName: string): { args: string[]; env: Record<string, string> } {
  const container = deployment.spec!.template.spec!.containers.find((c) => c.name === 'controller')!;
  const [subcommand, ...args] = container.args ?? [];
  if (subcommand !== 'controller') throw new Error(`Deployment ${deployment.metadata!.name} runs ${String(subcommand)}, not the controller subcommand`);
  const fields: Record<string, string> = { 'metadata.name': podName, 'metadata.namespace': deployment.metadata!.namespace! };
  const env: Record<string, string> = {};
  for (const e of container.env ?? []) {
    const value = e.value ?? fields[e.valueFrom?.fieldRef?.fieldPath ?? ''];
    if (value === undefined) throw new Error(`env ${e.name} has a source this test does not model: ${JSON.stringify(e.valueFrom)}`);
    env[e.name] = value;
  }
  return { args, env };
}

/** What the CLI makes of a Deployment's controller args and env, as a pod named pod-name. */
export function controllerConfigOf(deployment: V1Deployment): ConfigResult {
  const { args, env } = containerInput(deployment, 'pod-name');
  return parseControllerConfig(args, env);
}

/** The configuration of a Deployment whose args must parse; throws the parser's message otherwise. */
export function parsedControllerConfig(deployment: V1Deployment): ControllerConfig {
  const parsed = controllerConfigOf(deployment);
  if (parsed.kind !== 'config')
    throw new Error(`the args of Deployment ${deployment.metadata?.name} do not parse: ${parsed.kind === 'error' ? parsed.error.message : parsed.kind}`);
  return parsed.config;
}

/**
 * The controller's arguments and environment as the installed Deployment gives them (read back
 * from the apiserver), run out of the cluster: the kubeconfig of its ServiceAccount instead of the
 * pod's token, and loopback ports and short Lease timings instead of the pod's.
 */
export async function deployedController(
  admin: KubeConfig,
  namespace: string,
  name: string,
  kubeconfigPath: string,
  podName: string,
): Promise<{ args: string[]; env: Record<string, string> }> {
  const deployment = await admin.makeApiClient(AppsV1Api).readNamespacedDeployment({ namespace, name });
  const { args, env } = containerInput(deployment, podName);
  return { args: [...args.filter((a) => !OVERRIDDEN.test(a)), ...LOCAL_AND_FAST, `--kubeconfig=${kubeconfigPath}`], env };
}

/** Writes a kubeconfig holding a fresh TokenRequest token of the ServiceAccount; returns its path. */
export async function serviceAccountKubeconfigFile(plane: ControlPlane, namespace: string, name: string): Promise<string> {
  const { kc } = await serviceAccountKubeConfig(plane.adminKubeConfig, plane.url, plane.caPem, namespace, name);
  const path = join(plane.dir, `kubeconfig-${namespace}-${name}-${Date.now()}.yaml`);
  writeFileSync(path, kc.exportConfig(), { mode: 0o600 });
  return path;
}

/** Creates `namespace` with a Service labelled for the controller per name in `services`. */
export async function providerNamespace(admin: KubeConfig, namespace: string, services: readonly string[]): Promise<void> {
  const core = admin.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  for (const name of services) {
    await core.createNamespacedService({
      namespace,
      body: { metadata: { name, labels: { 'external-secrets.io/provider': 'true' } }, spec: { ports: [{ name: 'grpc', port: 8443 }] } },
    });
  }
}

/** One stored certificate: where, its serial, and the Secret's resourceVersion. */
export interface StoredCertificate {
  readonly secret: string;
  readonly serial: string;
  readonly resourceVersion: string;
  readonly certificate: X509Certificate;
}

async function readSecret(core: CoreV1Api, namespace: string, name: string): Promise<V1Secret | undefined> {
  try {
    return await core.readNamespacedSecret({ namespace, name });
  } catch (e) {
    if ((e as { code?: number }).code === 404) return undefined;
    throw e;
  }
}

/** The first certificate of `key` in Secret namespace/name, or undefined when either is missing. */
export async function storedCertificate(admin: KubeConfig, namespace: string, name: string, key: string): Promise<StoredCertificate | undefined> {
  const secret = await readSecret(admin.makeApiClient(CoreV1Api), namespace, name);
  const b64 = secret?.data?.[key];
  if (!b64) return undefined;
  const pem = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/.exec(Buffer.from(b64, 'base64').toString('utf8'))?.[0];
  if (!pem) return undefined;
  const certificate = new X509Certificate(pem);
  return { secret: `${namespace}/${name}`, serial: certificate.serialNumber, resourceVersion: secret!.metadata!.resourceVersion!, certificate };
}

/** What the controller stored: the CA, ESO's client certificate and each provider namespace's certificate. */
export interface CertificateState {
  readonly ca: StoredCertificate;
  readonly client: StoredCertificate;
  readonly providers: ReadonlyMap<string, StoredCertificate>;
}

/** Where the chart's controller keeps its state, and the provider namespaces to look at. */
export interface Installation {
  readonly namespace: string;
  readonly caSecretName: string;
  readonly clientSecretName: string;
  readonly clusterDomain: string;
  /** Provider namespace -> its Services. */
  readonly providers: ReadonlyMap<string, readonly string[]>;
}

/**
 * The state when the controller has converged: the CA, the client certificate, and in every
 * provider namespace a certificate signed by that CA naming each Service under the cluster domain.
 * Undefined while anything is missing or not yet so.
 */
export async function convergedState(admin: KubeConfig, at: Installation): Promise<CertificateState | undefined> {
  const ca = await storedCertificate(admin, at.namespace, at.caSecretName, 'ca.crt');
  const client = await storedCertificate(admin, at.namespace, at.clientSecretName, 'tls.crt');
  if (!ca || !client) return undefined;
  const providers = new Map<string, StoredCertificate>();
  for (const [namespace, services] of at.providers) {
    const leaf = await storedCertificate(admin, namespace, 'external-secrets-provider-tls', 'tls.crt');
    if (!leaf || !leaf.certificate.verify(ca.certificate.publicKey)) return undefined;
    const sans = (leaf.certificate.subjectAltName ?? '').split(', ');
    if (!services.every((s) => sans.includes(`DNS:${s}.${namespace}.svc.${at.clusterDomain}`))) return undefined;
    providers.set(namespace, leaf);
  }
  return { ca, client, providers };
}

/** Serials, by Secret, for comparisons that print readably. */
export function serials(state: CertificateState): Record<string, string> {
  return Object.fromEntries([state.ca, state.client, ...state.providers.values()].map((c) => [c.secret, c.serial]));
}

/** resourceVersions, by Secret: unchanged means nobody wrote the Secret at all. */
export function resourceVersions(state: CertificateState): Record<string, string> {
  return Object.fromEntries([state.ca, state.client, ...state.providers.values()].map((c) => [c.secret, c.resourceVersion]));
}

/** The controller to run from an installed Deployment, and what it must converge to. */
export interface InstalledController {
  /** A name for the process and its pod (the leader-election identity). */
  readonly name: string;
  /** Where the Deployment and its ServiceAccount are (ESO's namespace). */
  readonly namespace: string;
  readonly deployment: string;
  readonly serviceAccount: string;
  readonly installation: Installation;
  /** Another version's sources (support/previous-release.ts); the working tree by default. */
  readonly root?: string;
}

/**
 * Runs the controller with the installed Deployment's args and env, as its ServiceAccount, until
 * `installation` converges, then stops it with SIGTERM and expects a clean exit. Returns the state
 * and the process (its log lines).
 */
export async function runInstalledController(plane: ControlPlane, run: InstalledController): Promise<{ state: CertificateState; process: ControllerProcess }> {
  const kubeconfig = await serviceAccountKubeconfigFile(plane, run.namespace, run.serviceAccount);
  const { args, env } = await deployedController(plane.adminKubeConfig, run.namespace, run.deployment, kubeconfig, `${run.name}-pod`);
  const controller = new ControllerProcess(run.name, args, env, run.root);
  try {
    const deadline = Date.now() + 90_000;
    let state = await convergedState(plane.adminKubeConfig, run.installation);
    while (!state) {
      if (!controller.alive || Date.now() > deadline) {
        throw new Error(
          `${run.name} did not converge within 90 s (alive: ${controller.alive}); stderr: ${controller.stderr.slice(-2000)}; last lines: ${controller.stdout.slice(-3000)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 250));
      state = await convergedState(plane.adminKubeConfig, run.installation);
    }
    controller.signal('SIGTERM');
    expect(await controller.exited).toEqual({ code: 0, signal: null });
    return { state, process: controller };
  } finally {
    await controller.kill();
  }
}
