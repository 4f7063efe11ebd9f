import type { SecretWrite } from '../plan/execute.js';
import { IssuanceLedger, type SecretTarget, describeTarget } from '../secret/target.js';
import { type ProviderService, type SecretState, type Snapshot, assembleSnapshot } from '../secret/snapshot.js';

/** A write the store refused: the Secret moved on since it was planned (or already exists). */
export class StoreConflictError extends Error {
  /** Always `StoreConflictError`. */
  override readonly name = 'StoreConflictError';
}

/**
 * An in-memory cluster for simulations and tests: Secrets with resourceVersions, labelled
 * Services, and the issuance ledger an adapter keeps. Applies {@link SecretWrite}s with the same
 * optimistic concurrency as the Kubernetes API: a create fails if the Secret exists, an update
 * fails unless it names the current version.
 */
export class MemoryStore {
  private readonly secrets = new Map<string, { target: SecretTarget; state: SecretState }>();
  private readonly services = new Map<string, ProviderService[]>();
  private readonly ledger = new IssuanceLedger();
  private versions = 0;

  /** The Secret at `target`, if any. */
  get(target: SecretTarget): SecretState | undefined {
    return this.secrets.get(describeTarget(target))?.state;
  }

  /** Puts a Secret as someone else would (a user, a chart, an attacker): a new version, no checks. */
  put(target: SecretTarget, state: Omit<SecretState, 'version'>): SecretState {
    const stored: SecretState = { ...state, version: String(++this.versions) };
    this.secrets.set(describeTarget(target), { target, state: stored });
    return stored;
  }

  /** Deletes a Secret, as a user would. */
  delete(target: SecretTarget): void {
    this.secrets.delete(describeTarget(target));
  }

  /** Applies one write, with Kubernetes' create/update conflict rules. Returns the stored Secret. */
  apply(write: SecretWrite): SecretState {
    const current = this.get(write.target);
    const name = describeTarget(write.target);
    if (write.create && current) throw new StoreConflictError(`${name}: create, but the Secret exists (version ${current.version})`);
    if (!write.create && current?.version !== write.base) {
      throw new StoreConflictError(`${name}: update planned from version ${write.base}, but the Secret is at ${current?.version ?? 'absent'}`);
    }
    this.ledger.record(write.target);
    return this.put(write.target, {
      data: { ...write.data },
      ownership: 'managed',
      annotations: { ...current?.annotations, ...write.annotations },
    });
  }

  /** Sets the labelled Services of a namespace (an empty list removes them all). */
  setServices(namespace: string, services: readonly ProviderService[]): void {
    if (services.length === 0) this.services.delete(namespace);
    else this.services.set(namespace, [...services]);
  }

  /** The labelled Services of a namespace. */
  servicesOf(namespace: string): readonly ProviderService[] {
    return this.services.get(namespace) ?? [];
  }

  /** Namespaces with at least one labelled Service. */
  providerNamespaces(): string[] {
    return [...this.services.keys()];
  }

  /** The snapshot an adapter would build from the same cluster (see assembleSnapshot). */
  snapshot(): Snapshot {
    const providerSecrets = new Map<string, SecretState>();
    for (const { target, state } of this.secrets.values()) if (typeof target === 'object') providerSecrets.set(target.namespace, state);
    return assembleSnapshot({ caSecret: this.get('ca'), clientSecret: this.get('client'), services: this.services, providerSecrets }, this.ledger);
  }
}
