import { truncate } from '../common/truncate.js';
import { type Duration, type Instant, formatDuration } from '../common/time.js';
import type { Policy } from '../policy/policy.js';
import type { CertificateView } from '../x509/certificate.js';
import { PROVIDER_SECRET_NAME } from '../x509/names.js';
import type { ObservedBundle } from '../secret/observe.js';
import type { WriteRefusal } from '../secret/snapshot.js';
import type { CaLayout } from './ca-layout.js';
import { anchorOf } from '../x509/ca-path.js';

/*
 * A provider namespace whose Secret the controller cannot write must not hold every other
 * namespace's CA rotation (docs/ca-rotation.md, "A provider Secret the controller cannot write").
 * The adapter says since when a namespace's writes have been refused for a reason retrying cannot
 * change; these rules say when the rotation stops waiting for it, and when it is reported.
 */

/**
 * How long refused writes still hold the CA rotation: one propagationDelay, as long as every other
 * bundle waits anyway, plus one reconcileInterval of retries, so a refusal that passes (a webhook
 * redeployed, a policy fixed) costs a short wait and never a namespace left behind.
 */
export function refusalGrace(policy: Pick<Policy, 'propagationDelay' | 'reconcileInterval'>): Duration {
  return policy.propagationDelay + policy.reconcileInterval;
}

/**
 * True when refused writes are some tenants' problem, not the cluster's: at least one of the served
 * provider namespaces (one entry each, undefined when not refused) is written. When every one is
 * refused (RBAC or an admission policy broken for all), going on would break every provider and
 * help none, so nobody is left behind and the rotation waits, as for any failure.
 */
export function refusalsAreLocal(refusals: readonly (WriteRefusal | undefined)[]): boolean {
  return refusals.some((r) => r === undefined);
}

/** When a bundle whose writes are refused stops holding the rotation; undefined while its writes are not refused. */
export function leftBehindFrom(
  bundle: Pick<ObservedBundle, 'refusedSince'>,
  policy: Pick<Policy, 'propagationDelay' | 'reconcileInterval'>,
): Instant | undefined {
  return bundle.refusedSince === undefined ? undefined : bundle.refusedSince + refusalGrace(policy);
}

/** True once a bundle's writes have been refused for {@link refusalGrace}: the next CA no longer waits for it. */
export function isLeftBehind(
  bundle: Pick<ObservedBundle, 'refusedSince'>,
  now: Instant,
  policy: Pick<Policy, 'propagationDelay' | 'reconcileInterval'>,
): boolean {
  const from = leftBehindFrom(bundle, policy);
  return from !== undefined && now >= from;
}

/**
 * True when `bundle` (undefined: absent or unreadable) lacks the anchor of the CA that signs after
 * the plan or the one about to: a provider holding it refuses ESO's client certificate once that CA signs it.
 */
export function lacksSigningCa(bundle: readonly CertificateView[] | undefined, layout: CaLayout): boolean {
  return [layout.active, layout.next].some((m) => m !== undefined && (m.kind === 'generate' || !(bundle ?? []).some((c) => c.pem === anchorOf(m.keyed).pem)));
}

/** The Event and log text of a namespace left behind: what happened, what breaks, and what its owner can do. */
export function leftBehindMessage(namespace: string, refusal: WriteRefusal, policy: Pick<Policy, 'propagationDelay' | 'reconcileInterval'>): string {
  const secret = PROVIDER_SECRET_NAME;
  const why =
    refusal.reason === 'immutable'
      ? `Secret ${secret} is marked immutable: true, so its ca.crt cannot take the new CA`
      : `every write to Secret ${secret} has been refused (${truncate(refusal.detail, 256)})`;
  const fix =
    refusal.reason === 'immutable'
      ? `Delete the Secret (immutable cannot be unset); the controller writes it again at once, without immutable, and restart the provider's pods, which keep the deleted Secret's files`
      : `Lift the policy or permission that refuses the write; the controller writes the Secret at its next retry`;
  return (
    `namespace ${namespace} is left behind by the CA rotation: ${why} since ${new Date(refusal.since).toISOString()}, ` +
    `and the other namespaces stopped waiting for it after ${formatDuration(refusalGrace(policy))}. ` +
    `Its provider refuses ESO's client certificate once the new CA signs it. ${fix}. ` +
    `The controller never deletes it (docs/ca-rotation.md#a-provider-secret-the-controller-cannot-write).`
  );
}
