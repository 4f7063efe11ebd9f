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
 * Only getSecret is required. A method left out answers UNIMPLEMENTED, except Validate (valid) and
 * Capabilities (READ_WRITE when pushSecret and deleteSecret exist, else READ_ONLY).
 */
export interface SecretStoreProvider {
  /** One remote secret's value. Required. */
  getSecret(request: m.GetSecretRequest, context: CallContext): Result<m.GetSecretResponse>;
  /** One remote secret as a map of keys to values. */
  getSecretMap?(request: m.GetSecretMapRequest, context: CallContext): Result<m.GetSecretMapResponse>;
  /** Writes a Kubernetes Secret's data to the remote store. */
  pushSecret?(request: m.PushSecretRequest, context: CallContext): Result<m.PushSecretResponse>;
  /** Deletes a pushed remote secret. */
  deleteSecret?(request: m.DeleteSecretRequest, context: CallContext): Result<m.DeleteSecretResponse>;
  /** Whether a pushed remote secret exists. */
  secretExists?(request: m.SecretExistsRequest, context: CallContext): Result<m.SecretExistsResponse>;
  /** Every remote secret the `find` selects. */
  getAllSecrets?(request: m.GetAllSecretsRequest, context: CallContext): Result<m.GetAllSecretsResponse>;
  /** Checks the store's configuration; left out, every configuration is valid. */
  validate?(request: m.ValidateRequest, context: CallContext): Result<m.ValidateResponse>;
  /** What the store can do; left out, derived from the methods present. */
  capabilities?(request: m.CapabilitiesRequest, context: CallContext): Result<m.CapabilitiesResponse>;
}
