import { MAX_POD_LIFETIME, MIN_POD_LIFETIME, PROVIDER_SECRET_NAME, isDnsName, parseNamespaceRequirement } from '@eso-mtls/core';
import { DEFAULT_CA_SECRET_NAME, DEFAULT_CLIENT_SECRET_NAME } from './ownership.js';
import { MIN_PRUNE_GRACE } from './pruner.js';

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

interface CheckedOptions {
  readonly kubeConfig?: unknown;
  readonly connection?: unknown;
  readonly caSecretName?: string;
  readonly clientSecretName?: string;
  readonly writeConcurrency?: number;
  readonly debounceMs?: number;
  readonly podEvents?: { readonly concurrency?: number; readonly windowMs?: number };
  readonly watchTimeoutSeconds?: number;
  readonly pageSize?: number;
  readonly relistForRoomMs?: number;
  readonly maxIssuancesPerReconcile?: number;
  readonly maxNamespaces?: number;
  readonly secretMode?: boolean;
  readonly pruneOrphanedSecretsAfter?: number;
  readonly namespaceRequirement?: { readonly key: string; readonly value: string };
  readonly podCertificates?: {
    readonly serverSignerName: string;
    readonly clientSignerName: string;
    readonly maxValidity: number;
    readonly pendingBound?: { readonly perNamespace: number; readonly total: number };
  };
}

/**
 * A signer name as Kubernetes accepts it for PodCertificateRequests and ClusterTrustBundles: a
 * DNS domain the project owns, a slash, and a path of DNS labels (`eso-mtls.io/provider-server`).
 */
export function isSignerName(s: string): boolean {
  const slash = s.indexOf('/');
  if (slash <= 0 || s.length > 253) return false;
  const domain = s.slice(0, slash);
  const path = s.slice(slash + 1);
  return isDnsName(domain) && domain.includes('.') && path.length > 0 && path.split('/').every((p) => /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(p));
}

const intIn = (v: number, min: number, max: number): boolean => Number.isInteger(v) && v >= min && v <= max;

/** Throws {@link AdapterOptionsError} for the first option that cannot work. */
export function validateAdapterOptions(options: CheckedOptions): void {
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
function validatePruning(options: CheckedOptions): void {
  const grace = options.pruneOrphanedSecretsAfter;
  if (grace === undefined || grace === 0) return;
  if (!Number.isInteger(grace) || grace < MIN_PRUNE_GRACE) {
    throw new AdapterOptionsError('pruneOrphanedSecretsAfter', grace, `must be 0 (off) or whole milliseconds of at least ${MIN_PRUNE_GRACE} (1 hour)`);
  }
  if (options.secretMode === false) {
    throw new AdapterOptionsError('pruneOrphanedSecretsAfter', grace, 'needs the Secret mode: pod-certificate-only mode never reads provider Secrets');
  }
}
