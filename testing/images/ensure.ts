import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

// The images the real-node suite runs, built (or found cached) by scripts/ensure-images.sh. A
// test suite that imports this module builds images, so `npm run test:fast` leaves it out.

const root = resolve(import.meta.dirname, '../..');

/** The images scripts/ensure-images.sh provides, by what they are for. */
export type ImageRole = 'controller' | 'controller-hsm' | 'file-provider' | 'eso-client' | 'pause';

/** One image: its name (as `ctr images import` and a pod spec know it) and its docker-archive. */
export interface TestImage {
  readonly name: string;
  readonly role: ImageRole;
  /** Absolute path of the docker-archive, for `ctr -n k8s.io images import`. */
  readonly tarball: string;
  /** Whether it is, or is built on, a local stand-in for an image we could not pull (docs/images.md). */
  readonly standIn: boolean;
  /** The hash of its inputs it is cached by. */
  readonly inputs: string;
}

export interface TestImages {
  /** The folder holding the tarballs and manifest.json. */
  readonly dir: string;
  readonly byRole: Readonly<Record<ImageRole, TestImage>>;
  /** The storage.conf of the private buildah root holding them (CONTAINERS_STORAGE_CONF). */
  readonly storageConf: string;
}

interface Manifest {
  images: Record<string, { role: ImageRole; tarball: string; standIn: boolean; inputs: string }>;
}

let ensured: TestImages | undefined;

/** Builds what is missing (minutes when cold, about a second warm) and returns the images. */
export function ensureImages(): TestImages {
  if (ensured) return ensured;
  const run = spawnSync('bash', [join(root, 'scripts/ensure-images.sh')], { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (run.status !== 0) throw new Error(`scripts/ensure-images.sh failed (exit ${run.status ?? run.signal}):\n${run.stderr.slice(-4000)}`);
  const dir = run.stdout.trim();
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Manifest;
  const byRole = Object.fromEntries(
    Object.entries(manifest.images).map(([name, image]) => [image.role, { ...image, name, tarball: join(dir, image.tarball) }]),
  ) as Record<ImageRole, TestImage>;
  // The set folder is <cache>/sets/<key>; the storage root is the cache's.
  ensured = { dir, byRole, storageConf: join(dirname(dirname(dir)), 'storage.conf') };
  return ensured;
}

/** Runs buildah on the images' private storage root, never the host's. */
export function buildah(images: TestImages, args: readonly string[]): SpawnSyncReturns<string> {
  return spawnSync('buildah', args, { encoding: 'utf8', env: { ...process.env, CONTAINERS_STORAGE_CONF: images.storageConf }, maxBuffer: 64 << 20 });
}
