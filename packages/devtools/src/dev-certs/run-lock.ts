// One dev-certs per folder: two would each keep their own CA and overwrite each other's folders,
// so a provider and ESO's client would end up trusting different CAs.
import { constants } from 'node:fs';
import { link, lstat, open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describeEntry } from '../demo/atomic-writer.js';
import { RefusedFolderError } from './folder-trust.js';

/** The lock a running dev-certs holds in its `--dir`: the PID of the process, then a newline. */
export const LOCK_FILE = '.eso-mtls-dev-certs.lock';

const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
const READ_NO_LINK = constants.O_RDONLY | constants.O_NOFOLLOW;

// Locks this process holds: a PID check cannot tell two runs in one process apart.
const held = new Set<string>();

/** Whether a process with this PID exists (EPERM: it does, owned by someone else). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The PID a lock file names; undefined if it is gone or holds no PID. Refuses a lock that is a link. */
async function readHolder(path: string): Promise<number | undefined> {
  let text: string;
  try {
    const stats = await lstat(path);
    if (!stats.isFile()) throw new RefusedFolderError(`${path} is ${await describeEntry(path, stats)}, not the lock file dev-certs makes; remove it`);
    const file = await open(path, READ_NO_LINK);
    try {
      text = await file.readFile('utf8');
    } finally {
      await file.close();
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  const pid = Number(text.trim());
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

/** Writes a whole lock file beside `path` and links it into place: the lock never exists half-written. */
async function tryCreate(path: string): Promise<boolean> {
  const draft = `${path}.${process.pid}`;
  await rm(draft, { force: true });
  const file = await open(draft, CREATE_NEW, 0o644);
  try {
    await file.writeFile(`${process.pid}\n`);
  } finally {
    await file.close();
  }
  try {
    await link(draft, path);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  } finally {
    await rm(draft, { force: true });
  }
}

/**
 * Removes a lock left by `stalePid`, a process that is gone. It is moved aside first and checked:
 * if another run took it over meanwhile (a new PID in it), it is put back.
 */
async function removeStale(path: string, stalePid: number | undefined): Promise<void> {
  const aside = `${path}.stale.${process.pid}`;
  try {
    await rename(path, aside);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  if ((await readHolder(aside)) !== stalePid) await link(aside, path).catch(() => undefined);
  await rm(aside, { force: true });
}

/**
 * Takes `dir`'s lock for this run, or refuses naming the run that holds it. A lock left by a
 * process that is gone is taken over. Resolves with the function that gives it back.
 */
export async function lockFolder(dir: string): Promise<() => Promise<void>> {
  const path = join(dir, LOCK_FILE);
  const refuse = (pid: number): RefusedFolderError =>
    new RefusedFolderError(
      `another eso-mtls dev-certs (PID ${pid}) is writing ${dir}, with its own CA; stop it first (kill ${pid}) or give --dir another folder. If PID ${pid} is not eso-mtls dev-certs, remove ${path}`,
    );
  if (held.has(path)) throw refuse(process.pid);
  for (let attempt = 0; attempt < 5; attempt++) {
    if (await tryCreate(path)) {
      held.add(path);
      return async () => {
        held.delete(path);
        if ((await readHolder(path).catch(() => undefined)) === process.pid) await rm(path, { force: true });
      };
    }
    const holder = await readHolder(path);
    // Our own PID in a lock this process does not hold: a run before a restart in a container, as PID 1 again.
    if (holder !== undefined && holder !== process.pid && isAlive(holder)) throw refuse(holder);
    await removeStale(path, holder);
  }
  throw new RefusedFolderError(`${path} keeps changing under this run (other dev-certs starting on ${dir}?); try again`);
}
