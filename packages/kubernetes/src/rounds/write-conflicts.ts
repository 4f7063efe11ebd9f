import { type Instant, type SecretTarget, describeTarget, truncate } from '@eso-mtls/core';
import type { V1Secret } from '@kubernetes/client-node';
import { type WriterStamp, writerOf } from '../installation/ownership.js';

/** One of our writes that another controller replaced. */
export interface WriteConflict {
  readonly target: SecretTarget;
  /** The Secret as it is now, written by the other controller. */
  readonly secret: V1Secret;
  /** When our write landed. */
  readonly ourWriteAt: Instant;
  /** The other writer's identity and policy fingerprint, as its annotations say (bounded in size). */
  readonly writer: { readonly identity: string; readonly policy: string | undefined };
  /** Until when we leave this Secret alone. */
  readonly holdUntil: Instant;
}

interface OurWrite {
  readonly target: SecretTarget;
  readonly resourceVersion: string;
  readonly at: Instant;
}

/**
 * True when a Secret we wrote at `ours` now carries another writer's stamp, within one interval of
 * our write: two controllers are writing one installation's Secrets. A change that keeps our stamp
 * (a label added by hand, an older release's write) is not a conflict; neither is a write found later.
 */
export function replacedBy(secret: V1Secret, ours: OurWrite, identity: string, now: Instant, intervalMs: number): WriteConflict['writer'] | undefined {
  if (secret.metadata?.resourceVersion === ours.resourceVersion || now - ours.at > intervalMs) return undefined;
  const writer = writerOf(secret);
  if (!writer || writer.identity === identity) return undefined;
  // The annotations are on Secrets a tenant may edit: what we repeat of them is bounded.
  return { identity: truncate(writer.identity), policy: writer.policy === undefined ? undefined : truncate(writer.policy) };
}

/**
 * Who yields when two controllers write one installation's Secrets: the one that finds its write
 * replaced by another writer within one reconcile interval reports it and leaves that Secret alone
 * for one interval. Each contested Secret is then written at most twice per interval (once by
 * each), never in a loop, while the Event, the metric and the alert say who fights.
 */
export class WriteConflicts {
  private readonly ours = new Map<string, OurWrite>();
  private readonly held = new Map<string, Instant>();

  constructor(
    /** Our own stamp, as {@link SecretWriter} writes it. */
    readonly stamp: WriterStamp,
    private readonly intervalMs: number,
  ) {}

  /** Remembers one of our writes that landed. */
  wrote(target: SecretTarget, secret: V1Secret, at: Instant): void {
    const resourceVersion = secret.metadata?.resourceVersion;
    if (resourceVersion !== undefined) this.ours.set(describeTarget(target), { target, resourceVersion, at });
  }

  /**
   * The conflicts new since the last call, from a round's Secrets (keyed as describeTarget): each
   * is reported once, and its Secret held for one interval. Writes older than an interval are forgotten.
   */
  observe(secrets: ReadonlyMap<string, V1Secret>, now: Instant): WriteConflict[] {
    const found: WriteConflict[] = [];
    for (const [key, ours] of this.ours) {
      const secret = secrets.get(key);
      const writer = secret && replacedBy(secret, ours, this.stamp.identity, now, this.intervalMs);
      if (writer) {
        const holdUntil = now + this.intervalMs;
        this.held.set(key, holdUntil);
        found.push({ target: ours.target, secret: secret!, ourWriteAt: ours.at, writer, holdUntil });
      }
      if (writer || now - ours.at > this.intervalMs || secret?.metadata?.resourceVersion !== ours.resourceVersion) this.ours.delete(key);
    }
    return found;
  }

  /** True while `target` is held after a conflict: we do not write it. */
  holds(target: SecretTarget, now: Instant): boolean {
    const key = describeTarget(target);
    const until = this.held.get(key);
    if (until === undefined) return false;
    if (now < until) return true;
    this.held.delete(key);
    return false;
  }
}
