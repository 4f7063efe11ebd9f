import type { ProviderCallError } from '@eso-mtls/grpc';

/** The error `call` rejects with; fails the test when it resolves instead. */
export async function failureOf<E = ProviderCallError>(call: Promise<unknown>): Promise<E> {
  try {
    await call;
  } catch (e) {
    return e as E;
  }
  throw new Error('expected the call to fail, but it succeeded');
}
