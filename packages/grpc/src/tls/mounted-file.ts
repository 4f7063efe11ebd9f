import { constants, type Stats } from 'node:fs';
import { open, stat, type FileHandle } from 'node:fs/promises';

/**
 * The largest certificate, key or bundle file read from a mounted folder: 2 MiB. A value of a
 * Secret is below 1 MiB (the apiserver caps a whole Secret at 1 MiB); the other MiB is room for a
 * ca.crt projected from ClusterTrustBundles, which the kubelet merges from several objects.
 */
export const MAX_MOUNTED_FILE_BYTES = 2 * 1024 * 1024;

/** Why a mounted file was refused before its content was judged; the reason label of logs. */
export type MountedFileProblem =
  | 'not_found' // no such file (ENOENT), or a symlink pointing nowhere
  | 'symlink_loop' // ELOOP: too many levels of symbolic links
  | 'fifo' // a named pipe: reading it would wait for a writer forever
  | 'socket' // a Unix socket
  | 'directory' // a folder where the file belongs
  | 'device' // a character or block device
  | 'too_large' // above the size bound (MAX_MOUNTED_FILE_BYTES by default)
  | 'unreadable'; // any other error (EACCES, EIO, ...)

/** A refused mounted file: `reason` for labels, `code` the errno when there was one. */
export class MountedFileError extends Error {
  /** Always `MountedFileError`. */
  override readonly name = 'MountedFileError';
  /**
   * @param reason - Why the file was refused, for metric labels.
   * @param code - The errno code, when there was one.
   * @param message - What happened, in a sentence.
   */
  constructor(
    readonly reason: MountedFileProblem,
    readonly code: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

// Non-blocking, so opening a FIFO returns at once instead of waiting in libuv's thread pool for a
// writer; no controlling terminal if a tty is mounted there. Symlinks are followed: the kubelet's
// names are symlinks into `..data`.
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | (constants.O_NOCTTY ?? 0);
const CHUNK_BYTES = 256 * 1024;

const errnoOf = (e: unknown): string | undefined => (e as NodeJS.ErrnoException | undefined)?.code;

/** What an fstat says the open descriptor is, unless it is a regular file. */
function kindProblem(s: Stats): [MountedFileProblem, string] | undefined {
  if (s.isFile()) return undefined;
  if (s.isFIFO()) return ['fifo', 'is a FIFO (named pipe), not a regular file'];
  if (s.isSocket()) return ['socket', 'is a socket, not a regular file'];
  if (s.isDirectory()) return ['directory', 'is a directory, not a regular file'];
  if (s.isCharacterDevice() || s.isBlockDevice()) return ['device', 'is a device, not a regular file'];
  return ['unreadable', 'is not a regular file'];
}

/** The refusal of an `open` that failed with `e`; `path` is only stat'ed to tell a socket (ENXIO) apart. */
async function openProblem(path: string, e: unknown): Promise<MountedFileError> {
  const code = errnoOf(e);
  const refuse = (reason: MountedFileProblem, what: string) => new MountedFileError(reason, code, `${what} (${code})`);
  switch (code) {
    case 'ENOENT':
      return refuse('not_found', 'does not exist, or is a symlink to nothing');
    case 'ELOOP':
      return refuse('symlink_loop', 'is a symlink loop');
    case 'EISDIR':
      return refuse('directory', 'is a directory, not a regular file');
    case 'ENXIO': {
      // Opening a Unix socket fails with ENXIO; stat only to say so, the file is refused anyway.
      const isSocket = await stat(path).then(
        (s) => s.isSocket(),
        () => false,
      );
      return isSocket ? refuse('socket', 'is a socket, not a regular file') : refuse('unreadable', 'cannot be opened: no such device or address');
    }
    default:
      return refuse('unreadable', `cannot be opened: ${(e as Error).message}`);
  }
}

// Reads to EOF but never more than `maxBytes + 1` bytes, so a file growing after fstat cannot
// make the read unbounded; undefined when it holds more than `maxBytes`.
async function readAtMost(handle: FileHandle, maxBytes: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const want = Math.min(CHUNK_BYTES, maxBytes + 1 - total);
    const { bytesRead, buffer } = await handle.read(Buffer.alloc(want), 0, want, null);
    if (bytesRead === 0) return Buffer.concat(chunks, total);
    chunks.push(buffer.subarray(0, bytesRead));
    total += bytesRead;
    if (total > maxBytes) return undefined;
  }
}

/**
 * Reads a certificate, key or bundle file that someone else may replace at any moment: opens it
 * once (non-blocking, following symlinks), fstats that descriptor, refuses anything that is not a
 * regular file or is above `maxBytes`, and reads from the same descriptor. Checking the path first
 * and reading it after would be racy, and wrong for the kubelet's symlinks. Throws
 * {@link MountedFileError}; the message says what the file is, without its path.
 */
export async function readMountedFile(path: string, maxBytes: number = MAX_MOUNTED_FILE_BYTES): Promise<Buffer> {
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) throw new RangeError(`readMountedFile: maxBytes=${maxBytes} must be a whole number of bytes`);
  let handle: FileHandle;
  try {
    handle = await open(path, OPEN_FLAGS);
  } catch (e) {
    throw await openProblem(path, e);
  }
  try {
    const s = await handle.stat();
    const problem = kindProblem(s);
    if (problem !== undefined) throw new MountedFileError(problem[0], undefined, problem[1]);
    const bound = `the ${maxBytes}-byte bound of a certificate file`;
    if (s.size > maxBytes) throw new MountedFileError('too_large', undefined, `holds ${s.size} bytes, above ${bound}`);
    const content = await readAtMost(handle, maxBytes);
    // It grew after fstat, or fstat does not know its size (as in /proc).
    if (content === undefined) throw new MountedFileError('too_large', undefined, `held more than ${bound} when read (fstat said ${s.size} bytes)`);
    return content;
  } catch (e) {
    if (e instanceof MountedFileError) throw e;
    throw new MountedFileError(errnoOf(e) === 'EISDIR' ? 'directory' : 'unreadable', errnoOf(e), `cannot be read: ${(e as Error).message}`);
  } finally {
    await handle.close().catch(() => undefined);
  }
}
