import { watch, type FSWatcher } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { MountedFileError, readMountedFile } from '@eso-mtls/grpc';
import { formatOf, parseSecretFile, serializeSecretFile, type SecretFile, type SecretFileFormat } from './secret-file.js';

/** Options of {@link FileSecretStore.open}. */
export interface FileSecretStoreOptions {
  /** The JSON (`.json`) or YAML data file. A missing file is an empty store, created on the first write. */
  readonly path: string;
  /** Fallback poll, for file systems whose events are unreliable; default 2 s. */
  readonly pollIntervalMs?: number;
  /** Told after every reload that changed the contents. */
  readonly onReload?: (file: SecretFile) => void;
  /** Told when the file changed into something unusable; the last good contents stay in use. */
  readonly onError?: (error: Error) => void;
}

/** The largest data file read: far above any real secret store, far below the pod's memory. */
export const MAX_DATA_FILE_BYTES = 16 * 1024 * 1024;

// Read as the certificate files are: non-blocking and bounded, so a FIFO or a huge file in its
// place is refused instead of hanging or exhausting the provider.
const readText = async (path: string): Promise<string | undefined> => {
  try {
    return (await readMountedFile(path, MAX_DATA_FILE_BYTES)).toString('utf8');
  } catch (e) {
    if (e instanceof MountedFileError && e.reason === 'not_found') return undefined;
    throw new Error(`data file ${path} ${(e as Error).message}`, { cause: e });
  }
};

/**
 * The secrets of one data file, kept in memory and reloaded when the file changes (a watch on
 * its folder, so editors' and kubelet's rename-into-place is seen, plus a poll comparing text).
 * Writes are serialised, start from the file as it is on disk, and land atomically
 * (temporary file, fsync, rename), so a reader never sees half a file.
 */
export class FileSecretStore {
  private current: SecretFile = { secrets: {} };
  private lastText: string | undefined;
  private problem: Error | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  readonly format: SecretFileFormat;

  private constructor(private readonly options: FileSecretStoreOptions) {
    this.format = formatOf(options.path);
  }

  /** Loads the file (throwing if it is unusable at start) and starts watching it. */
  static async open(options: FileSecretStoreOptions): Promise<FileSecretStore> {
    const store = new FileSecretStore(options);
    await store.reload(true);
    store.watcher = watch(dirname(options.path), () => void store.enqueue(() => store.reload(false)));
    store.watcher.on('error', () => undefined); // the poll keeps working if the watch dies
    store.timer = setInterval(() => void store.enqueue(() => store.reload(false)), options.pollIntervalMs ?? 2000);
    store.timer.unref();
    return store;
  }

  /** The secrets now in use. Treat as read-only. */
  snapshot(): SecretFile {
    return this.current;
  }

  /** Why the last change on disk was rejected, while the previous contents stay in use. */
  lastError(): Error | undefined {
    return this.problem;
  }

  /** Applies `mutate` to a copy of the file as on disk, writes it atomically, and returns its result. */
  update<T>(mutate: (file: SecretFile) => T): Promise<T> {
    return this.enqueue(async () => {
      await this.reload(true);
      const next = structuredClone(this.current);
      const result = mutate(next);
      const text = serializeSecretFile(next, this.format);
      await this.writeAtomically(text);
      this.lastText = text;
      this.current = next;
      return result;
    });
  }

  /** Waits for pending work, e.g. a reload already triggered. */
  settle(): Promise<void> {
    return this.enqueue(async () => undefined);
  }

  close(): void {
    this.watcher?.close();
    clearInterval(this.timer);
  }

  private enqueue<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task, task);
    this.queue = run.catch(() => undefined);
    return run;
  }

  // `strict`: throw on an unusable file (start, and before a write, which must not overwrite
  // what someone is editing); otherwise keep the last good contents and report.
  private async reload(strict: boolean): Promise<void> {
    try {
      const text = await readText(this.options.path);
      if (text === this.lastText) {
        this.problem = undefined; // back to the contents in use, e.g. a bad edit reverted
        return;
      }
      this.current = text === undefined ? { secrets: {} } : parseSecretFile(text, this.format, this.options.path);
      this.lastText = text;
      this.problem = undefined;
      this.options.onReload?.(this.current);
    } catch (e) {
      this.problem = e as Error;
      if (strict) throw e;
      this.options.onError?.(e as Error);
    }
  }

  private async writeAtomically(text: string): Promise<void> {
    const { path } = this.options;
    const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    const handle = await open(temp, 'w', 0o600);
    try {
      await handle.writeFile(text, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await rename(temp, path);
    } catch (e) {
      await unlink(temp).catch(() => undefined);
      throw e;
    }
  }
}
