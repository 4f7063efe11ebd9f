/** What an apiserver error says: HTTP code, Status reason (`AlreadyExists`, `Conflict`, ...) and message. */
export interface ApiErrorInfo {
  readonly code: number | undefined;
  readonly reason: string | undefined;
  readonly message: string;
}

/** The `reason` and `message` of a JSON Status body (a string or already parsed); empty when it is not one. */
export function statusOf(body: unknown): { reason?: string; message?: string } {
  let status: unknown = body;
  if (typeof body === 'string') {
    try {
      status = JSON.parse(body);
    } catch {
      return {};
    }
  }
  if (typeof status !== 'object' || status === null) return {};
  const { reason, message } = status as { reason?: unknown; message?: unknown };
  return { ...(typeof reason === 'string' ? { reason } : {}), ...(typeof message === 'string' ? { message } : {}) };
}

/**
 * Reads any error of a request into one shape, never throwing: a KubeApiError (numeric `code`,
 * `body` the apiserver's JSON Status text) or a network error (no code).
 */
export function apiErrorOf(error: unknown): ApiErrorInfo {
  const e = error as { code?: unknown; body?: unknown; message?: unknown };
  const code = typeof e?.code === 'number' ? e.code : undefined;
  const status = statusOf(e?.body);
  const message = status.message ?? (typeof e?.message === 'string' ? e.message : String(error));
  const reason = status.reason;
  return { code, reason, message: code === undefined ? message : `${code}${reason ? ` ${reason}` : ''}: ${message}` };
}
