import { type MemoryStore, type ProviderService, ROTATE_ANNOTATION } from '@eso-mtls/core';

/**
 * Asks the controller to rotate one Service's leaf now, as `kubectl annotate service <name>
 * eso-mtls.io/rotate=<token> --overwrite` would: the planner re-issues the namespace's leaf once it
 * sees a token it has not served. The demo's scenario and `eso-mtls dev-certs` force rotations this
 * one way; the caller pokes the loop after.
 */
export function forceServiceRotation(store: MemoryStore, namespace: string, service: string, token: string): void {
  editServices(store, namespace, (s) => (s.name === service ? { ...s, rotateRequest: token } : s));
}

/**
 * Asks for a rotation of ESO's client leaf or, for `ca`, an overlap CA rotation (prepare, activate,
 * retire), by annotating its Secret. Returns false when the Secret does not exist yet.
 */
export function forceSecretRotation(store: MemoryStore, target: 'ca' | 'client', token: string): boolean {
  const state = store.get(target);
  if (state === undefined) return false;
  store.put(target, { data: state.data, ownership: state.ownership, annotations: { ...state.annotations, [ROTATE_ANNOTATION]: token } });
  return true;
}

/** Rewrites a namespace's labelled Services: `edit` returns a Service to keep, or undefined to unlabel it; `add` labels one more. */
export function editServices(store: MemoryStore, namespace: string, edit: (s: ProviderService) => ProviderService | undefined, add?: ProviderService): void {
  const services = store.servicesOf(namespace).flatMap((s) => edit(s) ?? []);
  store.setServices(namespace, add === undefined ? services : [...services, add]);
}
