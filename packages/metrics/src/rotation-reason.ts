import { ROTATION_REASONS, type RotationReason } from '@eso-mtls/core';
import { MetricLabelError } from './labels.js';

/** True when `value` is one of the core's `ROTATION_REASONS`, the only values of the `reason` label. */
export function isRotationReason(value: unknown): value is RotationReason {
  return (ROTATION_REASONS as readonly unknown[]).includes(value);
}

/** Throws {@link MetricLabelError} naming `value` unless it is one of the core's `ROTATION_REASONS`. */
export function assertRotationReason(value: unknown): asserts value is RotationReason {
  if (!isRotationReason(value)) {
    throw new MetricLabelError(
      `rotation reason ${JSON.stringify(value)} is not one of ${ROTATION_REASONS.join(', ')}; an unbounded reason label would multiply series, so pass one of these`,
    );
  }
}
