import type { AllowedNamespaces } from '../policy/namespace-requirement.js';
import type { IssuanceLedger } from './target.js';
import type { ObservedBundle, SecretData } from './observe.js';
import type { Instant } from '../common/time.js';
import type { UpstreamObservation } from './upstream-observation.js';

/**
 * Who a Secret belongs to, as the adapter judges it from labels and the installation annotation.
 * - `managed`: written by this installation; the planner keeps it correct.
 * - `placeholder`: not ours, but every data value is empty (a chart's placeholder): adopted by
 *   issuing into it, keeping its type.
 * - `foreign`: not ours; never written, reported as a conflict.
 */
export type Ownership = 'managed' | 'placeholder' | 'foreign';

/** One Secret as observed. */
export interface SecretState {
  /** The Secret's data, decoded. */
  readonly data: SecretData;
  /** Whether this installation wrote it (see {@link Ownership}). */
  readonly ownership: Ownership;
  /** Its annotations (the rotation request and acknowledgement live here). */
  readonly annotations: Readonly<Record<string, string>>;
  /** The resourceVersion, opaque; echoed into the write planned from it (optimistic concurrency). */
  readonly version?: string;
}

/**
 * Why writes to a provider Secret are refused, as the adapter judges the apiserver's answer:
 * - `immutable`: the Secret carries `immutable: true`, which only deleting it undoes;
 * - `refused`: the write itself was refused (400, 403 or 422: an admission policy or webhook,
 *   RBAC, validation). A 5xx, a 429, a timeout or a conflict is transient and never a refusal.
 */
export type WriteRefusalReason = 'immutable' | 'refused';

/** Every {@link WriteRefusalReason}, for metrics that list each one. */
export const WRITE_REFUSAL_REASONS: readonly WriteRefusalReason[] = Object.freeze(['immutable', 'refused'] as const);

/** The adapter's writes to a namespace's provider Secret have been refused since `since`, and still are. */
export interface WriteRefusal {
  /** The first refusal of the run of refusals that still stands. */
  readonly since: Instant;
  /** Why the latest refused write was refused. */
  readonly reason: WriteRefusalReason;
  /** The apiserver's answer to the latest refused write, for messages. */
  readonly detail: string;
}

/** A labelled Service, as the planner needs it. */
export interface ProviderService {
  /** The Service's name. */
  readonly name: string;
  /** Value of its `eso-mtls.io/rotate` annotation, if any: a request token for a forced rotation. */
  readonly rotateRequest?: string;
  /**
   * Its creationTimestamp, if known: a namespace's oldest labelled Service dates it, which ranks it
   * under a cap on namespaces (the newest are left out) and among leaves of the same class.
   */
  readonly createdAt?: Instant;
}

/** A provider namespace: its labelled Services and its one `external-secrets-provider-tls` Secret. */
export interface ProviderNamespace {
  /** The namespace's name. */
  readonly namespace: string;
  /** Labelled Services; may be empty (the last one went away: the Secret is then left alone). */
  readonly services: readonly ProviderService[];
  /** Its provider Secret, if one exists. */
  readonly secret?: SecretState;
  /**
   * True when the adapter's issuance ledger has seen a managed Secret in this namespace: an absent
   * Secret is then `secret_missing`, otherwise `initial`.
   */
  readonly previouslyIssued: boolean;
  /**
   * Whether the namespace carries the label of `PlanContext.namespaceRequirement`; read only
   * when that is set, and then a namespace without it (or not known to have it) is not served.
   */
  readonly allowed?: boolean;
  /**
   * Set by the adapter while its writes to this namespace's Secret are refused for a reason
   * retrying cannot change (see {@link WriteRefusal}); the CA rotation stops waiting for it after
   * a grace, and reports it (docs/ca-rotation.md).
   */
  readonly writesRefused?: WriteRefusal;
}

/** Everything the planner reads: the observed state of the cluster. */
export interface Snapshot {
  /** `eso-provider-ca-internal` in the ESO namespace. */
  readonly caSecret?: SecretState;
  /** The ESO client Secret (tls.crt, tls.key, ca.crt) in the ESO namespace. */
  readonly clientSecret?: SecretState;
  /** As {@link ProviderNamespace.previouslyIssued}, for the client Secret. */
  readonly clientPreviouslyIssued?: boolean;
  /** Every namespace with labelled Services or a provider Secret, sorted by name. */
  readonly namespaces: readonly ProviderNamespace[];
  /**
   * The trust bundles published outside Secrets (pod-certificate mode: our ClusterTrustBundles),
   * which, like every managed Secret's ca.crt, must hold the next CA for propagationDelay before it signs.
   */
  readonly trustBundles?: readonly ObservedBundle[];
  /** Set when the CA comes from an upstream PKI: what the adapter read of it (ca/upstream.ts). */
  readonly upstream?: UpstreamObservation;
}

/** What an adapter (or the memory store) observes, before it becomes a {@link Snapshot}. */
export interface ObservedCluster {
  /** The CA Secret in the ESO namespace, if it exists. */
  readonly caSecret?: SecretState;
  /** The ESO client Secret, if it exists. */
  readonly clientSecret?: SecretState;
  /** Labelled Services, by namespace. */
  readonly services: ReadonlyMap<string, readonly ProviderService[]>;
  /** Each namespace's `external-secrets-provider-tls` Secret, whoever wrote it. */
  readonly providerSecrets: ReadonlyMap<string, SecretState>;
  /** With a namespace requirement: the namespaces that carry its label (see {@link ProviderNamespace.allowed}). */
  readonly allowedNamespaces?: AllowedNamespaces;
}

/**
 * The one way a snapshot is assembled: every namespace with labelled Services or a provider
 * Secret, sorted, each with its Services sorted by name; managed Secrets are recorded in the
 * ledger first, so `previouslyIssued` covers what is seen now as well as what was seen before.
 */
export function assembleSnapshot(cluster: ObservedCluster, ledger: IssuanceLedger): Snapshot {
  if (cluster.clientSecret?.ownership === 'managed') ledger.record('client');
  for (const [namespace, secret] of cluster.providerSecrets) if (secret.ownership === 'managed') ledger.record({ namespace });
  const names = [...new Set([...cluster.services.keys(), ...cluster.providerSecrets.keys()])].sort();
  const namespaces: ProviderNamespace[] = names.map((namespace) => {
    const secret = cluster.providerSecrets.get(namespace);
    const services = [...(cluster.services.get(namespace) ?? [])].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const allowed = cluster.allowedNamespaces === undefined ? {} : { allowed: cluster.allowedNamespaces.has(namespace) };
    return { namespace, services, ...(secret ? { secret } : {}), previouslyIssued: ledger.has({ namespace }), ...allowed };
  });
  return {
    ...(cluster.caSecret ? { caSecret: cluster.caSecret } : {}),
    ...(cluster.clientSecret ? { clientSecret: cluster.clientSecret } : {}),
    clientPreviouslyIssued: ledger.has('client'),
    namespaces,
  };
}
