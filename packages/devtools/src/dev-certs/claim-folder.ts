// Makes `--dir` this run's own before anything is written: a folder only this user can change,
// holding nothing dev-certs did not write, laid out the way its writer lays it out, and locked.
import { constants } from 'node:fs';
import type { Stats } from 'node:fs';
import { lstat, mkdir, open, readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { UnsafeVolumeFolderError, describeEntry, inspectVolumeFolder, lstatOrUndefined } from '../demo/atomic-writer.js';
import { RefusedFolderError, checkAncestors, checkOwnFolder } from './folder-trust.js';
import { BUNDLE_FILES, type DevCertsLayout, LEAF_FILES, MARKER_FILE } from './layout.js';
import { LOCK_FILE, lockFolder } from './run-lock.js';

/** Creates `dir` (not its parents) if missing; an entry already there is kept for the checks that follow. */
async function mkdirIfMissing(dir: string): Promise<void> {
  try {
    await mkdir(dir, { mode: 0o755 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
}

/** Refuses `--dir` itself unless it is a folder of this user's that nobody else can write. */
async function checkTop(dir: string, stats: Stats, uid: number | undefined): Promise<void> {
  if (stats.isSymbolicLink())
    throw new RefusedFolderError(
      `--dir ${dir} is ${await describeEntry(dir, stats)}: dev-certs follows no link it did not make; give --dir the folder itself, or a new path`,
    );
  if (!stats.isDirectory())
    throw new RefusedFolderError(
      `--dir ${dir} is ${await describeEntry(dir, stats)}, not a folder; give --dir a new path (it is created), or move ${dir} away`,
    );
  checkOwnFolder(dir, stats, uid);
}

/** Refuses a folder holding anything but what dev-certs writes, unless an earlier run marked it. */
async function checkContents(dir: string): Promise<void> {
  const entries = (await readdir(dir)).filter((name) => !name.startsWith(LOCK_FILE));
  if (entries.length > 0 && !entries.includes(MARKER_FILE)) {
    const shown = entries.slice(0, 5).join(', ') + (entries.length > 5 ? `, and ${entries.length - 5} more` : '');
    throw new RefusedFolderError(
      `${dir} holds files eso-mtls dev-certs did not write (${shown}); give --dir a new or empty folder, so that nothing of yours is overwritten`,
    );
  }
  const marker = join(dir, MARKER_FILE);
  const stats = await lstatOrUndefined(marker);
  if (stats !== undefined && !stats.isFile())
    throw new RefusedFolderError(
      `${marker} is ${await describeEntry(marker, stats)}, not the marker file dev-certs writes; remove it, or give --dir a new folder`,
    );
}

/** Leaves the marker that tells a later run the folder is its own, created anew (never through a link). */
async function writeMarker(dir: string): Promise<void> {
  let file;
  try {
    file = await open(join(dir, MARKER_FILE), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw e;
  }
  try {
    await file.writeFile('Written by eso-mtls dev-certs: it may rewrite the certificate folders here.\n');
  } finally {
    await file.close();
  }
}

/** Refuses a certificate folder left by an earlier run that is a link, another's, or not laid out by the writer. */
async function checkCertificateFolder(folder: string, names: readonly string[], stats: Stats, uid: number | undefined): Promise<void> {
  if (!stats.isDirectory())
    throw new RefusedFolderError(
      `${folder} is ${await describeEntry(folder, stats)}, not a folder dev-certs made: dev-certs follows no link it did not make; remove it, or give --dir a new folder`,
    );
  checkOwnFolder(folder, stats, uid);
  try {
    await inspectVolumeFolder(folder, names);
  } catch (e) {
    if (e instanceof UnsafeVolumeFolderError) throw new RefusedFolderError(`${e.message}, or give --dir a new folder`);
    throw e;
  }
}

/**
 * Makes `layout.dir` this run's: refuses it (touching nothing) if a folder above it lets someone
 * else swap it, if it is a link, not a folder, someone else's or writable by others, if it holds
 * files dev-certs did not write, if one of its certificate folders is not as dev-certs left it, or
 * if another dev-certs is writing it. Otherwise creates what is missing and locks it. Resolves
 * with the function that gives the lock back.
 */
export async function claimFolder(layout: DevCertsLayout, uid: number | undefined = process.getuid?.()): Promise<() => Promise<void>> {
  const { dir } = layout;
  await checkAncestors(dir, uid);
  if ((await lstatOrUndefined(dir)) === undefined) {
    await mkdir(dirname(dir), { recursive: true, mode: 0o755 });
    await mkdirIfMissing(dir);
  }
  await checkTop(dir, await lstat(dir), uid);
  await checkContents(dir);
  const release = await lockFolder(dir);
  try {
    await writeMarker(dir);
    const folders = [
      ...layout.providers.map((p) => ({ folder: p.directory, names: LEAF_FILES })),
      { folder: layout.client, names: LEAF_FILES },
      { folder: layout.ca, names: BUNDLE_FILES },
    ];
    // Every folder is checked before any is created, so a refusal adds nothing.
    for (const { folder, names } of folders) {
      const stats = await lstatOrUndefined(folder);
      if (stats !== undefined) await checkCertificateFolder(folder, names, stats, uid);
    }
    for (const { folder } of folders) await mkdirIfMissing(folder);
    return release;
  } catch (e) {
    await release();
    throw e;
  }
}
