import { randomBytes } from 'node:crypto';
import { ConcurrencyLimit, type Instant } from '@eso-mtls/core';
import { apiErrorOf } from '../client/api-error.js';
import { type Timers, systemTimers } from '../runtime/clock.js';
import { DroppedEvent, EVENT_RETRY_FOR_MS, EventRetries, MAX_EVENTS_WAITING } from './event-retry.js';
import { type InvolvedObject, kindOf, objectKey } from './involved-object.js';
import { type Logger, silentLogger } from '../runtime/logger.js';
import { type KubeRestClient, corePath } from '../client/rest-client.js';

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
  | 'LeftBehindByCaRotation'
  | 'CaRequested'
  | 'CaUpstreamProblem'
  | 'PodCertificateIssued'
  | 'PodCertificateDenied'
  | 'PodCertificateFailed'
  | 'PodCertificateRequestsNotHeld'
  | 'Pruned'
  | 'PruneFailed';

/** Options of {@link EventRecorder}. */
export interface EventRecorderOptions {
  readonly now: () => Instant;
  readonly logger?: Logger;
  /**
   * The fence, checked once when an Event is decided ({@link EventRecorder.send}, {@link EventRecorder.reportFailure}).
   * An Event decided goes out even if it closes before the request does: it reports what this replica did while it led.
   */
  readonly writesAllowed?: () => boolean;
  /** `source.component` and `reportingComponent` (default `eso-mtls`). */
  readonly component?: string;
  /** `reportingInstance`, e.g. the pod name. */
  readonly instance?: string;
  /** Requests in flight at once (default 4). */
  readonly concurrency?: number;
  /** A repeat of the same Event within this window only raises its count (default 10 min). */
  readonly repeatWindowMs?: number;
  /** Real elapsed time, for the waits between attempts and their bound (default the process's own). */
  readonly timers?: Timers;
  /** How long a write is retried after transient failures (default {@link EVENT_RETRY_FOR_MS}). */
  readonly retryForMs?: number;
  /** Events waiting to be retried at most (default {@link MAX_EVENTS_WAITING}); a write failing beyond it is given up. */
  readonly maxWaiting?: number;
}

/** What the recorder did. */
export interface EventRecorderStats {
  /** Events created. */
  created: number;
  /** Existing Events whose count was raised with a patch. */
  patched: number;
  /** Repeats folded into an existing Event's count without a request. */
  folded: number;
  /** Events that could not be written (each logged, or at stop once for all). */
  failed: number;
  /** Attempts sent again after a transient failure (no answer, 429, 5xx). */
  retried: number;
  /** Of {@link failed}: given up while retrying, because too many waited or the recorder stopped. */
  dropped: number;
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
 * Requests run in the background; {@link flush} awaits them. A write that gets no answer, a 429 or
 * a 5xx is sent again with backoff for up to {@link EVENT_RETRY_FOR_MS} (an apiserver restart
 * loses no Event), with at most {@link MAX_EVENTS_WAITING} waiting. Failures are counted and
 * logged, never thrown.
 */
export class EventRecorder {
  readonly stats: EventRecorderStats = { created: 0, patched: 0, folded: 0, failed: 0, retried: 0, dropped: 0 };
  private readonly limiter: ConcurrencyLimit;
  private readonly sent = new Map<string, Sent>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly logger: Logger;
  private readonly retries: EventRetries;

  constructor(
    private readonly api: KubeRestClient,
    private readonly options: EventRecorderOptions,
  ) {
    this.limiter = new ConcurrencyLimit(options.concurrency ?? 4);
    this.logger = options.logger ?? silentLogger;
    this.retries = new EventRetries(this.limiter, {
      timers: options.timers ?? systemTimers,
      retryForMs: options.retryForMs ?? EVENT_RETRY_FOR_MS,
      maxWaiting: options.maxWaiting ?? MAX_EVENTS_WAITING,
      onRetry: () => this.stats.retried++,
    });
  }

