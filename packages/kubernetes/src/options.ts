import {
  type CryptoBackend,
  type Instant,
  MAX_POD_LIFETIME,
  MIN_POD_LIFETIME,
  PROVIDER_SECRET_NAME,
  type PodSignerRole,
  isDnsName,
  parseNamespaceRequirement,
} from '@eso-mtls/core';
import type { ClusterConnection, KubeConfigLike } from './client/connection.js';
import type { InstallationSettings } from './installation/installation.js';
import { DEFAULT_CA_SECRET_NAME, DEFAULT_CLIENT_SECRET_NAME } from './installation/ownership.js';
import { isSignerName } from './pod-certificates/trust-bundles.js';
import { MIN_PRUNE_GRACE } from './rounds/pruner.js';
import type { RoundHooks } from './rounds/round.js';
import type { Timers } from './runtime/clock.js';
import type { Logger } from './runtime/logger.js';

/** Callbacks for metrics and tests; each must be cheap and must not throw. */
export interface AdapterHooks extends RoundHooks {
  /** A PodCertificateRequest was decided (pod-certificate mode), or its status could not be written (`failed`, `StatusWriteFailed`). */
  onPodCertificateRequest?(signer: PodSignerRole, result: 'issued' | 'denied' | 'failed', reason: string, namespace: string): void;
}

/** Options of {@link ProviderCertificateAdapter}. */
export interface AdapterOptions extends InstallationSettings {
  /** The apiserver and credentials: see loadKubeconfigFile and loadInClusterConnection. Or give kubeConfig. */
  readonly connection?: ClusterConnection;
  /** A client-node KubeConfig you already hold, instead of `connection`. */
  readonly kubeConfig?: KubeConfigLike;
  /** The clock (default Date.now); tests jump it forward instead of sleeping. */
  readonly now?: () => Instant;
  /**
   * Watches, retries and wake-ups, on real elapsed time (default: the process's own timers).
   * Not {@link now}: a test that moves the certificate clock by days moves these by hand, or not at all.
   */
  readonly timers?: Timers;
  /** Key generation and signing (default node:crypto). */
  readonly crypto?: CryptoBackend;
  readonly logger?: Logger;
  /** Fencing: checked before every plan, every issuance and every Secret write; leader election turns it off at once. */
  readonly writesAllowed?: () => boolean;
  /**
   * Fencing of Events (default: writesAllowed), checked when an Event is decided, not again when it
   * is sent. A controller that is stopping still leads until it releases its Lease, so it may report
   * the writes it finished while Secret writes are already fenced.
   */
  readonly eventsAllowed?: () => boolean;
  /** For the metrics view only (default: writesAllowed). */
  readonly isLeader?: () => boolean;
  readonly hooks?: AdapterHooks;
  /** Secret writes (with their issuance) in flight at once (default 16). */
  readonly writeConcurrency?: number;
  /** Event coalescing window (default 100 ms). */
  readonly debounceMs?: number;
  /**
   * Pod-certificate mode: the signer's Events (issuances, coalesced per Service; each failure on
   * its pod) have a recorder and connections of their own, with `concurrency` requests in flight
   * (default 16), and issuances are coalesced over `windowMs` (default 100 ms). docs/benchmarks.md
   * compares settings.
   */
  readonly podEvents?: { readonly concurrency?: number; readonly windowMs?: number };
  /** timeoutSeconds of each watch; unset lets the apiserver choose. */
  readonly watchTimeoutSeconds?: number;
  /** Page size of list calls (default 500). */
  readonly pageSize?: number;
  /**
   * Pod-certificate mode: while pending requests wait beyond the signer's bound, the shortest time
   * between two lists that look for room for them (default 30 s).
   */
  readonly relistForRoomMs?: number;
  /**
   * An upstream CA source whose custom resources are not served (cert-manager's CRDs, or an
   * external issuer's, not installed yet): how often they are looked for again (default 30 s).
   * Meanwhile the source reports `issuer_missing`, and nothing else waits for them.
   */
  readonly unservedRelistMs?: number;
  /**
   * `reportingInstance` of our Events, e.g. the pod name, and the writer identity stamped on every
   * Secret we write (`eso-mtls.io/written-by`; default `<hostname>_<random UUID>`, new per adapter).
   */
  readonly eventInstance?: string;
  /**
   * Opt-in, Secret mode only: delete our provider Secret of a namespace that has had no labelled
   * Service for this many milliseconds (at least 1 hour; default 0, off). Needs RBAC delete on
   * Secrets named external-secrets-provider-tls (deploy/overlays/prune-orphaned-secrets).
   */
  readonly pruneOrphanedSecretsAfter?: number;
}

