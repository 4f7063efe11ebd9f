import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';

/** Where kube-apiserver and etcd are. */
export interface ControlPlaneBinaries {
  readonly kubeApiServer: string;
  readonly etcd: string;
}

/** True when `path` is a file this process may execute. */
export function executable(path: string): boolean {
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
 * Runs a clone's testing/envtest/build-testbin.sh, which answers at once from its cache (or from
 * `KUBEBUILDER_ASSETS`) and otherwise builds both binaries from the Go module proxy, once.
 */
export async function locateBinaries(
  buildScript: string,
  progress: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ControlPlaneBinaries> {
  return runBuildScript(buildScript, progress, CONTROL_PLANE_BUILD, env);
}

/** What a build script provides, how to check it, and what else a user can do. */
export interface BuildScriptProduct<T> {
  /** e.g. "kube-apiserver and etcd". */
  readonly provides: string;
  /** The binaries in the folder the script printed, or undefined if any is missing. */
  readonly found: (dir: string) => T | undefined;
  /** The way around a build, e.g. "set KUBEBUILDER_ASSETS to a folder holding kube-apiserver and etcd". */
  readonly otherwise: string;
}

const CONTROL_PLANE_BUILD: BuildScriptProduct<ControlPlaneBinaries> = {
  provides: 'kube-apiserver and etcd',
  found: binariesIn,
  otherwise: 'set KUBEBUILDER_ASSETS to a folder holding kube-apiserver and etcd',
};

/**
 * Runs one of a clone's build scripts (they print the folder holding their binaries on stdout, and
 * build into a cache outside the clone only when it lacks them). Its progress lines go to
 * `progress` as they come, so a long first build is never silent.
 */
export function runBuildScript<T>(
  buildScript: string,
  progress: (line: string) => void,
  product: BuildScriptProduct<T>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<T> {
  return new Promise((resolveFound, reject) => {
    const child = spawn('bash', [buildScript], { env, stdio: ['ignore', 'pipe', 'pipe'] });
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
    child.once('error', (e) => reject(new Error(`cannot run ${buildScript}: ${e.message}`)));
    child.once('close', (code) => {
      if (partial !== '') progress(partial);
      const dir = stdout.trim().split('\n').pop() ?? '';
      const found = code === 0 ? product.found(dir) : undefined;
      if (found !== undefined) return resolveFound(found);
      const said = code === 0 ? `reported ${JSON.stringify(dir)}, which lacks executable ${product.provides}` : `failed (exit code ${code})`;
      reject(
        new Error(
          `${buildScript} could not provide ${product.provides}: it ${said}.\n${stderrTail.trim()}\n` +
            `Install Go (https://go.dev/dl) so the script can build them, or ${product.otherwise}.`,
        ),
      );
    });
  });
}