  /** Queues an Event on `object`. */
  record(object: InvolvedObject, type: 'Normal' | 'Warning', reason: EventReason, message: string): void {
    void this.send(object, type, reason, message);
  }

  /** {@link record}, resolving once the Event was sent, folded or failed (never rejects): for callers that coalesce while one is in flight. */
  send(object: InvolvedObject, type: 'Normal' | 'Warning', reason: EventReason, message: string): Promise<void> {
    if (!this.allowed()) return Promise.resolve();
    return this.dispatch(object, type, reason, message);
  }

  /**
   * A failure's counter and its Warning Events on `objects`, both or neither, on one check of the
   * fence. The counter is the controller's (a hook), the Events are ours; checked apart, a replica
   * losing its Lease between the two counted a failure whose Event never went out (the soak saw
   * 33 failures against 32 Events). Now a replica that no longer leads counts nothing and records
   * nothing (the new leader plans again and reports what it meets), and one that leads does both;
   * its Events go out even if the Lease is lost before they are sent. Returns whether it did.
   */
  reportFailure(count: () => void, objects: Iterable<InvolvedObject>, reason: EventReason, message: string): boolean {
    if (!this.allowed()) return false;
    count();
    for (const object of objects) void this.dispatch(object, 'Warning', reason, message);
    return true;
  }

  /**
   * Resolves when every queued Event request has finished, retries included (at most
   * {@link EVENT_RETRY_FOR_MS} after the last failure began them).
   */
  async flush(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  /**
   * Stops retrying: the Events waiting for another attempt are given up at once (counted as failed
   * and dropped, logged in one line), and those in flight get no further attempt; then {@link flush}.
   * Shutdown so does not wait out the retry bound.
   */
  async stop(): Promise<void> {
    const given = this.retries.stop();
    await this.flush();
    if (given.length === 0) return;
    const objects = given.slice(0, 10).map((o) => `${kindOf(o)} ${o.namespace}/${o.name}`);
    // The message of every Event not written, so one search finds them all (the soak's does).
    this.logger.warn({ events: given.length, objects, error: 'stopping while they waited to be retried' }, 'could not record Event');
  }

  private allowed(): boolean {
    return !this.options.writesAllowed || this.options.writesAllowed();
  }

  /** An Event already decided on (past the fence): folded into a repeat, patched onto it, or created. */
  private dispatch(object: InvolvedObject, type: 'Normal' | 'Warning', reason: EventReason, message: string): Promise<void> {
    const text = eventMessage(message);
    const key = `${objectKey(object)}/${reason}/${text}`;
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
    // AlreadyExists on a retry: the attempt that got no answer landed (the name is ours alone).
    const landed = (e: unknown): boolean => {
      const { code, reason: status } = apiErrorOf(e);
      return code === 409 && status === 'AlreadyExists';
    };
    try {
      await this.retries.attempt(object, landed, () =>
        this.api.create(corePath('events', object.namespace), {
          apiVersion: 'v1',
          kind: 'Event',
          metadata: { name: entry.name, namespace: object.namespace },
          involvedObject: {
            apiVersion: 'v1',
            kind: kindOf(object),
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
      // The patch sets count and lastTimestamp: sending it twice does no harm.
      await this.retries.attempt(
        object,
        () => false,
        () => this.api.mergePatch(corePath('events', object.namespace, entry.name), { count: entry.count, lastTimestamp: rfc3339(now) }),
      );
      this.stats.patched++;
    } catch (e) {
      if (apiErrorOf(e).code === 404) {
        // The Event expired (the apiserver keeps them for an hour by default): start a new one.
        this.sent.delete(key);
        await this.dispatch(object, type, reason, message);
        return;
      }
      this.fail(object, reason, e);
    }
  }

  /** The one accounting path of an Event not written: counted, and logged with namespace and object (stop() logs its own once). */
  private fail(object: InvolvedObject, reason: EventReason, e: unknown): void {
    this.stats.failed++;
    if (e instanceof DroppedEvent) {
      this.stats.dropped++;
      if (e.atStop) return;
    }
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