/** An adapter option that makes no sense; the message names the option, its value and what is accepted. */
export class AdapterOptionsError extends Error {
  /** Always `AdapterOptionsError`. */
  override readonly name = 'AdapterOptionsError';
  /**
   * @param option - The option's name.
   * @param value - Its value.
   * @param accepted - What it accepts.
   */
  constructor(
    readonly option: string,
    readonly value: unknown,
    accepted: string,
  ) {
    super(`invalid adapter option ${option}=${JSON.stringify(value)}: ${accepted}`);
  }
}

const intIn = (v: number, min: number, max: number): boolean => Number.isInteger(v) && v >= min && v <= max;

/**
 * Throws {@link AdapterOptionsError} for the first option that cannot work. The connection is
 * checked for presence only, as a caller without types may give anything there.
 */
export function validateAdapterOptions(
  options: Omit<AdapterOptions, 'connection' | 'kubeConfig'> & { readonly connection?: unknown; readonly kubeConfig?: unknown },
): void {
  if (!options.kubeConfig === !options.connection) {
    throw new AdapterOptionsError(
      'connection',
      options.connection ?? null,
      'give exactly one of connection (a ClusterConnection) and kubeConfig (a client-node KubeConfig)',
    );
  }
  for (const option of ['caSecretName', 'clientSecretName'] as const) {
    const v = options[option];
    if (v === undefined) continue;
    if (typeof v !== 'string' || !isDnsName(v)) throw new AdapterOptionsError(option, v, 'must be a Secret name (DNS-1123 subdomain)');
    if (v === PROVIDER_SECRET_NAME) throw new AdapterOptionsError(option, v, `must differ from ${PROVIDER_SECRET_NAME}, the provider Secret name`);
  }
  const pods = options.podCertificates;
  if (options.secretMode === false && pods === undefined) {
    throw new AdapterOptionsError('secretMode', false, 'without the Secret mode give podCertificates, or the adapter has nothing to do');
  }
  if (pods !== undefined) {
    for (const option of ['serverSignerName', 'clientSignerName'] as const) {
      if (!isSignerName(pods[option]))
        throw new AdapterOptionsError(`podCertificates.${option}`, pods[option], 'must be a signer name such as eso-mtls.io/provider-server');
    }
    if (pods.serverSignerName === pods.clientSignerName) {
      throw new AdapterOptionsError('podCertificates.clientSignerName', pods.clientSignerName, 'must differ from serverSignerName');
    }
    if (!intIn(pods.maxValidity, MIN_POD_LIFETIME, MAX_POD_LIFETIME)) {
      throw new AdapterOptionsError('podCertificates.maxValidity', pods.maxValidity, 'must be whole milliseconds from 1 hour to 91 days (7862400 s)');
    }
    for (const bound of ['perNamespace', 'total'] as const) {
      const v = pods.pendingBound?.[bound];
      if (v !== undefined && !intIn(v, 1, 1_000_000))
        throw new AdapterOptionsError(`podCertificates.pendingBound.${bound}`, v, 'must be a whole number from 1 to 1000000');
    }
  }
  const ca = options.caSecretName ?? DEFAULT_CA_SECRET_NAME;
  const client = options.clientSecretName ?? DEFAULT_CLIENT_SECRET_NAME;
  if (ca === client) throw new AdapterOptionsError('clientSecretName', client, `must differ from caSecretName (${ca})`);
  if (options.writeConcurrency !== undefined && !intIn(options.writeConcurrency, 1, 64)) {
    throw new AdapterOptionsError('writeConcurrency', options.writeConcurrency, 'must be a whole number from 1 to 64');
  }
  if (options.debounceMs !== undefined && !intIn(options.debounceMs, 0, 60_000)) {
    throw new AdapterOptionsError('debounceMs', options.debounceMs, 'must be a whole number of milliseconds from 0 to 60000');
  }
  if (options.podEvents?.concurrency !== undefined && !intIn(options.podEvents.concurrency, 1, 64)) {
    throw new AdapterOptionsError('podEvents.concurrency', options.podEvents.concurrency, 'must be a whole number from 1 to 64');
  }
  if (options.podEvents?.windowMs !== undefined && !intIn(options.podEvents.windowMs, 0, 60_000)) {
    throw new AdapterOptionsError('podEvents.windowMs', options.podEvents.windowMs, 'must be a whole number of milliseconds from 0 to 60000');
  }
  if (options.watchTimeoutSeconds !== undefined && !intIn(options.watchTimeoutSeconds, 1, 86_400)) {
    throw new AdapterOptionsError('watchTimeoutSeconds', options.watchTimeoutSeconds, 'must be a whole number of seconds from 1 to 86400');
  }
  if (options.relistForRoomMs !== undefined && !intIn(options.relistForRoomMs, 0, 600_000)) {
    throw new AdapterOptionsError('relistForRoomMs', options.relistForRoomMs, 'must be a whole number of milliseconds from 0 to 600000');
  }
  if (options.unservedRelistMs !== undefined && !intIn(options.unservedRelistMs, 100, 600_000)) {
    throw new AdapterOptionsError('unservedRelistMs', options.unservedRelistMs, 'must be a whole number of milliseconds from 100 to 600000');
  }
  if (options.pageSize !== undefined && !intIn(options.pageSize, 1, 10_000)) {
    throw new AdapterOptionsError('pageSize', options.pageSize, 'must be a whole number from 1 to 10000');
  }
  for (const option of ['maxIssuancesPerReconcile', 'maxNamespaces'] as const) {
    const v = options[option];
    if (v !== undefined && !intIn(v, 1, 1_000_000)) throw new AdapterOptionsError(option, v, 'must be a whole number from 1 to 1000000, or unset for no limit');
  }
  const requirement = options.namespaceRequirement;
  const parsed = requirement && parseNamespaceRequirement(`${String(requirement.key)}=${String(requirement.value)}`);
  if (requirement !== undefined && (parsed?.key !== requirement.key || parsed.value !== requirement.value)) {
    throw new AdapterOptionsError(
      'namespaceRequirement',
      requirement,
      'must be a label key and a non-empty label value, such as { key: "eso-mtls.io/providers-allowed", value: "true" }',
    );
  }
  validatePruning(options);
}

/** Pruning deletes provider Secrets: it needs the Secret mode (the only one that reads them) and a grace longer than a redeploy. */
function validatePruning(options: Pick<AdapterOptions, 'pruneOrphanedSecretsAfter' | 'secretMode'>): void {
  const grace = options.pruneOrphanedSecretsAfter;
  if (grace === undefined || grace === 0) return;
  if (!Number.isInteger(grace) || grace < MIN_PRUNE_GRACE) {
    throw new AdapterOptionsError('pruneOrphanedSecretsAfter', grace, `must be 0 (off) or whole milliseconds of at least ${MIN_PRUNE_GRACE} (1 hour)`);
  }
  if (options.secretMode === false) {
    throw new AdapterOptionsError('pruneOrphanedSecretsAfter', grace, 'needs the Secret mode: pod-certificate-only mode never reads provider Secrets');
  }
}
