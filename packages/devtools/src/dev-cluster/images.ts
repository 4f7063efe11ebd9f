import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type BuildScriptProduct, runBuildScript } from '../cluster/binaries.js';

/** One image scripts/ensure-images.sh built: its name as containerd and a pod spec know it, and its docker-archive. */
export interface NodeImage {
  readonly name: string;
  readonly tarball: string;
}

/** The images a dev-cluster node imports, the two its next steps name among them. */
export interface NodeImages {
  readonly controller: NodeImage;
  readonly fileProvider: NodeImage;
  readonly all: readonly NodeImage[];
}

/**
 * Runs a clone's scripts/ensure-images.sh (cached by a hash of each image's inputs; the first
 * build takes minutes) and returns its images, read from the manifest.json in the folder it prints.
 */
export function locateImages(script: string, progress: (line: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<NodeImages> {
  return runBuildScript(script, progress, IMAGES, env);
}

const IMAGES: BuildScriptProduct<NodeImages> = {
  provides: 'the images a node runs (controller, file-provider, pause, ...)',
  found: imagesIn,
  otherwise: 'run it as root with buildah and debootstrap installed (apt-get install --no-install-recommends buildah debootstrap)',
};

interface Manifest {
  readonly images?: Record<string, { readonly role?: string; readonly tarball?: string }>;
}

/** The images listed in `dir`/manifest.json, or undefined when it is missing, unreadable or lacks the controller or file-provider. */
export function imagesIn(dir: string): NodeImages | undefined {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Manifest;
  } catch {
    return undefined;
  }
  const entries = Object.entries(manifest.images ?? {}).filter(([, i]) => typeof i.tarball === 'string');
  const all = entries.map(([name, i]) => ({ name, tarball: join(dir, i.tarball!) }));
  const byRole = (role: string): NodeImage | undefined => all[entries.findIndex(([, i]) => i.role === role)];
  const controller = byRole('controller');
  const fileProvider = byRole('file-provider');
  return controller && fileProvider ? { controller, fileProvider, all } : undefined;
}
