import { watch, type FSWatcher } from 'node:fs';
import { readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { type CertificateFileNames, type CertificateLayout, folderLayout, type FolderLayout } from './layout.js';
import { checkTlsMaterial, TlsMaterialError, type CertificatePurpose, type TlsMaterial, type TlsMaterialProblem } from './material.js';
import { MAX_MOUNTED_FILE_BYTES, MountedFileError, readMountedFile } from './mounted-file.js';
import { NoGoodCertificateError } from './no-good-certificate.js';
import { type ProviderLogger, stderrProviderLogger } from './provider-log.js';

/** Where a provider mounts its certificate folder (the Secret, per the design), whatever its layout. */
export const DEFAULT_CERT_DIR = '/etc/provider/certs';

/** Options of {@link CertificateWatcher}. */
export interface CertificateWatcherOptions {
  /** The mounted folder; default {@link DEFAULT_CERT_DIR}. */
  readonly directory?: string;
  /** extendedKeyUsage the leaf must carry: serverAuth for a provider, clientAuth for ESO's client certificate. */
  readonly purpose: CertificatePurpose;
  /**
   * Which files the folder holds: `secret` (default; tls.crt, tls.key, ca.crt) or `pod-certificate`
   * (credentials.pem written by a `podCertificate` projection, ca.crt by a `clusterTrustBundle` one).
   * Both are reloaded, checked and kept last-good alike.
   */
  readonly layout?: CertificateLayout;
  /** File names inside the folder, each for its layout (a name of the other layout is refused); defaults as in {@link CertificateFileNames}. */
  readonly fileNames?: CertificateFileNames;
  /** Fallback re-read period in case a folder event is missed; default 10 s. */
  readonly pollIntervalMs?: number;
  /** Wait after a folder event so a burst of them costs one read; default 2 ms. */
  readonly debounceMs?: number;
  /** The current time (validity checks); default Date.now. */
  readonly now?: () => number;
  /** Clock difference tolerated at either end of a validity period; default 5 minutes. */
  readonly clockSkewToleranceMs?: number;
  /** Require tls.crt to chain to ca.crt; default true. */
  readonly chainToBundle?: boolean;
  /** Files above this size are refused unread (reason `too_large`); default {@link MAX_MOUNTED_FILE_BYTES}, 2 MiB. */
  readonly maxFileBytes?: number;
  /**
   * Told when a listener throws (the other listeners still run) or a background check fails
   * unexpectedly; the watcher carries on either way. Default `process.emitWarning`.
   */
  readonly onError?: (error: Error) => void;
  /**
   * Where each counted refusal is logged, one record per problem (a poll re-reading the same bad
   * folder is not a new one); default {@link stderrProviderLogger}, one JSON line on stderr, so a
   * bad folder never goes unseen. `false` for none: `startProviderServer` logs its folder's itself.
   */
  readonly log?: ProviderLogger | false;
}

/** Options of {@link CertificateWatcher.start}. */
export interface CertificateWatcherStartOptions {
  /**
   * Gives up waiting for the first good material once aborted, e.g. `AbortSignal.timeout(5_000)`:
   * start() then rejects with a {@link NoGoodCertificateError} naming the last refusal. Without
   * it, start() waits as long as it takes. Either way the watcher carries on until closed.
   */
  readonly signal?: AbortSignal;
}

/** A refused attempt to load what is on disk; the last good material stays in use. */
export interface ReloadFailure {
  readonly reason: TlsMaterialProblem;
  readonly message: string;
  readonly directory: string;
}

/** Called with each newly swapped-in material; `previous` is undefined for the first load. */
export type MaterialListener = (material: TlsMaterial, previous: TlsMaterial | undefined) => void;
/** Called for each counted failure. */
export type FailureListener = (failure: ReloadFailure) => void;

const DATA_LINK = '..data';

const errorCode = (e: unknown) => (e as NodeJS.ErrnoException).code;

/** Files of one read that were refused; `problem` names each (path, reason, errno) for de-duplication. */
class UnreadableFilesError extends TlsMaterialError {
  constructor(
    reason: TlsMaterialProblem,
    message: string,
    readonly code: string | undefined,
    readonly problem: string,
  ) {
    super(reason, message);
  }
}

/** The texts of one version of the folder's files, in the layout's file order. */
type FolderTexts = readonly string[];

/** True when `a` and `b` hold the same texts. */
const sameTexts = (a: FolderTexts | undefined, b: FolderTexts | undefined): boolean =>
  a !== undefined && b !== undefined && a.length === b.length && a.every((t, i) => t === b[i]);

// What makes two refusals the same problem: a refused read by its files, reasons and errnos (never
// by sizes or timestamped paths, which change on every poll); refused content by its bytes.
function problemOf(e: unknown, texts: FolderTexts | undefined): { key: string; texts: FolderTexts | undefined } {
  if (e instanceof UnreadableFilesError) return { key: e.problem, texts: undefined };
  if (e instanceof TlsMaterialError) return { key: e.reason, texts };
  return { key: `unreadable ${errorCode(e) ?? ''} ${(e as Error).message}`, texts: undefined };
}

/**
 * Keeps the newest good certificate, key and bundle of one mounted folder in memory: a Secret
 * volume, or a pod-certificate projection (see {@link CertificateLayout}).
 *
 * The kubelet updates both by writing a new `..<timestamp>` folder and renaming a `..data`
 * symlink over the old one, so the folder is watched (a watch on the files would keep watching the
 * old inodes), and re-read every `pollIntervalMs` in case an event is lost. Each read resolves
 * `..data` once, so the files come from one version, each read only if it is a regular file
 * within `maxFileBytes` ({@link readMountedFile}). New bytes are checked ({@link checkTlsMaterial})
 * before they replace the current material; anything unusable is counted as a failure and the last
 * good material stays in use until the next change.
 */
export class CertificateWatcher {
  readonly directory: string;
  private readonly options: CertificateWatcherOptions;
  private readonly layout: FolderLayout;
  private material: TlsMaterial | undefined;
  /** What {@link material} was read from. */
  private materialTexts: FolderTexts | undefined;
  private lastRejected: { key: string; texts: FolderTexts | undefined } | undefined;
  /** The last counted refusal, which start() names when it gives up. */
  private lastFailure: ReloadFailure | undefined;
  private readonly materialListeners = new Set<MaterialListener>();
  private readonly failureListeners = new Set<FailureListener>();
  private readonly counters = { loads: 0, reloads: 0, failures: 0 };
  private fsWatcher: FSWatcher | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private debounceTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private rerun = false;
  private closed = false;
  private readonly firstLoad: Promise<TlsMaterial>;
  private resolveFirst!: (m: TlsMaterial) => void;
  private rejectFirst!: (e: Error) => void;

  /** Throws RangeError for a bad `maxFileBytes`, an unknown `layout`, or `fileNames` of the other layout. */
  constructor(options: CertificateWatcherOptions) {
    const maxFileBytes = options.maxFileBytes;
    if (maxFileBytes !== undefined && !(Number.isSafeInteger(maxFileBytes) && maxFileBytes > 0)) {
      throw new RangeError(
        `CertificateWatcher: maxFileBytes=${String(maxFileBytes)} must be a positive whole number of bytes; leave it out for ${MAX_MOUNTED_FILE_BYTES}`,
      );
    }
    this.options = options;
    this.directory = options.directory ?? DEFAULT_CERT_DIR;
    try {
      this.layout = folderLayout(options.layout, options.fileNames);
    } catch (e) {
      throw new RangeError(`CertificateWatcher: ${(e as Error).message}`, { cause: e });
    }
    this.firstLoad = new Promise((resolve, reject) => {
      this.resolveFirst = resolve;
      this.rejectFirst = reject;
    });
    this.firstLoad.catch(() => undefined);
  }

  /** The material in use; undefined until the first good load. */
  get current(): TlsMaterial | undefined {
    return this.material;
  }

  /** True once good material has been loaded (a provider's readiness). */
  get ready(): boolean {
    return this.material !== undefined;
  }

  /** loads: every swap including the first; reloads: swaps that replaced earlier material; failures: refused attempts. */
  get stats(): { readonly loads: number; readonly reloads: number; readonly failures: number } {
    return { ...this.counters };
  }

  /** Subscribes to swaps; returns the unsubscribe function. */
  onMaterial(listener: MaterialListener): () => void {
    this.materialListeners.add(listener);
    return () => this.materialListeners.delete(listener);
  }

  /** Subscribes to counted failures; returns the unsubscribe function. */
  onFailure(listener: FailureListener): () => void {
    this.failureListeners.add(listener);
    return () => this.failureListeners.delete(listener);
  }

  /**
   * Starts watching and polling. Resolves with the first good material. Until then it retries on
   * every event and poll (a Secret may be mounted before it is issued) and keeps the process alive
   * (afterwards the watcher alone does not); each refusal is logged (option `log`) and told to
   * {@link onFailure} listeners within milliseconds. Rejects if {@link close} is called first, or,
   * when `options.signal` aborts first, with a {@link NoGoodCertificateError} naming the last
   * refusal, so that ESO's client can give up on a bad folder and say why.
   */
  start(options: CertificateWatcherStartOptions = {}): Promise<TlsMaterial> {
    if (this.closed) return Promise.reject(new Error(`certificate watcher for ${this.directory} is closed`));
    if (this.pollTimer === undefined) {
      this.pollTimer = setInterval(() => this.checkInBackground(), this.options.pollIntervalMs ?? 10_000);
      // Until the first good load someone awaits start(): the poll keeps the process alive, or a
      // script's top-level await would end unsettled (exit 13) while the signal's timer is pending.
      if (this.material !== undefined) this.pollTimer.unref();
      this.checkInBackground();
    }
    const { signal } = options;
    if (signal === undefined || this.material !== undefined) return this.firstLoad;
    return new Promise<TlsMaterial>((resolve, reject) => {
      const giveUp = (): void => reject(new NoGoodCertificateError(this.directory, this.lastFailure, signal.reason));
      if (signal.aborted) return giveUp();
      signal.addEventListener('abort', giveUp, { once: true });
      this.firstLoad.then(resolve, reject).finally(() => signal.removeEventListener('abort', giveUp));
    });
  }

  /** Re-reads the folder now (what an event or a poll does). Resolves when that read is judged. */
  check(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.ensureWatching();
    if (this.running) {
      this.rerun = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.rerun = false;
          await this.readAndSwap();
        } while (this.rerun && !this.closed);
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  /** Stops watching and polling; the last material stays readable. */
  close(): void {
    this.closed = true;
    clearInterval(this.pollTimer);
    clearTimeout(this.debounceTimer);
    this.fsWatcher?.close();
    this.fsWatcher = undefined;
    this.rejectFirst(new Error(`certificate watcher for ${this.directory} closed before good material was loaded`));
  }

  // The folder may not exist yet (or may be replaced); polling re-attaches the watch.
  private ensureWatching(): void {
    if (this.fsWatcher !== undefined || this.closed) return;
    try {
      this.fsWatcher = watch(this.directory, { persistent: false }, () => this.onFolderEvent());
      this.fsWatcher.on('error', () => {
        this.fsWatcher?.close();
        this.fsWatcher = undefined;
      });
    } catch {
      this.fsWatcher = undefined;
    }
  }

  private onFolderEvent(): void {
    if (this.debounceTimer !== undefined || this.closed) return;
    this.debounceTimer = setTimeout(() => {
      this.debounceTimer = undefined;
      this.checkInBackground();
    }, this.options.debounceMs ?? 2);
  }

  // Timers have no caller to hand a rejection to; it is reported instead of becoming unhandled.
  private checkInBackground(): void {
    this.check().catch((e: unknown) =>
      this.report(new Error(`certificate watcher for ${this.directory}: reading failed unexpectedly: ${(e as Error).message}`, { cause: e })),
    );
  }

  // A throwing listener (a user's log callback, say) must not skip the others, one of which swaps
  // the served certificate, nor end the check; as the Informer does, it is reported and skipped.
  private notify<A extends unknown[]>(listeners: Iterable<(...args: A) => void>, ...args: A): void {
    for (const listener of listeners) {
      try {
        listener(...args);
      } catch (e) {
        this.report(new Error(`certificate watcher for ${this.directory}: listener failed: ${(e as Error).message}`, { cause: e }));
      }
    }
  }

  // The provider server's record, under the watcher's name: reason, folder and what is in use, never PEM.
  private logRefusal(failure: ReloadFailure): void {
    const log = this.options.log === undefined ? stderrProviderLogger : this.options.log;
    if (log === false) return;
    const used = this.material;
    try {
      log({
        level: 'warn',
        component: 'eso-mtls-certificate-watcher',
        message: used ? 'certificate reload refused; keeping the last good certificate' : 'certificate load refused; waiting for a good certificate',
        reason: failure.reason,
        detail: failure.message,
        ...(used ? { notAfter: new Date(used.notAfter).toISOString(), serialNumber: used.serialNumber } : {}),
      });
    } catch (e) {
      this.report(new Error(`certificate watcher for ${this.directory}: log failed: ${(e as Error).message}`, { cause: e }));
    }
  }

  private report(error: Error): void {
    try {
      (this.options.onError ?? ((e: Error) => process.emitWarning(e)))(error);
    } catch {
      // The reporter threw too: nothing is left to tell, and the watcher must go on.
    }
  }

  private async readAndSwap(): Promise<void> {
    let texts: FolderTexts | undefined;
    let next: TlsMaterial;
    try {
      texts = await this.readConsistent();
      if (sameTexts(texts, this.materialTexts)) {
        this.lastRejected = undefined;
        return;
      }
      next = checkTlsMaterial(this.layout.pems(texts), {
        purpose: this.options.purpose,
        now: (this.options.now ?? Date.now)(),
        clockSkewToleranceMs: this.options.clockSkewToleranceMs,
        chainToBundle: this.options.chainToBundle,
        fileNames: this.layout.partNames,
      });
    } catch (e) {
      // A read still in flight when close() was called judges nothing: the owner may already have
      // removed the folder, and a refusal logged after the stop would name a problem that is not one.
      if (this.closed) return;
      const reason: TlsMaterialProblem = e instanceof TlsMaterialError ? e.reason : 'unreadable';
      // The same problem (same files and errnos, or the same bytes refused for the same reason) is
      // one failure, however often it is re-read; a different one is a failure of its own.
      const problem = problemOf(e, texts);
      const last = this.lastRejected;
      const repeated =
        last !== undefined && last.key === problem.key && (problem.texts === undefined ? last.texts === undefined : sameTexts(problem.texts, last.texts));
      this.lastRejected = problem;
      if (!repeated) {
        this.counters.failures++;
        const failure: ReloadFailure = { reason, message: `${this.directory}: ${(e as Error).message}`, directory: this.directory };
        this.lastFailure = failure;
        this.logRefusal(failure);
        this.notify(this.failureListeners, failure);
      }
      return;
    }
    if (this.closed) return;
    const previous = this.material;
    this.material = next;
    this.materialTexts = texts;
    this.lastRejected = undefined;
    this.counters.loads++;
    if (previous !== undefined) this.counters.reloads++;
    if (previous === undefined) {
      this.pollTimer?.unref(); // nobody waits any more: the watcher alone keeps no process alive
      this.resolveFirst(next);
    }
    this.notify(this.materialListeners, next, previous);
  }

  /**
   * Reads the layout's files from one version of the folder: through the resolved `..data` target
   * when there is one, and again if `..data` moved while reading. A plain folder is read as is.
   */
  private async readConsistent(): Promise<FolderTexts> {
    const linkPath = join(this.directory, DATA_LINK);
    const resolve = () =>
      readlink(linkPath).catch((e: unknown) => {
        if (errorCode(e) === 'ENOENT' || errorCode(e) === 'EINVAL') return undefined;
        throw e;
      });
    for (let attempt = 0; ; attempt++) {
      const before = await resolve();
      try {
        const files = await this.readFiles(before === undefined ? this.directory : join(this.directory, before));
        if ((await resolve()) === before || attempt >= 3) return files;
      } catch (e) {
        const moved = before !== undefined && (await resolve()) !== before;
        if (!moved || attempt >= 3) {
          // `..data` exists but does not hold our names (projected with other paths): read the top level.
          if (before !== undefined && errorCode(e) === 'ENOENT' && !moved) return this.readFiles(this.directory);
          throw e;
        }
      }
    }
  }

  private async readFiles(dir: string): Promise<FolderTexts> {
    const names = this.layout.files;
    const maxBytes = this.options.maxFileBytes ?? MAX_MOUNTED_FILE_BYTES;
    const results = await Promise.allSettled(names.map((name) => readMountedFile(join(dir, name), maxBytes)));
    // Reported in file order, so the message does not depend on which read finished first. Paths
    // are named as mounted (not the timestamped folder), so one problem reads the same each time.
    const failed = results.flatMap((r, i) => {
      if (r.status === 'fulfilled') return [];
      const error =
        r.reason instanceof MountedFileError ? r.reason : new MountedFileError('unreadable', errorCode(r.reason), String((r.reason as Error).message));
      return [{ path: join(this.directory, names[i]!), error }];
    });
    if (failed.length > 0) {
      const [first, ...others] = failed;
      const also = others.length > 0 ? ` (nor ${others.map((o) => `${o.path}: ${o.error.reason}`).join(', ')})` : '';
      throw new UnreadableFilesError(
        first!.error.reason,
        `cannot read ${first!.path}: ${first!.error.message}${also}; ${this.layout.mountHint}`,
        first!.error.code,
        failed.map((f) => `${f.path} ${f.error.reason} ${f.error.code ?? ''}`).join('; '),
      );
    }
    return results.map((r) => (r as PromiseFulfilledResult<Buffer>).value.toString('utf8'));
  }
}
