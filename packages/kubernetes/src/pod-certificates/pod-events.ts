import { truncateList } from '@eso-mtls/core';
import { type ScheduledTimer, type Timers, systemTimers } from '../runtime/clock.js';
import type { EventRecorder } from '../events/event-recorder.js';
import { type InvolvedObject, objectKey } from '../events/involved-object.js';

/** Issuances of one window on one object, waiting to be recorded as one Event. */
interface Batch {
  readonly about: InvolvedObject;
  readonly signer: string;
  readonly pods: string[];
  readonly services: readonly string[];
  notAfter: number;
}

/** Pod names listed in one Event; the rest are counted. */
const LISTED = 10;

/**
 * Normal `PodCertificateIssued` Events, coalesced: the issuances on one object (a provider's
 * first selecting Service, or ESO's client pod) become one Event naming the pods. A batch is sent
 * `windowMs` after its first issuance, and while an Event of the same object is still being sent,
 * the issuances meanwhile wait for it and go together in the next. So the Events follow issuance
 * as fast as the apiserver takes them, whatever the rate: a burst on one Service makes a few Events,
 * not one per pod queued behind each other. Failures are not coalesced here: each is recorded on
 * its pod at once.
 */
export class PodIssuanceEvents {
  // Issuances not handed to the recorder yet, by object.
  private readonly waiting = new Map<string, Batch>();
  // Objects with an Event being sent.
  private readonly sending = new Set<string>();
  private timer: ScheduledTimer | undefined;
  // Events being sent: flush may send a second of one object while its first is in flight.
  private inFlight = 0;
  // Callers of whenSent, resolved once nothing waits and nothing is being sent.
  private idle: (() => void)[] = [];

  constructor(
    private readonly events: EventRecorder,
    private readonly windowMs = 100,
    private readonly timers: Timers = systemTimers,
  ) {}

  /** Counts one issuance to `pod` on `about`, recorded with the others of its batch. */
  issued(about: InvolvedObject, signer: string, pod: string, services: readonly string[], notAfter: number): void {
    const key = `${objectKey(about)}/${signer}`;
    const batch = this.waiting.get(key);
    if (batch) {
      batch.pods.push(pod);
      batch.notAfter = Math.min(batch.notAfter, notAfter);
    } else {
      this.waiting.set(key, { about, signer, pods: [pod], services, notAfter });
    }
    if (!this.timer && !this.sending.has(key)) {
      this.timer = this.timers.setTimer(this.windowMs, () => {
        this.timer = undefined;
        this.sendWaiting(false);
      });
      this.timer.unref();
    }
  }

  /** Records every waiting batch now (the signer stopping), also of objects with an Event in flight. */
  flush(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.sendWaiting(true);
  }

  /**
   * Resolves once every issuance counted so far has its Event sent (or folded, or failed: the
   * recorder's send never rejects), the waiting batches included: as the last request finishes,
   * so that a benchmark can time how far the Events trail issuance.
   */
  whenSent(): Promise<void> {
    if (this.waiting.size === 0 && this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private sendWaiting(all: boolean): void {
    for (const key of [...this.waiting.keys()]) if (all || !this.sending.has(key)) this.send(key);
  }

  private send(key: string): void {
    const batch = this.waiting.get(key)!;
    this.waiting.delete(key);
    this.sending.add(key);
    this.inFlight++;
    void this.events.send(batch.about, 'Normal', 'PodCertificateIssued', issuedMessage(batch)).finally(() => {
      this.sending.delete(key);
      this.inFlight--;
      // What came meanwhile goes now: it has waited for this Event already.
      if (this.waiting.has(key)) this.send(key);
      else if (this.waiting.size === 0 && this.inFlight === 0) this.idle.splice(0).forEach((resolve) => resolve());
    });
  }
}

/** What a batch's Event says: which pods got certificates for what, from which signer, and the earliest notAfter. */
function issuedMessage(b: Batch): string {
  const pods = b.pods.length === 1 ? `pod ${truncateList(b.pods)}` : `${b.pods.length} pods (${truncateList(b.pods, LISTED)})`;
  const about = b.services.length > 0 ? `Services ${truncateList(b.services)}` : 'ESO core (client)';
  return `issued certificates for ${about} to ${pods} from ${b.signer}; valid until ${new Date(b.notAfter).toISOString()} at the earliest`;
}
