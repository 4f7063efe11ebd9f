// How the kubelet changes a mounted Secret on disk (pkg/volume/util/atomic_writer.go): the files
// never change in place; a new timestamped folder appears and one symlink rename swaps it in.
// The writer follows no link it did not make: a folder that is a link, a `..data` pointing out of
// the folder, or a file's name taken by anything but `..data/<name>` is refused before any write,
// and each file is created anew with O_EXCL | O_NOFOLLOW inside a fresh private folder.
import type { Stats } from 'node:fs';
import { constants } from 'node:fs';
import { lstat, mkdtemp, open, readdir, readlink, rename, rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';

const DATA_DIR = '..data';
const DATA_DIR_TMP = '..data_tmp';
// Created anew, never through a link: a name already there (a planted link) fails rather than redirects.
const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** File name -> content of one version of a mounted Secret. */
export type VolumePayload = Readonly<Record<string, string>>;

/** A folder {@link writeAtomically} will not write into: nothing in it was changed. */
export class UnsafeVolumeFolderError extends Error {}

/** Go's `..2006_01_02_15_04_05.` prefix of the kubelet's timestamped folders (a random suffix follows, as MkdirTemp adds). */
function timestampPrefix(now: Date): string {
  const p = (n: number): string => String(n).padStart(2, '0');
  return `..${now.getUTCFullYear()}_${p(now.getUTCMonth() + 1)}_${p(now.getUTCDate())}_${p(now.getUTCHours())}_${p(now.getUTCMinutes())}_${p(now.getUTCSeconds())}.`;
}

/** lstat that answers undefined for a path that does not exist (never follows a link). */
export async function lstatOrUndefined(path: string): Promise<Stats | undefined> {
  try {
    return await lstat(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/** What an entry is, for an error message: "a symlink to /etc", "a file", "a FIFO". */
export async function describeEntry(path: string, stats: Stats): Promise<string> {
  if (stats.isSymbolicLink()) return `a symlink to ${await readlink(path)}`;
  if (stats.isDirectory()) return 'a folder';
  if (stats.isFile()) return 'a file';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  return 'a device';
}

// `..data`'s target as the kubelet (and this writer) makes it: a name beside it, never a path.
const isVersionName = (target: string): boolean => /^\.\.[^/]+$/.test(target) && ![DATA_DIR, DATA_DIR_TMP, '..'].includes(target);

/** The version a folder shows now, as {@link inspectVolumeFolder} found it. */
export interface VolumeFolderState {
  /** The timestamped folder `..data` points at (a real folder beside it), if any. */
  readonly versionDir?: string;
  /** The files of that version. */
  readonly names: readonly string[];
}

/**
 * Checks, with lstat and without following any link, that `targetDir` is a folder laid out only
 * the way {@link writeAtomically} lays it out for the files `names`: the folder itself not a link,
 * `..data` absent or a link to a real timestamped folder beside it, `..data_tmp` absent or a link,
 * each name absent or the link `..data/<name>`. Throws {@link UnsafeVolumeFolderError} naming the entry and what to do.
 */
export async function inspectVolumeFolder(targetDir: string, names: readonly string[]): Promise<VolumeFolderState> {
  const refuse = async (path: string, stats: Stats, expected: string): Promise<never> => {
    throw new UnsafeVolumeFolderError(
      `${path} is ${await describeEntry(path, stats)}, not ${expected}; it was not made by this writer and is not followed: remove it`,
    );
  };
  const folder = await lstatOrUndefined(targetDir);
  if (folder === undefined) throw new UnsafeVolumeFolderError(`${targetDir} does not exist; create the folder first`);
  if (!folder.isDirectory()) await refuse(targetDir, folder, 'a folder');

  const dataLink = join(targetDir, DATA_DIR);
  const data = await lstatOrUndefined(dataLink);
  let versionDir: string | undefined;
  if (data !== undefined) {
    if (!data.isSymbolicLink()) await refuse(dataLink, data, 'the link to a timestamped folder beside it');
    const target = await readlink(dataLink);
    if (!isVersionName(target)) await refuse(dataLink, data, 'the link to a timestamped folder beside it');
    const version = await lstatOrUndefined(join(targetDir, target));
    // A dangling `..data` has no old version to clean up; the swap replaces the link itself.
    if (version !== undefined && !version.isDirectory()) await refuse(join(targetDir, target), version, 'a timestamped folder');
    if (version !== undefined) versionDir = target;
  }
  // A `..data_tmp` left by a write cut short is a link this writer replaces; anything else is not its own.
  const tmpLink = join(targetDir, DATA_DIR_TMP);
  const tmp = await lstatOrUndefined(tmpLink);
  if (tmp !== undefined && !tmp.isSymbolicLink()) await refuse(tmpLink, tmp, 'the link this writer swaps in');
  for (const name of names) {
    const path = join(targetDir, name);
    const entry = await lstatOrUndefined(path);
    if (entry === undefined || (entry.isSymbolicLink() && (await readlink(path)) === join(DATA_DIR, name))) continue;
    await refuse(path, entry, `the link ${join(DATA_DIR, name)}`);
  }
  return { versionDir, names: versionDir === undefined ? [] : await readdir(join(targetDir, versionDir)) };
}

/** Writes `content` to a file that must not exist yet, refusing a link in its place. */
async function createFile(path: string, content: string | Buffer): Promise<void> {
  const file = await open(path, CREATE_NEW, 0o644);
  try {
    await file.writeFile(content);
  } finally {
    await file.close();
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
 * version whole. A folder not laid out this way is refused untouched (`inspectVolumeFolder`).
 */
export async function writeAtomically(targetDir: string, payload: Readonly<Record<string, string | Buffer>>, now: Date = new Date()): Promise<AtomicWrite> {
  const names = Object.keys(payload);
  const bad = names.find((name) => name.includes('/') || name.startsWith('..') || name === '');
  if (bad !== undefined) throw new Error(`writeAtomically: ${JSON.stringify(bad)} is not a plain file name (no "/", not starting with "..")`);
  const old = await inspectVolumeFolder(targetDir, names);

  const tsPath = await mkdtemp(join(targetDir, timestampPrefix(now)));
  const timestampedDir = tsPath.slice(targetDir.length + 1);
  for (const [name, content] of Object.entries(payload)) await createFile(join(tsPath, name), content);

  const tmpLink = join(targetDir, DATA_DIR_TMP);
  // rm removes a link itself, never what it points at.
  await rm(tmpLink, { force: true });
  await symlink(timestampedDir, tmpLink);
  await rename(tmpLink, join(targetDir, DATA_DIR));
  const swappedAt = performance.now();

  for (const name of names) {
    if ((await lstatOrUndefined(join(targetDir, name))) === undefined) await symlink(join(DATA_DIR, name), join(targetDir, name));
  }
  for (const name of old.names) {
    const path = join(targetDir, name);
    if (!(name in payload) && (await lstatOrUndefined(path))?.isSymbolicLink() && (await readlink(path)) === join(DATA_DIR, name)) await rm(path);
  }
  if (old.versionDir !== undefined) await rm(join(targetDir, old.versionDir), { recursive: true, force: true });
  return { timestampedDir, swappedAt };
}
