import { shownList } from '@eso-mtls/core';
import { type ScheduledTimer, type Timers, systemTimers } from './clock.js';
import type { EventRecorder, ServiceReference } from './event-recorder.js';

/** Issuances of one window on one object, waiting to be recorded as one Event. */
interface Batch {
  readonly about: ServiceReference;
  readonly signer: string;
  readonly pods: string[];
  readonly services: readonly string[];
  notAfter: number;
}

/** Pod names listed in one Event; the rest are counted. */
const LISTED = 10;

/**
 * Normal `PodCertificateIssued` Events, coalesced: the issuances on one object (a provider's
 * first selecting Service, or ESO's client pod) within `windowMs` of the first become one Event
 * naming the pods. A thousand pods issued in a burst make about one Event per Service and window,
 * sent right after the window, instead of a thousand that trail issuance by seconds. Failures are
 * not coalesced here: each is recorded on its pod at once.
 */
export class PodIssuanceEvents {
  private readonly batches = new Map<string, Batch>();
  private timer: ScheduledTimer | undefined;

  constructor(
    private readonly events: EventRecorder,
    private readonly windowMs = 500,
    private readonly timers: Timers = systemTimers,
  ) {}

  /** Counts one issuance to `pod` on `about`, recorded at the end of the window. */
  issued(about: ServiceReference, signer: string, pod: string, services: readonly string[], notAfter: number): void {
    const key = `${about.kind ?? 'Service'}/${about.namespace}/${about.name}/${signer}`;
    const batch = this.batches.get(key);
    if (batch) {
      batch.pods.push(pod);
      batch.notAfter = Math.min(batch.notAfter, notAfter);
    } else {
      this.batches.set(key, { about, signer, pods: [pod], services, notAfter });
    }
    if (!this.timer) {
      this.timer = this.timers.setTimer(this.windowMs, () => this.flush());
      this.timer.unref();
    }
  }

  /** Records every waiting batch now (end of a window, or the signer stopping). */
  flush(): void {
    this.timer?.cancel();
    this.timer = undefined;
    const batches = [...this.batches.values()];
    this.batches.clear();
    for (const b of batches) this.events.record(b.about, 'Normal', 'PodCertificateIssued', issuedMessage(b));
  }
}

/** What a batch's Event says: which pods got certificates for what, from which signer, and the earliest notAfter. */
function issuedMessage(b: Batch): string {
  const pods = b.pods.length === 1 ? `pod ${shownList(b.pods)}` : `${b.pods.length} pods (${shownList(b.pods, LISTED)})`;
  const about = b.services.length > 0 ? `Services ${shownList(b.services)}` : 'ESO core (client)';
  return `issued certificates for ${about} to ${pods} from ${b.signer}; valid until ${new Date(b.notAfter).toISOString()} at the earliest`;
}
