import { ConcurrencyLimit } from '@eso-mtls/core';

/** @deprecated Since 0.2: the core's {@link ConcurrencyLimit}, the one limiter of the project. */
export const Limiter = ConcurrencyLimit;
/** @deprecated Since 0.2: see {@link ConcurrencyLimit}. */
export type Limiter = ConcurrencyLimit;
