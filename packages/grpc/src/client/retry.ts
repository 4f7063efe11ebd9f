import { status } from '@grpc/grpc-js';

/** The codes the contract calls transient; every other code fails at once. */
export const RETRYABLE_CODES: readonly status[] = Object.freeze([status.UNAVAILABLE, status.DEADLINE_EXCEEDED, status.RESOURCE_EXHAUSTED, status.ABORTED]);

/** How failed calls are retried: exponential backoff with full jitter, as in gRPC's own retry design (A6). */
export interface RetryPolicy {
  /** Attempts in all, the first included; 1 means no retry. Default 5. */
  readonly maxAttempts: number;
  /** Upper bound of the first backoff; default 100 ms. */
  readonly initialBackoffMs: number;
  /** Cap on any backoff; default 5 s. */
  readonly maxBackoffMs: number;
  /** Growth of the bound per retry; default 2. */
  readonly backoffMultiplier: number;
  /** Codes that are retried; default {@link RETRYABLE_CODES}. */
  readonly retryableCodes: readonly status[];
}

/** The defaults listed on {@link RetryPolicy}. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  maxAttempts: 5,
  initialBackoffMs: 100,
  maxBackoffMs: 5000,
  backoffMultiplier: 2,
  retryableCodes: RETRYABLE_CODES,
});

/** A policy that never retries. */
export const NO_RETRY_POLICY: RetryPolicy = Object.freeze({ ...DEFAULT_RETRY_POLICY, maxAttempts: 1 });

/** Merges `overrides` over the defaults and validates, naming the bad field. */
export function resolveRetryPolicy(overrides: Partial<RetryPolicy> | false | undefined): RetryPolicy {
  if (overrides === false) return NO_RETRY_POLICY;
  const p: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...overrides };
  if (!Number.isInteger(p.maxAttempts) || p.maxAttempts < 1) throw new RangeError(`retry.maxAttempts=${p.maxAttempts} must be a whole number >= 1`);
  for (const f of ['initialBackoffMs', 'maxBackoffMs'] as const) {
    if (!(p[f] >= 0) || !Number.isFinite(p[f])) throw new RangeError(`retry.${f}=${p[f]} must be a finite number of milliseconds >= 0`);
  }
  if (!(p.backoffMultiplier >= 1)) throw new RangeError(`retry.backoffMultiplier=${p.backoffMultiplier} must be >= 1`);
  for (const c of [status.NOT_FOUND, status.INVALID_ARGUMENT, status.PERMISSION_DENIED, status.UNAUTHENTICATED]) {
    if (p.retryableCodes.includes(c)) throw new RangeError(`retry.retryableCodes must not include ${status[c]}: the contract says it is final`);
  }
  return p;
}

/**
 * The wait before retry number `retry` (1 for the first retry): uniform in
 * [0, min(initial * multiplier^(retry-1), max)), so clients that failed together spread out.
 */
export function backoffDelay(retry: number, policy: RetryPolicy, random: () => number): number {
  const bound = Math.min(policy.initialBackoffMs * policy.backoffMultiplier ** (retry - 1), policy.maxBackoffMs);
  return Math.floor(random() * bound);
}

/** Clock, sleep and randomness, injectable so retry timing is tested without waiting. */
export interface RetryEnvironment {
  /** The clock, in milliseconds. */
  readonly now: () => number;
  /** Waits between attempts. */
  readonly sleep: (ms: number) => Promise<void>;
  /** A number in [0, 1) for the jitter. */
  readonly random: () => number;
}

/** Real time, real timers and Math.random. */
export const REAL_RETRY_ENVIRONMENT: RetryEnvironment = Object.freeze({
  now: () => Date.now(),
  sleep: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
  random: Math.random,
});

/**
 * Runs `attempt` until it succeeds, fails with a code the policy does not retry, runs out of
 * attempts, or the next wait would pass `deadline`. The last error is rethrown with
 * `attempts` set on it. An error marked `retryNow: true` (its cause is gone: the certificate
 * material reloaded) is retried at once, whatever its code.
 */
export async function withRetries<T>(
  attempt: (attemptNumber: number) => Promise<T>,
  policy: RetryPolicy,
  env: RetryEnvironment,
  deadline: number = Infinity,
): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      const now = (error as { retryNow?: unknown }).retryNow === true;
      const retryable = now || (typeof code === 'number' && policy.retryableCodes.includes(code));
      const wait = retryable && n < policy.maxAttempts ? (now ? 0 : backoffDelay(n, policy, env.random)) : undefined;
      if (wait === undefined || env.now() + wait >= deadline) {
        if (typeof error === 'object' && error !== null) Object.assign(error, { attempts: n });
        throw error;
      }
      await env.sleep(wait);
    }
  }
}
