import { describe, expect, it } from '@jest/globals';
import { PROVIDER_IDENTITY_ENV, ProviderIdentityError, providerIdentityFromEnv } from '@eso-mtls/metrics';

describe('providerIdentityFromEnv', () => {
  it('reads POD_NAMESPACE and PROVIDER_SERVICE_NAME', () => {
    expect(PROVIDER_IDENTITY_ENV).toEqual({ namespace: 'POD_NAMESPACE', service: 'PROVIDER_SERVICE_NAME' });
    expect(providerIdentityFromEnv({ POD_NAMESPACE: 'provider-aws', PROVIDER_SERVICE_NAME: 'aws', OTHER: 'x' })).toEqual({
      namespace: 'provider-aws',
      service: 'aws',
    });
  });

  it('names the missing variable and how to set it', () => {
    expect(() => providerIdentityFromEnv({ PROVIDER_SERVICE_NAME: 'aws' })).toThrow(
      /environment variable POD_NAMESPACE is not set or empty; set it from the downward API: .*fieldPath: metadata.namespace/,
    );
    expect(() => providerIdentityFromEnv({ POD_NAMESPACE: 'ns', PROVIDER_SERVICE_NAME: '' })).toThrow(
      /environment variable PROVIDER_SERVICE_NAME is not set or empty; set it to the name of the Service labelled external-secrets.io\/provider/,
    );
    expect(() => providerIdentityFromEnv({})).toThrow(ProviderIdentityError);
  });

  it('names a variable whose value is not a Kubernetes name', () => {
    expect(() => providerIdentityFromEnv({ POD_NAMESPACE: 'Prod_NS', PROVIDER_SERVICE_NAME: 'aws' })).toThrow(
      /environment variable POD_NAMESPACE="Prod_NS" is not a Kubernetes name/,
    );
    expect(() => providerIdentityFromEnv({ POD_NAMESPACE: 'ns', PROVIDER_SERVICE_NAME: ' aws' })).toThrow(
      /environment variable PROVIDER_SERVICE_NAME=" aws" is not a Kubernetes name/,
    );
  });
});
