import { type Instant, type Issued, type SecretState, days } from '@eso-mtls/core';
import { type CaRotationInput } from '../../src/ca/ca-phases.js';
import { type Pki, T0 } from './planner.js';

/** The CAs the CA-rotation tests plan with, and a leaf of the oldest. */
export interface CaGenerations {
  /** Issued at T0 - 200d: expires at T0 + 165d. */
  readonly old: Issued;
  readonly active: Issued;
  readonly next: Issued;
  /** A leaf for `a`, signed by `old`. */
  readonly leafOld: Issued;
}

/** Issues the generations always in this order, so the seeded serial numbers match across suites. */
export async function issueCaGenerations(pki: Pki): Promise<CaGenerations> {
  const old = await pki.ca(T0 - days(200), 'old-ca');
  const active = await pki.ca(T0, 'active-ca');
  const next = await pki.ca(T0 + days(305), 'next-ca');
  const leafOld = await pki.server(old, T0 - days(10), ['a']);
  return { old, active, next, leafOld };
}

/** A CA Secret this installation wrote, holding `data`; `extra` overrides any field. */
export function managedCaSecret(data: Record<string, string>, extra: Partial<SecretState> = {}): SecretState {
  return { data, ownership: 'managed', annotations: {}, version: '7', ...extra };
}

/** What planCaRotation reads at `now`: nothing but `overrides` (no client bundle, no leaves, no bundles). */
export function caRotationInput(pki: Pki, now: Instant, overrides: Partial<CaRotationInput>): CaRotationInput {
  return { now, policy: pki.policy, cache: pki.cache, clientBundle: [], leavesInUse: [], bundles: [], ...overrides };
}
