import * as grpc from '@grpc/grpc-js';
import type { ProviderMethodName } from '../wire/service.js';

/** A call that failed with a gRPC status other than NOT_FOUND, after any retries. */
export class ProviderCallError extends Error {
  override readonly name: string = 'ProviderCallError';
  constructor(
    readonly method: ProviderMethodName,
    readonly code: grpc.status,
    readonly details: string,
    readonly attempts: number,
    options?: ErrorOptions,
  ) {
    super(`provider.v1 ${method} failed with ${grpc.status[code] ?? code} after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${details}`, options);
  }
}
