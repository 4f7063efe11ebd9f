import type { Timers } from '../runtime/clock.js';
import type { EventRecorder } from '../events/event-recorder.js';
import type { CacheBoundScope } from '../informers/informer-store.js';
import type { CacheBound } from '../installation/installation.js';
import type { Logger } from '../runtime/logger.js';
import { OncePerWindow } from '../runtime/once-per-window.js';
import type { PodCertificateRequest } from './pod-requests.js';

/** The pending requests the signer holds at most, per namespace and in all, unless configured. */
export const DEFAULT_PENDING_BOUND: CacheBound = Object.freeze({ perNamespace: 1_000, total: 10_000 });

/**
 * Reports the requests the pending bound keeps out of memory: one warning and one Event (on the
 * request's pod) per namespace and window, however many requests it refused meanwhile. The
 * requests themselves are untouched: they stay pending in the API, and the informer lists them
 * again once room is made. Denying them instead would be final for their pods (the kubelet never
 * asks again after a denial).
 */
export class NotHeldReports {
  private readonly once: OncePerWindow;

  constructor(
    private readonly deps: { readonly events: EventRecorder; readonly logger: Logger; readonly timers: Timers },
    private readonly bound: CacheBound,
    windowMs: number,
  ) {
    this.once = new OncePerWindow(windowMs, deps.timers);
  }

  /** One request kept out by `scope`'s bound. */
  notHeld(request: PodCertificateRequest, scope: CacheBoundScope, signer: string): void {
    const namespace = request.metadata?.namespace ?? '';
    if (!this.once.first(namespace)) return;
    const message = notHeldMessage(scope, this.bound, namespace);
    this.deps.logger.warn({ namespace, signer, bound: scope, request: request.metadata?.name }, message);
    const pod = { kind: 'Pod' as const, namespace, name: request.spec?.podName ?? '', uid: request.spec?.podUID };
    this.deps.events.record(pod, 'Warning', 'PodCertificateRequestsNotHeld', `PodCertificateRequest ${request.metadata?.name ?? ''}: ${message}`);
  }
}

/** Why a request waits unheld, and what happens to it. */
export function notHeldMessage(scope: CacheBoundScope, bound: CacheBound, namespace: string): string {
  const full =
    scope === 'namespace'
      ? `namespace ${namespace} has ${bound.perNamespace} pending requests held already (--pod-certificate-max-pending-per-namespace)`
      : `the signer holds ${bound.total} pending requests in all already (--pod-certificate-max-pending)`;
  return `pending pod certificate requests not held: ${full}; they stay pending and are decided as the held ones are, in turn`;
}
