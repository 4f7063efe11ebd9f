// Whether a folder is one only this user can change: the symlink attack on a shared folder (such
// as /tmp) needs someone else to be able to put a link where dev-certs writes.
import type { Stats } from 'node:fs';
import { lstat, realpath } from 'node:fs/promises';
import { dirname } from 'node:path';

/** A folder `--dir` names that dev-certs will not write into; nothing in it (or anywhere else) was touched. */
export class RefusedFolderError extends Error {}

const STICKY = 0o1000;

/** Who besides the owner may write, from the mode's group and other write bits; undefined for nobody. */
export function writableBy(mode: number): string | undefined {
  const group = (mode & 0o020) !== 0;
  const others = (mode & 0o002) !== 0;
  if (group && others) return 'its group and others';
  if (group) return 'its group';
  if (others) return 'others';
  return undefined;
}

const octal = (mode: number): string => `0${(mode & 0o7777).toString(8)}`;

/**
 * Refuses `stats` (of `path`, a folder dev-certs writes in) unless this user owns it and neither
 * its group nor others may write it. Pure. On a system without uids (Windows) nothing is refused.
 */
export function checkOwnFolder(path: string, stats: Stats, uid: number | undefined): void {
  if (uid === undefined) return;
  if (stats.uid !== uid)
    throw new RefusedFolderError(
      `${path} is owned by uid ${stats.uid}, not by you (uid ${uid}): its owner could put links in it that make dev-certs write its files elsewhere; give --dir a folder of your own (a new path is created for you)`,
    );
  const who = writableBy(stats.mode);
  if (who !== undefined)
    throw new RefusedFolderError(
      `${path} is writable by ${who} (mode ${octal(stats.mode)}): they could put links in it that make dev-certs write its files elsewhere; run chmod go-w ${path}, or give --dir a new folder`,
    );
}

/**
 * Refuses a folder above `--dir` (`path`, already resolved, so no link) in which someone else
 * could rename `--dir` away and put a link in its place: owned by a user other than this one or
 * root, or writable by its group or others without the sticky bit (/tmp has it, so it passes). Pure.
 */
export function checkAncestor(path: string, dir: string, stats: Stats, uid: number | undefined): void {
  if (uid === undefined) return;
  if (stats.uid !== uid && stats.uid !== 0)
    throw new RefusedFolderError(
      `${path}, a folder above ${dir}, is owned by uid ${stats.uid}, not by you (uid ${uid}) or root: its owner could swap ${dir} for a link; give --dir a path under a folder of your own`,
    );
  const who = writableBy(stats.mode);
  if (who !== undefined && (stats.mode & STICKY) === 0)
    throw new RefusedFolderError(
      `${path}, a folder above ${dir}, is writable by ${who} (mode ${octal(stats.mode)}) without the sticky bit: they could swap ${dir} for a link; run chmod go-w ${path} (or chmod +t), or give --dir a path under a folder of your own`,
    );
}

/** Checks every folder from the nearest existing one above `dir` up to `/`, links resolved. */
export async function checkAncestors(dir: string, uid: number | undefined): Promise<void> {
  let existing = dirname(dir);
  for (;;) {
    try {
      existing = await realpath(existing);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(existing) === existing) throw e;
      existing = dirname(existing);
    }
  }
  for (let path = existing; ; path = dirname(path)) {
    checkAncestor(path, dir, await lstat(path), uid);
    if (dirname(path) === path) return;
  }
}
