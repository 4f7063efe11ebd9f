/** What an apiserver error says: HTTP code, Status reason (`AlreadyExists`, `Conflict`, ...) and message. */
export interface ApiErrorInfo {
  readonly code: number | undefined;
  readonly reason: string | undefined;
  readonly message: string;
}

/**
 * Reads client-node's ApiException (numeric `code`, `body` a JSON Status string) or a network
 * error into one shape, never throwing.
 */
export function apiErrorOf(error: unknown): ApiErrorInfo {
  const e = error as { code?: unknown; body?: unknown; message?: unknown };
  const code = typeof e?.code === 'number' ? e.code : undefined;
  let reason: string | undefined;
  let message = typeof e?.message === 'string' ? e.message : String(error);
  if (typeof e?.body === 'string' || (typeof e?.body === 'object' && e.body !== null)) {
    try {
      const status = (typeof e.body === 'string' ? JSON.parse(e.body) : e.body) as { reason?: unknown; message?: unknown };
      if (typeof status.reason === 'string') reason = status.reason;
      if (typeof status.message === 'string') message = status.message;
    } catch {
      // Not a Status body: keep the exception's own message.
    }
  }
  return { code, reason, message: code === undefined ? message : `${code}${reason ? ` ${reason}` : ''}: ${message}` };
}
