import { randomBytes } from 'node:crypto';
import { ConcurrencyLimit, type Instant } from '@eso-mtls/core';
import { apiErrorOf } from './api-error.js';
import { type Logger, silentLogger } from './logger.js';
import { type KubeRestClient, WriteFencedError, corePath } from './rest-client.js';

/** Event reasons we emit, in the style of cert-manager. */
export type EventReason =
  | 'Issued'
  | 'Rotated'
  | 'Failed'
  | 'Conflict'
  | 'WriteConflict'
  | 'WaitingForCA'
  | 'RotateRequestRefused'
  | 'NamesRefused'
  | 'NamespaceNotServed'
  | 'NamespaceNotAllowed'
  | 'PodCertificateIssued'
  | 'PodCertificateDenied'
  | 'PodCertificateFailed'
  | 'Pruned'
  | 'PruneFailed';

/**
 * The object an Event is about (its `involvedObject`): a labelled Service, the CA Secret in ESO's
 * namespace (for the CA's failures, which concern no Service), or a pod whose certificate request
 * was decided.
 */
export interface InvolvedObject {
  /** Default `Service`. */
  readonly kind?: 'Service' | 'Secret' | 'Pod';
  /** The object's namespace. */
  readonly namespace: string;
  /** The object's name. */
  readonly name: string;
  /** The object's uid, which ties the Event to this incarnation of it. */
  readonly uid?: string;
}

/** Options of {@link EventRecorder}. */
export interface EventRecorderOptions {
  readonly now: () => Instant;
  readonly logger?: Logger;
  /** Checked before each request, like Secret writes. */
  readonly writesAllowed?: () => boolean;
  /** `source.component` and `reportingComponent` (default `eso-mtls`). */
  readonly component?: string;
  /** `reportingInstance`, e.g. the pod name. */
  readonly instance?: string;
  /** Requests in flight at once (default 4). */
  readonly concurrency?: number;
  /** A repeat of the same Event within this window only raises its count (default 10 min). */
  readonly repeatWindowMs?: number;
}

/** What the recorder did. */
export interface EventRecorderStats {
  /** Events created. */
  created: number;
  /** Existing Events whose count was raised with a patch. */
  patched: number;
  /** Repeats folded into an existing Event's count without a request. */
  folded: number;
  /** Events that could not be written. */
  failed: number;
}

interface Sent {
  name: string;
  count: number;
  firstTimestamp: Instant;
  lastSent: Instant;
}

// What events.k8s.io allows a note, in UTF-8 bytes; core/v1 sets no bound of its own, we keep this one.
const MAX_MESSAGE_BYTES = 1024;
const MAX_REMEMBERED = 10_000;

/**
 * Emits core/v1 Events on Services (and on the CA Secret). Identical Events (same Service, reason and message) are
 * correlated as client-go's recorder does: the first is created, repeats raise `count` and are
 * patched onto it at most once per window, so a conflict reported every resync does not flood.
 * Requests run in the background; {@link flush} awaits them. Failures are logged, never thrown.
 */
export class EventRecorder {
  readonly stats: EventRecorderStats = { created: 0, patched: 0, folded: 0, failed: 0 };
  private readonly limiter: ConcurrencyLimit;
  private readonly sent = new Map<string, Sent>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly logger: Logger;

  constructor(
    private readonly api: KubeRestClient,
    private readonly options: EventRecorderOptions,
  ) {
    this.limiter = new ConcurrencyLimit(options.concurrency ?? 4);
    this.logger = options.logger ?? silentLogger;
  }

  /** Queues an Event on `object`. */
  record(object: InvolvedObject, type: 'Normal' | 'Warning', reason: EventReason, message: string): void {
    void this.send(object, type, reason, message);
  }

