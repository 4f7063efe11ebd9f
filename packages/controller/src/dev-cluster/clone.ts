import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The parts of a clone of the eso-mtls repository that dev-cluster uses. */
export interface Clone {
  readonly root: string;
  /** testing/envtest/build-testbin.sh: builds kube-apiserver and etcd once, prints their folder. */
  readonly buildScript: string;
  /** deploy/base: the shipped manifests (the controller's ServiceAccount among them). */
  readonly deployBase: string;
  /** deploy/namespace: ESO's namespace, which deploy/base does not own. */
  readonly deployNamespace: string;
}

/** Where kube-apiserver and etcd are. */
export interface ControlPlaneBinaries {
  readonly kubeApiServer: string;
  readonly etcd: string;
}

/**
 * The clone this CLI runs from: src/ and dist/ both sit three folders below the repository root
 * (packages/controller/<src|dist>/dev-cluster). Undefined for an installed package, which ships
 * neither testing/envtest nor deploy/.
 */
export function findClone(here = fileURLToPath(new URL('.', import.meta.url))): Clone | undefined {
  const root = resolve(here, '..', '..', '..', '..');
  const clone = {
    root,
    buildScript: join(root, 'testing', 'envtest', 'build-testbin.sh'),
    deployBase: join(root, 'deploy', 'base'),
    deployNamespace: join(root, 'deploy', 'namespace'),
  };
  const complete = [clone.buildScript, join(clone.deployBase, 'serviceaccount.yaml'), join(clone.deployNamespace, 'namespace.yaml')].every((p) =>
    existsSync(p),
  );
  return complete ? clone : undefined;
}

/** What to tell someone who runs dev-cluster from an installed package. */
export const NOT_A_CLONE =
  'dev-cluster runs from a clone of the eso-mtls repository: it builds kube-apiserver and etcd from the ' +
  'Go modules in testing/envtest and reads the manifests in deploy/, and the npm package ships neither. ' +
  'Clone the repository, run `npm ci` in it, then `npx eso-mtls dev-cluster` there.';

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** kube-apiserver and etcd in `dir`, if both are there and executable. */
export function binariesIn(dir: string): ControlPlaneBinaries | undefined {
  const found = { kubeApiServer: join(dir, 'kube-apiserver'), etcd: join(dir, 'etcd') };
  return executable(found.kubeApiServer) && executable(found.etcd) ? found : undefined;
}

/**
 * Runs the clone's build script, which answers at once from its cache (or from
 * `KUBEBUILDER_ASSETS`) and otherwise builds both binaries from the Go module proxy, once.
 * Its progress lines go to `progress` as they come, so a long first build is never silent.
 */
export function locateBinaries(clone: Clone, progress: (line: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<ControlPlaneBinaries> {
  return new Promise((resolveBinaries, reject) => {
    const child = spawn('bash', [clone.buildScript], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderrTail = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    let partial = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderrTail = (stderrTail + d).slice(-4000);
      const lines = (partial + d).split('\n');
      partial = lines.pop()!;
      for (const line of lines) progress(line);
    });
    child.once('error', (e) => reject(new Error(`cannot run ${clone.buildScript}: ${e.message}`)));
    child.once('close', (code) => {
      if (partial !== '') progress(partial);
      const dir = stdout.trim().split('\n').pop() ?? '';
      const found = code === 0 ? binariesIn(dir) : undefined;
      if (found) return resolveBinaries(found);
      reject(
        new Error(
          `${clone.buildScript} could not provide kube-apiserver and etcd (exit code ${code}).\n${stderrTail.trim()}\n` +
            'It needs Go (https://go.dev/dl); or set KUBEBUILDER_ASSETS to a folder holding kube-apiserver and etcd.',
        ),
      );
    });
  });
}
