import type { RotationReason, SecretWrite } from '@eso-mtls/core';
import type { SecretComponent } from '../installation/ownership.js';

/** The rounds' callbacks for metrics and tests; each must be cheap and must not throw. */
export interface RoundHooks {
  /** A namespace's server certificate was issued and written (one call per issuance). */
  onRotation?(namespace: string, services: readonly string[], reason: RotationReason): void;
  /**
   * A namespace's server certificate could not be issued (key generation, signing) or written, its
   * trust bundle could not be written, or its Secret is in conflict.
   */
  onRotationFailure?(namespace: string, services: readonly string[]): void;
  /** A CA could not be generated or signed, the CA Secret could not be written, or a ClusterTrustBundle could not. */
  onCaRotationFailure?(): void;
  /** Every Secret write that succeeded: CA, client, server leaves and bundle updates. */
  onWrite?(write: SecretWrite): void;
  /** Pruning is on: a namespace's orphaned provider Secret was deleted, or its deletion failed (403, 5xx, network). */
  onSecretPruned?(namespace: string, result: 'deleted' | 'failed'): void;
  /** One of our writes was replaced by another controller within a reconcile interval (see WriteConflicts). */
  onWriteConflict?(component: SecretComponent, namespace: string): void;
}
