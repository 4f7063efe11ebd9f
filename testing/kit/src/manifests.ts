import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { CoreV1Api, KubeConfig, type KubernetesObject, KubernetesObjectApi } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { repoRoot } from './repo.js';

/** A manifest as kustomize emits it. */
export type Manifest = KubernetesObject & Record<string, unknown>;

let kustomizePath: string | undefined;

/** `kustomize build <dir>` (dir relative to the repo root), with kustomize built once by scripts/ensure-kustomize.sh. */
export function kustomizeBuild(dir: string): Manifest[] {
  kustomizePath ??= execFileSync('bash', [resolve(repoRoot, 'scripts/ensure-kustomize.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  const yaml = execFileSync(kustomizePath, ['build', resolve(repoRoot, dir)], { encoding: 'utf8', maxBuffer: 16 << 20 });
  return parseAllDocuments(yaml).map((d) => {
    if (d.errors.length > 0) throw new Error(`kustomize build ${dir} emitted invalid YAML: ${d.errors[0]!.message}`);
    return d.toJS() as Manifest;
  });
}

/**
 * What the documented kustomize install creates: ESO's namespace (`kubectl apply -k deploy/namespace`,
 * which no other build renders) and then `dir`, in that order.
 */
export function kustomizeInstall(dir: string): Manifest[] {
  return [...kustomizeBuild('deploy/namespace'), ...kustomizeBuild(dir)];
}

/** The one manifest of `kind` named `name`; throws listing what there is otherwise. */
export function find<T = Manifest>(manifests: readonly Manifest[], kind: string, name: string): T {
  const found = manifests.filter((m) => m.kind === kind && m.metadata?.name === name);
  if (found.length !== 1) {
    throw new Error(`expected one ${kind} ${name}, found ${found.length} among ${manifests.map((m) => `${m.kind}/${m.metadata?.name}`).join(', ')}`);
  }
  return found[0] as T;
}

/** Creates every manifest in order (real creates, not dry runs); returns the objects created. */
export async function applyAll(kc: KubeConfig, manifests: readonly Manifest[]): Promise<KubernetesObject[]> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  const created: KubernetesObject[] = [];
  for (const m of manifests) {
    try {
      created.push(await api.create(m));
    } catch (e) {
      throw new Error(`applying ${m.kind} ${m.metadata?.namespace ?? ''}/${m.metadata?.name}: ${(e as Error).message}`, { cause: e });
    }
  }
  return created;
}

/**
 * A KubeConfig authenticating with a real ServiceAccount token from the TokenRequest API, so
 * requests are made as system:serviceaccount:<namespace>:<name> with that account's RBAC.
 */
export async function serviceAccountKubeConfig(
  admin: KubeConfig,
  server: string,
  caPem: string,
  namespace: string,
  name: string,
): Promise<{ kc: KubeConfig; token: string }> {
  const core = admin.makeApiClient(CoreV1Api);
  const request = await core.createNamespacedServiceAccountToken({ name, namespace, body: { spec: { audiences: [], expirationSeconds: 3600 } } });
  const token = request.status!.token;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'envtest', server, caData: Buffer.from(caPem).toString('base64'), skipTLSVerify: false }],
    users: [{ name, token }],
    contexts: [{ name, cluster: 'envtest', user: name, namespace }],
    currentContext: name,
  });
  return { kc, token };
}
