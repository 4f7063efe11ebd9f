import { type Instant, PROVIDER_SECRET_NAME, describeTarget } from '@eso-mtls/core';
import type { V1Secret } from '@kubernetes/client-node';
import { apiErrorOf } from '../client/api-error.js';
import type { EventRecorder } from '../events/event-recorder.js';
import type { Logger } from '../runtime/logger.js';
import { classifyOwnership } from '../installation/ownership.js';
import { type KubeRestClient, WriteFencedError, corePath } from '../client/rest-client.js';
import type { BuiltSnapshot } from './snapshot-builder.js';

/**
 * The shortest grace accepted: longer than a redeploy (a Service deleted and created again), a
 * GitOps sync or a Helm rollback, so none of them ever costs a provider its key.
 */
export const MIN_PRUNE_GRACE = 3_600_000;

// An apiserver's message may quote what it refused: bounded in logs and Events.
const MAX_ERROR = 1024;

/** What {@link OrphanPruner} needs. */
export interface PrunerOptions {
  readonly api: KubeRestClient;
  /** Our installation: only a Secret classified `managed` for it is ever deleted. */
  readonly installation: string;
  /** How long a managed Secret must have stood, unchanged, in a namespace without labelled Services. */
  readonly graceMs: number;
  /** After a failed deletion, the next attempt waits this long (the reconcile interval): one report per interval. */
  readonly retryAfterMs: number;
  /** The live Service cache, asked again right before each DELETE. */
  readonly hasLabelledService: (namespace: string) => boolean;
  readonly events: EventRecorder;
  readonly logger: Logger;
  /** Told of each deletion and each failed one (the metric). */
  readonly onPruned?: (namespace: string, result: 'deleted' | 'failed') => void;
}

/** One Secret waiting out its grace: the exact version seen, since when, and when a failed delete may be retried. */
interface Orphan {
  readonly uid: string;
  readonly resourceVersion: string;
  readonly since: Instant;
  retryAt?: Instant;
}

/**
 * Deletes our `external-secrets-provider-tls` Secrets in namespaces that have had no labelled
 * Service for the grace period (opt-in). The orphan time is measured from the first reconcile
 * that saw this exact Secret version without a labelled Service, and starts again on any labelled
 * Service event in the namespace (add, change, unlabel, delete, or a relist that finds one) and
 * on any change to the Secret. It is held in memory: a restart or a new leader starts it again,
 * which only lengthens the wait. The DELETE carries the uid and resourceVersion that were
 * classified `managed`, so a Secret changed since is refused by the apiserver (409), never deleted.
 */
export class OrphanPruner {
  private readonly orphans = new Map<string, Orphan>();

  constructor(private readonly options: PrunerOptions) {}

  /** A labelled Service of `namespace` appeared, changed or went: its orphan time starts again. */
  serviceChanged(namespace: string): void {
    this.orphans.delete(namespace);
  }

  /**
   * One pass over a round's snapshot: starts, keeps or ends each namespace's orphan time, and
   * deletes the Secrets whose grace has passed. Stops at the first closed fence.
   */
  async prune(built: BuiltSnapshot, now: Instant, writesAllowed: () => boolean): Promise<void> {
    const candidates = this.candidates(built);
    for (const namespace of this.orphans.keys()) if (!candidates.has(namespace)) this.orphans.delete(namespace);
    for (const [namespace, secret] of candidates) {
      const orphan = this.observe(namespace, secret, now);
      if (!orphan || !this.due(orphan, now)) continue;
      if (this.options.hasLabelledService(namespace)) {
        this.orphans.delete(namespace);
        continue;
      }
      if (!writesAllowed() || (await this.delete(namespace, orphan, now)) === 'fenced') return;
    }
  }

  /** Namespaces with no labelled Service whose Secret, at its cached version, is ours. */
  private candidates(built: BuiltSnapshot): Map<string, V1Secret> {
    const found = new Map<string, V1Secret>();
    for (const ns of built.snapshot.namespaces) {
      if (ns.services.length > 0 || ns.secret?.ownership !== 'managed') continue;
      const secret = built.secrets.get(describeTarget({ namespace: ns.namespace }));
      // The ownership of the very object whose uid and resourceVersion go into the DELETE.
      if (secret && classifyOwnership(secret, 'provider-tls', this.options.installation) === 'managed') found.set(ns.namespace, secret);
    }
    return found;
  }

