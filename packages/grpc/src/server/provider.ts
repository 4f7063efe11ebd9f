import type { Metadata } from '@grpc/grpc-js';
import type * as m from '../wire/messages.js';
import type { PeerIdentity } from './identity.js';

/** What a provider method learns about the call besides its request. */
export interface CallContext {
  /** Request metadata (headers). */
  readonly metadata: Metadata;
  /** The caller's address, `ip:port`. */
  readonly peer: string;
  /** The verified client certificate's identity. */
  readonly client: PeerIdentity;
  /** When the caller gives up, or Infinity without a deadline. */
  readonly deadline: Date | number;
  /** Aborted when the caller cancels or the deadline passes: pass it on to slow work. */
  readonly signal: AbortSignal;
}

type Result<T> = Promise<m.MessageInit<T>> | m.MessageInit<T>;

/**
 * A provider, as a developer writes it: one async method per contract call. Requests arrive
 * decoded with every field present; responses may leave fields out. Throw
 * {@link SecretNotFoundError} for a missing secret, a {@link ProviderError} for any other status.
 * The optional methods default to UNIMPLEMENTED, except Validate (valid) and Capabilities
 * (READ_WRITE when pushSecret and deleteSecret exist, else READ_ONLY).
 */
export interface SecretStoreProvider {
  getSecret(request: m.GetSecretRequest, context: CallContext): Result<m.GetSecretResponse>;
  getSecretMap(request: m.GetSecretMapRequest, context: CallContext): Result<m.GetSecretMapResponse>;
  pushSecret?(request: m.PushSecretRequest, context: CallContext): Result<m.PushSecretResponse>;
  deleteSecret?(request: m.DeleteSecretRequest, context: CallContext): Result<m.DeleteSecretResponse>;
  secretExists?(request: m.SecretExistsRequest, context: CallContext): Result<m.SecretExistsResponse>;
  getAllSecrets?(request: m.GetAllSecretsRequest, context: CallContext): Result<m.GetAllSecretsResponse>;
  validate?(request: m.ValidateRequest, context: CallContext): Result<m.ValidateResponse>;
  capabilities?(request: m.CapabilitiesRequest, context: CallContext): Result<m.CapabilitiesResponse>;
}
