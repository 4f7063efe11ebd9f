// How the kubelet changes a mounted Secret on disk (pkg/volume/util/atomic_writer.go): the files
// never change in place; a new timestamped folder appears and one symlink rename swaps it in.
import { lstat, mkdtemp, readdir, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const DATA_DIR = '..data';
const DATA_DIR_TMP = '..data_tmp';

/** File name -> content of one version of a mounted Secret. */
export type VolumePayload = Readonly<Record<string, string>>;

/** Go's `..2006_01_02_15_04_05.` prefix of the kubelet's timestamped folders (a random suffix follows, as MkdirTemp adds). */
function timestampPrefix(now: Date): string {
  const p = (n: number): string => String(n).padStart(2, '0');
  return `..${now.getUTCFullYear()}_${p(now.getUTCMonth() + 1)}_${p(now.getUTCDate())}_${p(now.getUTCHours())}_${p(now.getUTCMinutes())}_${p(now.getUTCSeconds())}.`;
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}

/** What one {@link writeAtomically} did, for tests that time or inspect the swap. */
export interface AtomicWrite {
  /** The new timestamped folder's name, e.g. `..2026_11_22_06_40_13.123456789`. */
  readonly timestampedDir: string;
  /** performance.now() right after the `..data` rename: the instant the new content became visible. */
  readonly swappedAt: number;
}

/**
 * Replaces the content of `targetDir` with `payload` (file name -> content) the kubelet's way: a
 * new `..<timestamp>` folder with the payload, a `..data_tmp` symlink to it renamed over `..data`
 * (the one atomic step), top-level symlinks `name -> ..data/name` for new names, names no longer in
 * the payload removed, the old folder removed. A reader that resolves `..data` once sees one
 * version whole.
 */
export async function writeAtomically(targetDir: string, payload: Readonly<Record<string, string | Buffer>>, now: Date = new Date()): Promise<AtomicWrite> {
  const dataLink = join(targetDir, DATA_DIR);
  const oldTimestampedDir = (await exists(dataLink)) ? await readlink(dataLink) : undefined;
  const oldNames = oldTimestampedDir === undefined ? [] : await readdir(join(targetDir, oldTimestampedDir));

  const tsPath = await mkdtemp(join(targetDir, timestampPrefix(now)));
  const timestampedDir = tsPath.slice(targetDir.length + 1);
  for (const [name, content] of Object.entries(payload)) await writeFile(join(tsPath, name), content, { mode: 0o644 });

  const tmpLink = join(targetDir, DATA_DIR_TMP);
  await rm(tmpLink, { force: true });
  await symlink(timestampedDir, tmpLink);
  await rename(tmpLink, dataLink);
  const swappedAt = performance.now();

  for (const name of Object.keys(payload)) {
    if (!(await exists(join(targetDir, name)))) await symlink(join(DATA_DIR, name), join(targetDir, name));
  }
  for (const name of oldNames) if (!(name in payload)) await rm(join(targetDir, name), { force: true });
  if (oldTimestampedDir !== undefined) await rm(join(targetDir, oldTimestampedDir), { recursive: true, force: true });
  return { timestampedDir, swappedAt };
}
