import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ControlPlaneBinaries, locateBinaries } from '@eso-mtls/devtools/cluster';

/** Where the kube-apiserver and etcd executables live. */
export interface TestBinaries extends ControlPlaneBinaries {
  readonly dir: string;
}

const here = dirname(fileURLToPath(import.meta.url));
/** The build script next to this package; it prints the binary directory on stdout. */
const BUILD_SCRIPT = resolve(here, '..', 'build-testbin.sh');

let located: Promise<TestBinaries> | undefined;

/**
 * Finds kube-apiserver and etcd as `eso-mtls dev-cluster` does: `KUBEBUILDER_ASSETS` if it holds
 * both, else the cache that `build-testbin.sh` fills (building them from the Go module proxy on
 * first use, which can take 10-20 minutes cold; `npm test` runs the script before jest so suites
 * find them warm). Rejects with the script's own explanation (e.g. "'go' not found ... need Go
 * >= 1.26") and what to do.
 */
export function locateTestBinaries(): Promise<TestBinaries> {
  located ??= locateBinaries(BUILD_SCRIPT, () => undefined).then((found) => ({ dir: dirname(found.etcd), ...found }));
  return located;
}
