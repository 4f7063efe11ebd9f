import type { ConcurrencyLimit } from '@eso-mtls/core';
import { type ApiErrorInfo, apiErrorOf } from '../client/api-error.js';
import { Backoff } from '../client/backoff.js';
import type { Timers } from '../runtime/clock.js';
import type { InvolvedObject } from './involved-object.js';
import { WriteFencedError } from '../client/rest-client.js';

/** How long an Event write is retried: an apiserver or etcd restart takes tens of seconds. */
export const EVENT_RETRY_FOR_MS = 90_000;
/** Events waiting to be retried at most: a dead apiserver must not grow memory without bound (each is under 2 KB). */
export const MAX_EVENTS_WAITING = 500;
/** The first wait and the longest between two attempts of one Event. */
export const EVENT_BACKOFF = { initialMs: 500, maxMs: 15_000 } as const;

/**
 * The wait before sending a failed Event write again, or undefined when another attempt would fail
 * the same way. Transient: no answer (network error, timeout), 429 (its `retryAfterSeconds`
 * honoured) and 5xx (etcd unavailable, the apiserver starting or stopping). Any other answer
 * (400, 403, 404, 409, 422) is the apiserver's last word on that request.
 */
export function eventRetryDelayMs(error: ApiErrorInfo, backoff: Backoff): number | undefined {
  const { code } = error;
  if (code !== undefined && code !== 429 && code < 500) return undefined;
  const delay = backoff.next();
  return error.retryAfterSeconds === undefined ? delay : Math.max(delay, error.retryAfterSeconds * 1000);
}

/** An Event given up while waiting to be retried: beyond the bound on Events waiting, or at stop (logged once for all). */
export class DroppedEvent extends Error {
  constructor(
    message: string,
    readonly atStop: boolean,
  ) {
    super(message);
  }
}

/** The bounds of {@link EventRetries}. */
export interface EventRetryOptions {
  readonly timers: Timers;
  readonly retryForMs: number;
  readonly maxWaiting: number;
  readonly onRetry: () => void;
}

/** The retries of the EventRecorder's writes: each attempt through its limiter, the waits between them bounded and cancellable. */
export class EventRetries {
  /** Events waiting for their next attempt: what wakes each one early (at stop), and what it is about. */
  private readonly waiting = new Map<() => void, InvolvedObject>();
  private stopping = false;

  constructor(
    private readonly limiter: ConcurrencyLimit,
    private readonly options: EventRetryOptions,
  ) {}

  /**
   * Sends `request` until it is answered for good: again, with backoff, after a transient failure,
   * while the retry bound, the bound on Events waiting and {@link stop} allow. `landed` says an
   * error of a later attempt means an earlier one landed. Rejects with the last error, or a
   * {@link DroppedEvent}.
   */
  async attempt(object: InvolvedObject, landed: (e: unknown) => boolean, request: () => Promise<unknown>): Promise<void> {
    const { timers, retryForMs, maxWaiting, onRetry } = this.options;
    const backoff = new Backoff({ ...EVENT_BACKOFF });
    const deadline = timers.monotonicMs() + retryForMs;
    for (;;) {
      try {
        await this.limiter.run(request);
        return;
      } catch (e) {
        if (backoff.attempts > 0 && landed(e)) return;
        // A fenced request was not sent, and will not be while the fence is closed.
        const delay = e instanceof WriteFencedError ? undefined : eventRetryDelayMs(apiErrorOf(e), backoff);
        if (delay === undefined || this.stopping || timers.monotonicMs() + delay > deadline) throw e;
        if (this.waiting.size >= maxWaiting)
          throw new DroppedEvent(`${maxWaiting} Events already wait to be retried; given up after: ${apiErrorOf(e).message}`, false);
        onRetry();
        if (!(await this.pause(object, delay))) throw new DroppedEvent('stopping while it waited to be retried', true);
      }
    }
  }

  /** No more retries: every Event waiting is given up at once (its attempt rejects with a DroppedEvent); returns what they were about. */
  stop(): InvolvedObject[] {
    this.stopping = true;
    const given = [...this.waiting];
    this.waiting.clear();
    for (const [wake] of given) wake();
    return given.map(([, object]) => object);
  }

  /** Waits `ms`; resolves false when {@link stop} ended the wait early. */
  private pause(object: InvolvedObject, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const wake = (): void => {
        timer.cancel();
        resolve(false);
      };
      const timer = this.options.timers.setTimer(ms, () => {
        this.waiting.delete(wake);
        resolve(true);
      });
      this.waiting.set(wake, object);
    });
  }
}
