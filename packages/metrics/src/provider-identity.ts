import { isDnsLabel } from '@eso-mtls/core';
import type { ServiceLabels } from './labels.js';

/** The environment variables {@link providerIdentityFromEnv} reads. */
export const PROVIDER_IDENTITY_ENV = Object.freeze({
  /** Set from the downward API: `valueFrom.fieldRef.fieldPath: metadata.namespace`. */
  namespace: 'POD_NAMESPACE',
  /** Set to the name of the labelled Service in front of the provider. */
  service: 'PROVIDER_SERVICE_NAME',
} as const);

/** A provider identity variable that is missing or not a Kubernetes name. */
export class ProviderIdentityError extends Error {
  /** Always `ProviderIdentityError`. */
  override readonly name = 'ProviderIdentityError';
}

/**
 * The provider's namespace and Service for its metric labels, from `POD_NAMESPACE` (downward
 * API) and `PROVIDER_SERVICE_NAME`. A pod cannot discover which Service selects it, so the
 * Service name is configuration. Throws {@link ProviderIdentityError} naming the variable.
 */
export function providerIdentityFromEnv(env: Readonly<Record<string, string | undefined>>): ServiceLabels {
  const namespace = required(
    env,
    PROVIDER_IDENTITY_ENV.namespace,
    'set it from the downward API: env: [{name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}]',
  );
  const service = required(
    env,
    PROVIDER_IDENTITY_ENV.service,
    'set it to the name of the Service labelled external-secrets.io/provider that fronts this provider',
  );
  return { namespace, service };
}

function required(env: Readonly<Record<string, string | undefined>>, name: string, hint: string): string {
  const value = env[name];
  if (value === undefined || value === '') {
    throw new ProviderIdentityError(`environment variable ${name} is not set or empty; ${hint}`);
  }
  if (!isDnsLabel(value)) {
    throw new ProviderIdentityError(
      `environment variable ${name}=${JSON.stringify(value)} is not a Kubernetes name (a DNS-1123 label: lower-case letters, digits and '-', 1-63 characters); ${hint}`,
    );
  }
  return value;
}
