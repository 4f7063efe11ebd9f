// A test double of the kubelet's AtomicWriter (pkg/volume/util/atomic_writer.go), which is how a
// mounted Secret changes on disk: the files never change in place, a symlink swap does.
import { mkdtemp, readdir, readlink, rename, rm, symlink, writeFile, lstat } from 'node:fs/promises';
import { join } from 'node:path';

const DATA_DIR = '..data';
const DATA_DIR_TMP = '..data_tmp';

/** Go's `..2006_01_02_15_04_05.` prefix of the kubelet's timestamped folders (os.MkdirTemp adds random digits). */
function timestampPrefix(now = new Date()): string {
  const p = (n: number) => String(n).padStart(2, '0');
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
 * Replaces the content of `targetDir` with `payload` (file name -> content) the kubelet's way:
 * (5) a new `..<timestamp>` folder, (6) the payload written into it, (7) a `..data_tmp` symlink to
 * it, (8) renamed over `..data` (the one atomic step), (9) top-level symlinks `name -> ..data/name`
 * for new names, (10) top-level names no longer in the payload removed, (11) the old folder removed.
 */
export async function writeAtomically(targetDir: string, payload: Readonly<Record<string, string | Buffer>>): Promise<AtomicWrite> {
  const dataLink = join(targetDir, DATA_DIR);
  const oldTimestampedDir = (await exists(dataLink)) ? await readlink(dataLink) : undefined;
  const oldNames = oldTimestampedDir === undefined ? [] : await readdir(join(targetDir, oldTimestampedDir));

  const tsPath = await mkdtemp(join(targetDir, timestampPrefix()));
  const timestampedDir = tsPath.slice(targetDir.length + 1);
  for (const [name, content] of Object.entries(payload)) {
    await writeFile(join(tsPath, name), content, { mode: 0o644 });
  }

  const tmpLink = join(targetDir, DATA_DIR_TMP);
  await rm(tmpLink, { force: true });
  await symlink(timestampedDir, tmpLink);
  await rename(tmpLink, dataLink);
  const swappedAt = performance.now();

  for (const name of Object.keys(payload)) {
    if (!(await exists(join(targetDir, name)))) await symlink(join(DATA_DIR, name), join(targetDir, name));
  }
  for (const name of oldNames) {
    if (!(name in payload)) await rm(join(targetDir, name), { force: true });
  }
  if (oldTimestampedDir !== undefined) await rm(join(targetDir, oldTimestampedDir), { recursive: true, force: true });
  return { timestampedDir, swappedAt };
}
