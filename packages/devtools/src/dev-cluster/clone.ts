import { existsSync } from 'node:fs';
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
  /** testing/node/build-node-bins.sh: builds the node's binaries once (`--node`), prints their folder. */
  readonly nodeBuildScript: string;
  /** scripts/ensure-images.sh: builds the images a node runs once per set of inputs (`--node`), prints their folder. */
  readonly imagesScript: string;
}

/**
 * The clone this CLI runs from: src/ and dist/ both sit three folders below the repository root
 * (packages/devtools/<src|dist>/dev-cluster). Undefined for an installed package, which ships
 * neither testing/envtest nor deploy/.
 */
export function findClone(here = fileURLToPath(new URL('.', import.meta.url))): Clone | undefined {
  const root = resolve(here, '..', '..', '..', '..');
  const clone = {
    root,
    buildScript: join(root, 'testing', 'envtest', 'build-testbin.sh'),
    deployBase: join(root, 'deploy', 'base'),
    deployNamespace: join(root, 'deploy', 'namespace'),
    nodeBuildScript: join(root, 'testing', 'node', 'build-node-bins.sh'),
    imagesScript: join(root, 'scripts', 'ensure-images.sh'),
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
