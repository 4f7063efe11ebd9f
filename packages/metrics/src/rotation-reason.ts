import { MetricLabelError } from './labels.js';

/**
 * Why a server certificate was issued: the core's rotation reasons, one per trigger, and the
 * only values of the `reason` label of `eso_provider_certificate_rotation_total`.
 */
export const ROTATION_REASONS = Object.freeze([
  'initial', 'expiring', 'dns_changed', 'secret_missing', 'ca_rotated', 'ca_mismatch', 'invalid', 'forced',
] as const);

/** One of the {@link ROTATION_REASONS}. */
export type RotationReason = (typeof ROTATION_REASONS)[number];

/** True when `value` is one of the {@link ROTATION_REASONS}. */
export function isRotationReason(value: unknown): value is RotationReason {
  return (ROTATION_REASONS as readonly unknown[]).includes(value);
}

/** Throws {@link MetricLabelError} naming `value` unless it is a {@link RotationReason}. */
export function assertRotationReason(value: unknown): asserts value is RotationReason {
  if (!isRotationReason(value)) {
    throw new MetricLabelError(`rotation reason ${JSON.stringify(value)} is not one of ${ROTATION_REASONS.join(', ')}; an unbounded reason label would multiply series, so pass one of these`);
  }
}
