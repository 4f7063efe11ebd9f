import { status, type StatusObject } from '@grpc/grpc-js';

/**
 * The remote secret does not exist. A provider throws it to answer NOT_FOUND, as the contract
 * requires; the client raises it when a call ends in NOT_FOUND, so callers can tell "no such
 * secret" from a transport failure.
 */
export class SecretNotFoundError extends Error {
  /** Always `SecretNotFoundError`. */
  override readonly name = 'SecretNotFoundError';
  /** The gRPC status the server answers with. */
  readonly code = status.NOT_FOUND;
}

/** A failure with an explicit gRPC status, e.g. `new ProviderError(status.INVALID_ARGUMENT, 'key is empty')`. */
export class ProviderError extends Error {
  /** Always `ProviderError`. */
  override readonly name = 'ProviderError';
  /**
   * @param code - The gRPC status the server answers with.
   * @param message - The status details the caller sees.
   */
  constructor(
    readonly code: status,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

const isStatusCode = (c: unknown): c is status => typeof c === 'number' && Number.isInteger(c) && c > status.OK && c <= status.UNAUTHENTICATED;

/**
 * The gRPC status a provider's thrown value becomes: {@link SecretNotFoundError} is NOT_FOUND, an
 * error carrying a numeric gRPC `code` keeps it, anything else is INTERNAL with its message only
 * (a stack trace is for the provider's log, not for the caller).
 */
export function statusOfError(error: unknown): Pick<StatusObject, 'code' | 'details'> {
  if (error instanceof SecretNotFoundError) return { code: status.NOT_FOUND, details: error.message };
  const message = error instanceof Error ? error.message : String(error);
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (isStatusCode(code)) return { code, details: message };
  return { code: status.INTERNAL, details: message };
}

/** gRPC status codes, re-exported so a provider can throw `new ProviderError(status.X, ...)` without importing grpc-js. */
export { status } from '@grpc/grpc-js';
