/** Thrown into onError for a watch that ended with an ERROR event. */
export class WatchError extends Error {
  /**
   * @param message - What the watch ended with.
   * @param code - The Status code of the ERROR event, if it had one.
   */
  constructor(
    message: string,
    readonly code: number | undefined,
  ) {
    super(message);
  }
}

/** The Status object of a watch's ERROR event. */
export interface WatchStatus {
  readonly code?: number;
  readonly reason?: string;
  readonly message?: string;
}

/**
 * Where one watch stands. It is `watching` until an ERROR event or the close of its stream decides
 * how it ends, and the state it is in when the stream closes tells the informer what to do next.
 */
export type WatchState =
  /** Applying events; `changes` counts them, `sinceMs` is when the watch began (monotonic). */
  | { readonly phase: 'watching'; readonly sinceMs: number; readonly changes: number }
  /** 410 Gone: our resourceVersion left the apiserver's watch window. Relist, at once. */
  | { readonly phase: 'expired' }
  /** An ERROR event or a broken stream. Retry after backoff. */
  | { readonly phase: 'failed'; readonly error: Error }
  /** Closed without error (the server's timeout, or our stop). Watch again from the last resourceVersion. */
  | { readonly phase: 'ended'; readonly ranMs: number; readonly changes: number };

/** What can happen to a watch. */
export type WatchInput =
  /** An ADDED, MODIFIED or DELETED event arrived. */
  | { readonly on: 'change' }
  | { readonly on: 'error-event'; readonly status: WatchStatus }
  /** The stream closed at `atMs` (monotonic), with the error the watcher gave, if any. */
  | { readonly on: 'close'; readonly atMs: number; readonly error?: unknown; readonly stopping: boolean };

/** A watch's first state. */
export const watching = (sinceMs: number): WatchState => ({ phase: 'watching', sinceMs, changes: 0 });

const EXPIRED: WatchState = { phase: 'expired' };

/**
 * The life of one watch, one input at a time. A 410 is final, since nothing but a relist helps;
 * an ERROR event says more than the close that follows it; a close on our own stop is no failure.
 */
export function nextWatchState(state: WatchState, input: WatchInput): WatchState {
  if (state.phase === 'expired' || state.phase === 'ended') return state;
  switch (input.on) {
    case 'change':
      return state.phase === 'watching' ? { ...state, changes: state.changes + 1 } : state;
    case 'error-event':
      return input.status.code === 410 ? EXPIRED : { phase: 'failed', error: errorOfStatus(input.status) };
    case 'close':
      if (state.phase !== 'watching') return state;
      if (!input.error || input.stopping) return { phase: 'ended', ranMs: input.atMs - state.sinceMs, changes: state.changes };
      return (input.error as { statusCode?: number }).statusCode === 410 ? EXPIRED : { phase: 'failed', error: asError(input.error) };
  }
}

/** A watch that ends at once, having seen nothing, must not be retried in a tight loop. */
export const endedAtOnce = (end: WatchState): boolean => end.phase === 'ended' && end.ranMs < 1000 && end.changes === 0;

function errorOfStatus(status: WatchStatus): WatchError {
  return new WatchError(`watch ERROR event: ${status.code ?? '?'} ${status.reason ?? ''} ${status.message ?? ''}`.trim(), status.code);
}

const asError = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)));
