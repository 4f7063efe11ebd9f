import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the kube-apiserver and etcd executables live. */
export interface TestBinaries {
  readonly dir: string;
  readonly kubeApiServer: string;
  readonly etcd: string;
}

const here = dirname(fileURLToPath(import.meta.url));
/** The build script next to this package; it prints the binary directory on stdout. */
export const BUILD_SCRIPT = resolve(here, '..', 'build-testbin.sh');

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function inDir(dir: string): TestBinaries | undefined {
  const kubeApiServer = join(dir, 'kube-apiserver');
  const etcd = join(dir, 'etcd');
  return executable(kubeApiServer) && executable(etcd) ? { dir, kubeApiServer, etcd } : undefined;
}

let located: Promise<TestBinaries> | undefined;

/**
 * Finds kube-apiserver and etcd: `KUBEBUILDER_ASSETS` if it holds both, else the cache that
 * `build-testbin.sh` fills (building them from the Go module proxy on first use, which can take
 * 10-20 minutes cold; `npm test` runs the script before jest so suites find them warm).
 * Rejects with the script's own explanation (e.g. "'go' not found ... need Go >= 1.26") on failure.
 */
export function locateTestBinaries(): Promise<TestBinaries> {
  located ??= locate();
  return located;
}

async function locate(): Promise<TestBinaries> {
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (assets) {
    const found = inDir(assets);
    if (found) return found;
  }
  const dir = await new Promise<string>((resolveDir, reject) => {
    execFile('bash', [BUILD_SCRIPT], { maxBuffer: 16 << 20, timeout: 45 * 60_000 }, (error, stdout, stderr) => {
      if (error) {
        const reason =
          stderr
            .split('\n')
            .filter((l) => l.includes('error'))
            .join('\n') || stderr.slice(-2000);
        reject(
          new Error(
            `cannot get kube-apiserver and etcd for the envtest control plane: ${BUILD_SCRIPT} failed (${error.message.split('\n')[0]}).\n${reason}\n` +
              'Install Go (https://go.dev/dl) so the script can build them, or set KUBEBUILDER_ASSETS to a directory holding kube-apiserver and etcd.',
          ),
        );
        return;
      }
      resolveDir(stdout.trim().split('\n').pop() ?? '');
    });
  });
  const found = inDir(dir);
  if (!found) {
    throw new Error(
      `${BUILD_SCRIPT} reported ${JSON.stringify(dir)}, which lacks executable kube-apiserver and etcd; delete that directory and run the script again`,
    );
  }
  return found;
}