  /** The namespace's orphan record, started now if the Secret is new to it or changed. */
  private observe(namespace: string, secret: V1Secret, now: Instant): Orphan | undefined {
    const uid = secret.metadata?.uid;
    const resourceVersion = secret.metadata?.resourceVersion;
    if (!uid || !resourceVersion) return undefined;
    const known = this.orphans.get(namespace);
    if (known && known.uid === uid && known.resourceVersion === resourceVersion) return known;
    this.orphans.set(namespace, { uid, resourceVersion, since: now });
    return undefined;
  }

  private due(orphan: Orphan, now: Instant): boolean {
    return now - orphan.since >= this.options.graceMs && (orphan.retryAt === undefined || now >= orphan.retryAt);
  }

  /** One DELETE with preconditions; each outcome is reported by its own branch. */
  private async delete(namespace: string, orphan: Orphan, now: Instant): Promise<'deleted' | 'fenced' | 'kept'> {
    const { api, logger } = this.options;
    const path = corePath('secrets', namespace, PROVIDER_SECRET_NAME);
    const preconditions = { uid: orphan.uid, resourceVersion: orphan.resourceVersion };
    const fields = { namespace, secret: PROVIDER_SECRET_NAME, orphanedSince: new Date(orphan.since).toISOString() };
    try {
      await api.request('DELETE', path, { body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions } });
    } catch (e) {
      if (e instanceof WriteFencedError) return 'fenced';
      const { code, message } = apiErrorOf(e);
      const error = { code, message: message.length > MAX_ERROR ? `${message.slice(0, MAX_ERROR - 3)}...` : message };
      if (error.code === 409 || error.code === 404) {
        // Changed or deleted since it was classified: the watch brings the new state, judged afresh.
        this.orphans.delete(namespace);
        logger.info({ ...fields, code: error.code, error: error.message }, 'orphaned Secret changed or went since it was observed; not deleted');
        return 'kept';
      }
      this.failed(namespace, orphan, now, error);
      return 'kept';
    }
    // Until the watch removes it from the cache, the next round starts a new grace: never deleted twice.
    this.orphans.delete(namespace);
    this.options.onPruned?.(namespace, 'deleted');
    const hours = Math.round(((now - orphan.since) / 3_600_000) * 10) / 10;
    logger.info(fields, 'orphaned provider Secret deleted: its namespace has had no labelled Service for the grace period');
    this.options.events.record(
      { kind: 'Secret', namespace, name: PROVIDER_SECRET_NAME, uid: orphan.uid },
      'Normal',
      'Pruned',
      `Deleted Secret ${PROVIDER_SECRET_NAME}: namespace ${namespace} has had no Service labelled external-secrets.io/provider=true for ${hours}h (since ${fields.orphanedSince})`,
    );
    return 'deleted';
  }

  /** The accounting path of a deletion that failed (403, 5xx, network): counter, error line, Warning Event; retried an interval later. */
  private failed(namespace: string, orphan: Orphan, now: Instant, error: { code: number | undefined; message: string }): void {
    const { logger, events, onPruned, retryAfterMs } = this.options;
    orphan.retryAt = now + retryAfterMs;
    onPruned?.(namespace, 'failed');
    const hint =
      error.code === 403 ? ': the controller needs delete on Secrets named external-secrets-provider-tls (deploy/overlays/prune-orphaned-secrets)' : '';
    logger.error({ namespace, secret: PROVIDER_SECRET_NAME, code: error.code, error: error.message }, `deleting an orphaned provider Secret failed${hint}`);
    events.record(
      { kind: 'Secret', namespace, name: PROVIDER_SECRET_NAME, uid: orphan.uid },
      'Warning',
      'PruneFailed',
      `Could not delete orphaned Secret ${PROVIDER_SECRET_NAME}: ${error.message}${hint}`,
    );
  }
}
