/** What an apiserver error says: HTTP code, Status reason (`AlreadyExists`, `Conflict`, ...), message and causes. */
export interface ApiErrorInfo {
  readonly code: number | undefined;
  readonly reason: string | undefined;
  readonly message: string;
  /** The reasons of the Status's `details.causes` (`NamespaceTerminating`, `FieldValueInvalid`, ...). */
  readonly causes: readonly string[];
  /** The Status's `details.retryAfterSeconds` (a 429 or 5xx saying when to try again; the apiserver sends it as Retry-After too). */
  readonly retryAfterSeconds?: number;
}

/** The `reason`, `message` and cause reasons of a JSON Status body (a string or already parsed); empty when it is not one. */
export function statusOf(body: unknown): { reason?: string; message?: string; causes?: string[]; retryAfterSeconds?: number } {
  let status: unknown = body;
  if (typeof body === 'string') {
    try {
      status = JSON.parse(body);
    } catch {
      return {};
    }
  }
  if (typeof status !== 'object' || status === null) return {};
  const { reason, message, details } = status as { reason?: unknown; message?: unknown; details?: { causes?: unknown; retryAfterSeconds?: unknown } };
  const causes = Array.isArray(details?.causes)
    ? details.causes.map((c: { reason?: unknown }) => c?.reason).filter((r): r is string => typeof r === 'string')
    : [];
  return {
    ...(typeof reason === 'string' ? { reason } : {}),
    ...(typeof message === 'string' ? { message } : {}),
    ...(causes.length > 0 ? { causes } : {}),
    ...(typeof details?.retryAfterSeconds === 'number' ? { retryAfterSeconds: details.retryAfterSeconds } : {}),
  };
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
  return {
    code,
    reason,
    message: code === undefined ? message : `${code}${reason ? ` ${reason}` : ''}: ${message}`,
    causes: status.causes ?? [],
    ...(status.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: status.retryAfterSeconds }),
  };
}

/**
 * True when the apiserver refused to create an object because its namespace is being deleted
 * (403 with cause `NamespaceTerminating`, from the NamespaceLifecycle admission plugin): expected
 * while a namespace goes away, not a failure. Updates and deletes are still allowed there.
 */
export const isNamespaceTerminating = (error: ApiErrorInfo): boolean => error.code === 403 && error.causes.includes('NamespaceTerminating');
