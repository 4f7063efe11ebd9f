import type { TlsMaterialProblem } from './material.js';

// How the caller's signal ended the wait, in words: AbortSignal.timeout() aborts with a
// TimeoutError, abort() with an AbortError unless given a reason of its own.
function abortedBecause(reason: unknown): string {
  const name = (reason as { name?: unknown } | undefined)?.name;
  if (name === 'TimeoutError') return 'its signal timed out';
  if (reason === undefined || name === 'AbortError') return 'its signal was aborted';
  return `its signal was aborted: ${reason instanceof Error ? reason.message : String(reason)}`;
}

/**
 * `CertificateWatcher.start({ signal })` gave up before a good certificate was loaded. Names the
 * last refusal (its reason and message), or says that nothing had been refused yet (the first
 * read of the folder had not finished). The watcher itself carries on until closed.
 */
export class NoGoodCertificateError extends Error {
  /** Always `NoGoodCertificateError`. */
  override readonly name = 'NoGoodCertificateError';
  /** The watched folder. */
  readonly directory: string;
  /** The last refusal's reason, e.g. `untrusted` or `not_found`; undefined when nothing was refused yet. */
  readonly reason: TlsMaterialProblem | undefined;

  /**
   * @param directory - The watched folder.
   * @param failure - The last refusal of the folder, if any.
   * @param abortReason - The signal's `reason`, kept as the cause.
   */
  constructor(directory: string, failure: { readonly reason: TlsMaterialProblem; readonly message: string } | undefined, abortReason: unknown) {
    const last =
      failure === undefined ? 'nothing was refused yet: the first read of the folder had not finished' : `last refusal (${failure.reason}): ${failure.message}`;
    super(`no good certificate in ${directory} when start() gave up (${abortedBecause(abortReason)}); ${last}`, { cause: abortReason });
    this.directory = directory;
    this.reason = failure?.reason;
  }
}
