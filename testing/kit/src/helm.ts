import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ApiextensionsV1Api, type KubeConfig, type KubernetesObject, loadAllYaml } from '@kubernetes/client-node';
import { parseAllDocuments, stringify } from 'yaml';
import { type Manifest, applyAll } from './manifests.js';
import { repoRoot } from './repo.js';

/** The chart in the working tree. */
export const chartDir = resolve(repoRoot, 'deploy/helm/eso-mtls');
/** The chart's first version, packaged with `helm package` (the "previous version" of upgrade tests). */
export const previousChart = resolve(repoRoot, 'testing/helm/fixtures/eso-mtls-0.1.0.tgz');

const tools = new Map<string, string>();
/** The path a scripts/ensure-*.sh prints (helm is built once from the Go module proxy and cached). */
export function ensured(script: string): string {
  let path = tools.get(script);
  if (path === undefined) {
    path = execFileSync('bash', [resolve(repoRoot, 'scripts', script)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
    tools.set(script, path);
  }
  return path;
}

/** A failed helm command, with what it wrote to stderr. */
export class HelmError extends Error {
  override readonly name = 'HelmError';
  constructor(
    readonly args: readonly string[],
    readonly stderr: string,
  ) {
    super(`helm ${args.join(' ')} failed: ${stderr.trim()}`);
  }
}

/** Values as a chart's values.yaml holds them. */
export type Values = Record<string, unknown>;

/**
 * Real helm (scripts/ensure-helm.sh) with its own config, cache and data folders, so a test never
 * reads or writes the user's, and with a kubeconfig when it talks to an apiserver.
 */
export class Helm {
  readonly home = mkdtempSync(join(tmpdir(), 'eso-mtls-helm-'));
  private files = 0;

  constructor(private readonly kubeconfigPath?: string) {}

  /** The environment helm runs in: this helm's folders as HOME and helm's homes, and the kubeconfig. */
  env(): NodeJS.ProcessEnv {
    return {
      PATH: process.env.PATH,
      HOME: this.home,
      HELM_CONFIG_HOME: join(this.home, 'config'),
      HELM_CACHE_HOME: join(this.home, 'cache'),
      HELM_DATA_HOME: join(this.home, 'data'),
      ...(this.kubeconfigPath ? { KUBECONFIG: this.kubeconfigPath } : {}),
    };
  }

  /** Runs helm; resolves with stdout, or throws a HelmError carrying stderr. */
  run(args: readonly string[]): string {
    try {
      return execFileSync(ensured('ensure-helm.sh'), args, { encoding: 'utf8', env: this.env(), maxBuffer: 64 << 20, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      throw new HelmError(args, String((e as { stderr?: string }).stderr ?? e));
    }
  }

  /** `--values <file>` for `values`, written into this helm's folder. */
  valuesArgs(values: Values): string[] {
    const file = join(this.home, `values-${++this.files}.yaml`);
    writeFileSync(file, stringify(values));
    return ['--values', file];
  }

  /** `helm template` of `chart` as `release` in `namespace`: the objects it renders. */
  template(chart: string, release: string, namespace: string, values: Values = {}, extra: readonly string[] = []): Manifest[] {
    return parseManifests(this.run(['template', release, chart, '--namespace', namespace, ...this.valuesArgs(values), ...extra]));
  }

  /** `helm install` (no --wait: envtest has no kubelet, so no pod ever runs). */
  install(chart: string, release: string, namespace: string, values: Values = {}): void {
    this.run(['install', release, chart, '--namespace', namespace, '--create-namespace', '--wait=false', ...this.valuesArgs(values)]);
  }

  upgrade(chart: string, release: string, namespace: string, values: Values = {}): void {
    this.run(['upgrade', release, chart, '--namespace', namespace, '--wait=false', ...this.valuesArgs(values)]);
  }

  uninstall(release: string, namespace: string): void {
    this.run(['uninstall', release, '--namespace', namespace, '--wait=false']);
  }

  /** The objects of the release's current manifest, as helm recorded them. */
  manifest(release: string, namespace: string): Manifest[] {
    return parseManifests(this.run(['get', 'manifest', release, '--namespace', namespace]));
  }

  remove(): void {
    rmSync(this.home, { recursive: true, force: true });
  }
}

/** The objects of a multi-document YAML stream, without the empty documents helm leaves. */
export function parseManifests(yaml: string): Manifest[] {
  return parseAllDocuments(yaml)
    .map((d) => {
      if (d.errors.length > 0) throw new Error(`helm emitted invalid YAML: ${d.errors[0]!.message}`);
      return d.toJS() as Manifest | null;
    })
    .filter((m): m is Manifest => m !== null);
}

/** Creates the Prometheus operator's ServiceMonitor, PodMonitor and PrometheusRule CRDs (scripts/ensure-prometheus-crds.sh) and waits until they serve. */
export async function applyPrometheusCrds(admin: KubeConfig): Promise<void> {
  const dir = ensured('ensure-prometheus-crds.sh');
  const crds = readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    // client-node's loader maps wire names to its models' (x-kubernetes-int-or-string), which create() expects.
    .flatMap((f) => loadAllYaml(readFileSync(join(dir, f), 'utf8')) as (KubernetesObject & Manifest)[]);
  await applyAll(admin, crds);
  const api = admin.makeApiClient(ApiextensionsV1Api);
  for (const crd of crds) {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const read = await api.readCustomResourceDefinition({ name: crd.metadata!.name! });
      if (read.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`CRD ${crd.metadata!.name} not Established after 30 s`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
