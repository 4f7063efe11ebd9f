import { type Instant, type Snapshot, type WriteRefusal, type WriteRefusalReason, truncate } from '@eso-mtls/core';
import type { V1Secret } from '@kubernetes/client-node';

const MAX_DETAIL = 512;

/**
 * Whether the apiserver's answer to a failed write of a provider Secret will stand however often
 * it is retried: `immutable` when the Secret as planned from carries `immutable: true`, `refused`
 * for 400, 403 or 422 (an admission webhook or policy, RBAC, validation). Anything else (5xx, 429,
 * no answer) is transient: undefined. A 403 NamespaceTerminating never gets here (the writer's
 * `terminating` outcome).
 */
export function refusalOf(code: number | undefined, existing: Pick<V1Secret, 'immutable'> | undefined): WriteRefusalReason | undefined {
  if (code !== 400 && code !== 403 && code !== 422) return undefined;
  return existing?.immutable === true ? 'immutable' : 'refused';
}

/**
 * Since when each provider namespace's writes have been refused, for the core's CA rotation, which
 * stops waiting for it after a grace (docs/ca-rotation.md). Kept in memory: a restarted controller
 * or a new leader meets the refusal at its first write and waits one grace again, a bounded cost,
 * where a stamp on the Secret cannot be written. A transient failure neither starts nor ends a run
 * of refusals; a write that lands ends it, and so does the namespace leaving the snapshot.
 */
export class WriteRefusals {
  private readonly byNamespace = new Map<string, WriteRefusal>();

  /** A write of `namespace`'s Secret failed with `code`; remembered when it is a refusal. */
  failed(namespace: string, code: number | undefined, message: string, existing: V1Secret | undefined, now: Instant): void {
    const reason = refusalOf(code, existing);
    if (reason === undefined) return;
    const since = this.byNamespace.get(namespace)?.since ?? now;
    this.byNamespace.set(namespace, { since, reason, detail: truncate(message, MAX_DETAIL) });
  }

  /** A write of `namespace`'s Secret landed: it is writable again. */
  written(namespace: string): void {
    this.byNamespace.delete(namespace);
  }

  /** `snapshot` with each namespace's standing refusal; refusals of namespaces no longer in it are forgotten. */
  apply(snapshot: Snapshot): Snapshot {
    if (this.byNamespace.size === 0) return snapshot;
    const present = new Set(snapshot.namespaces.map((n) => n.namespace));
    for (const namespace of this.byNamespace.keys()) if (!present.has(namespace)) this.byNamespace.delete(namespace);
    const namespaces = snapshot.namespaces.map((n) => {
      const writesRefused = this.byNamespace.get(n.namespace);
      return writesRefused ? { ...n, writesRefused } : n;
    });
    return { ...snapshot, namespaces };
  }
}
