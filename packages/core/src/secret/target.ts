/** A Secret the plan writes: the CA Secret, the client Secret, or a provider namespace's Secret. */
export type SecretTarget = 'ca' | 'client' | { readonly namespace: string };

/** `ca`, `client` or `namespace/<name>`: for logs, maps and messages. */
export function describeTarget(target: SecretTarget): string {
  return typeof target === 'string' ? target : `namespace/${target.namespace}`;
}

/**
 * Targets in which a managed Secret has been seen (or written): when such a Secret is gone, its
 * re-issue is `secret_missing` rather than `initial`. Held in memory by whoever assembles
 * snapshots: after a restart, a Secret deleted meanwhile is re-issued as `initial`, which changes
 * only the reported reason.
 */
export class IssuanceLedger {
  private readonly seen = new Set<string>();

  /** Notes that a managed Secret exists (or was written) at `target`. */
  record(target: SecretTarget): void {
    this.seen.add(describeTarget(target));
  }

  /** True when a managed Secret was ever seen at `target`. */
  has(target: SecretTarget): boolean {
    return this.seen.has(describeTarget(target));
  }
}