  /** {@link record}, resolving once the Event was sent, folded or failed (never rejects): for callers that coalesce while one is in flight. */
  send(object: InvolvedObject, type: 'Normal' | 'Warning', reason: EventReason, message: string): Promise<void> {
    if (this.options.writesAllowed && !this.options.writesAllowed()) return Promise.resolve();
    const text = eventMessage(message);
    const key = `${object.kind ?? 'Service'}/${object.namespace}/${object.name}/${reason}/${text}`;
    const now = this.options.now();
    const previous = this.sent.get(key);
    if (previous) {
      previous.count++;
      if (now - previous.lastSent < (this.options.repeatWindowMs ?? 600_000)) {
        this.stats.folded++;
        return Promise.resolve();
      }
      previous.lastSent = now;
      return this.track(this.patch(object, previous, key, type, reason, text, now));
    }
    const entry: Sent = { name: eventName(object.name, now), count: 1, firstTimestamp: now, lastSent: now };
    // Only warnings recur with the same text (a standing conflict); issuance messages carry their notAfter.
    if (type === 'Warning') this.remember(key, entry);
    return this.track(this.create(object, entry, type, reason, text, now));
  }

  /** Resolves when every queued Event request has finished. */
  async flush(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  private track(p: Promise<void>): Promise<void> {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
    return p;
  }

  private remember(key: string, entry: Sent): void {
    this.sent.set(key, entry);
    if (this.sent.size > MAX_REMEMBERED) this.sent.delete(this.sent.keys().next().value as string);
  }

  private async create(object: InvolvedObject, entry: Sent, type: string, reason: EventReason, message: string, now: Instant): Promise<void> {
    const component = this.options.component ?? 'eso-mtls';
    try {
      await this.limiter.run(() =>
        this.api.create(corePath('events', object.namespace), {
          apiVersion: 'v1',
          kind: 'Event',
          metadata: { name: entry.name, namespace: object.namespace },
          involvedObject: {
            apiVersion: 'v1',
            kind: object.kind ?? 'Service',
            namespace: object.namespace,
            name: object.name,
            ...(object.uid ? { uid: object.uid } : {}),
          },
          type,
          reason,
          message,
          source: { component },
          reportingComponent: component,
          ...(this.options.instance ? { reportingInstance: this.options.instance } : {}),
          firstTimestamp: rfc3339(entry.firstTimestamp),
          lastTimestamp: rfc3339(now),
          count: entry.count,
        }),
      );
      this.stats.created++;
    } catch (e) {
      this.fail(object, reason, e);
    }
  }

  private async patch(
    object: InvolvedObject,
    entry: Sent,
    key: string,
    type: 'Normal' | 'Warning',
    reason: EventReason,
    message: string,
    now: Instant,
  ): Promise<void> {
    try {
      await this.limiter.run(() => this.api.mergePatch(corePath('events', object.namespace, entry.name), { count: entry.count, lastTimestamp: rfc3339(now) }));
      this.stats.patched++;
    } catch (e) {
      if (apiErrorOf(e).code === 404) {
        // The Event expired (the apiserver keeps them for an hour by default): start a new one.
        this.sent.delete(key);
        await this.send(object, type, reason, message);
        return;
      }
      this.fail(object, reason, e);
    }
  }

  private fail(object: InvolvedObject, reason: EventReason, e: unknown): void {
    if (e instanceof WriteFencedError) return; // leadership lost: the new leader reports from now on
    this.stats.failed++;
    const about = object.kind === 'Secret' ? { secret: object.name } : object.kind === 'Pod' ? { pod: object.name } : { service: object.name };
    this.logger.warn({ namespace: object.namespace, ...about, reason, error: apiErrorOf(e).message }, 'could not record Event');
  }
}

/** `message` within {@link MAX_MESSAGE_BYTES}, cut on a character boundary and ending in `...` when longer. */
function eventMessage(message: string): string {
  if (Buffer.byteLength(message) <= MAX_MESSAGE_BYTES) return message;
  let bytes = 0;
  let end = 0;
  for (const ch of message) {
    bytes += Buffer.byteLength(ch);
    if (bytes > MAX_MESSAGE_BYTES - 3) break;
    end += ch.length;
  }
  return `${message.slice(0, end)}...`;
}

/** A metav1.Time: RFC 3339 in whole seconds, as the apiserver stores it. */
function rfc3339(t: Instant): string {
  return new Date(Math.floor(t / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** `<object name>.<time hex><random hex>`, like client-go's recorder: unique, and sorted by time. */
function eventName(object: string, now: Instant): string {
  return `${object}.${Math.max(0, Math.floor(now)).toString(16)}${randomBytes(4).toString('hex')}`;
}
