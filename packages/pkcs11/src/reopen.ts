/**
 * When a token that failed is opened again. A module such as SoftHSM2 reads its tokens at
 * C_Initialize, so a token moved away and restored (or an HSM that restarted) is seen again only
 * once the module is finalised and initialised anew; new sessions alone keep failing. Each reopen
 * is bounded: the first after a success is immediate (a session an HSM closed on idle is back at
 * the next call), then at most one per backoff delay, doubling up to the longest, while the token
 * stays away. In between, calls fail at once with the failure that started the wait.
 */

/** Timing of the reopen after a failure. */
export interface ReopenBackoffOptions {
  /** The delay after the first reopen that failed again (default 1 s). */
  readonly initialMs?: number;
  /** The longest delay between two reopens while the token stays away (default 5 s). */
  readonly maxMs?: number;
  /** A monotonic clock in milliseconds (default performance.now); injectable for tests. */
  readonly now?: () => number;
}

/**
 * Default longest delay between two reopens. The reconciler retries a failed round after a delay
 * drawn between half a ceiling and all of it, the ceiling doubling from 100 ms to 30 s: only
 * retries under a 6.4 s ceiling can come within 5 s of a reopen, so the retries held back and the
 * next one (ceiling 12.8 s) span under 26 s, and later retries (15 to 30 s apart) are never held
 * back. Issuing therefore resumes at most 30 s after the token is back.
 */
export const DEFAULT_REOPEN_MAX_MS = 5_000;

/** The failure state of one token and the backoff of its reopens. */
export class ReopenBackoff {
  private pending: { readonly error: Error; readonly retryAt: number } | undefined;
  private delayMs = 0;
  private reopened = false;
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly now: () => number;

  constructor(options: ReopenBackoffOptions = {}) {
    this.initialMs = options.initialMs ?? 1000;
    this.maxMs = options.maxMs ?? DEFAULT_REOPEN_MAX_MS;
    this.now = options.now ?? (() => performance.now());
  }

  /** The failure that started the wait, from a failure until the next reopen. */
  get failure(): Error | undefined {
    return this.pending?.error;
  }

  /** Records a failure: the token is reopened before its next use, no sooner than the current delay. */
  fail(error: Error): void {
    // An operation already under way that fails too does not restart the wait.
    this.pending ??= { error, retryAt: this.now() + this.delayMs };
  }

  /** True once the delay since the failure has run: the token may be reopened. */
  due(): boolean {
    return this.pending !== undefined && this.now() >= this.pending.retryAt;
  }

  /** The token is being reopened: a failure after this one waits longer. */
  reopening(): void {
    this.pending = undefined;
    this.delayMs = Math.min(this.maxMs, this.delayMs === 0 ? this.initialMs : this.delayMs * 2);
    this.reopened = true;
  }

  /** An operation succeeded; true on the first success after a reopen (the token is back). */
  succeeded(): boolean {
    const back = this.reopened;
    this.delayMs = 0;
    this.reopened = false;
    return back;
  }
}
