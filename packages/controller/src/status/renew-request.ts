import { randomBytes } from 'node:crypto';
import { EMERGENCY_ROTATION, type Instant, MAX_ROTATE_REQUEST_BYTES, ROTATE_ANNOTATION, rotateRequestProblem } from '@eso-mtls/core';
import { KubeApiError, type KubeRestClient, type ListPage, PROVIDER_SERVICE_SELECTOR, corePath } from '@eso-mtls/kubernetes';
import type { V1Service } from '@kubernetes/client-node';

/** What `eso-mtls renew` asks to rotate. */
export type RenewTarget =
  { readonly kind: 'namespace'; readonly namespace: string } | { readonly kind: 'client' } | { readonly kind: 'ca'; readonly emergency: boolean };

/**
 * A fresh `eso-mtls.io/rotate` value: the time and 8 random hex digits, so two requests in the
 * same millisecond still differ (the controller acts once per value). An emergency keeps the
 * `emergency:` prefix the CA phases look for.
 */
export function renewToken(now: Instant, emergency: boolean, random: (n: number) => Uint8Array = randomBytes): string {
  const token = `${new Date(now).toISOString()}-${Buffer.from(random(4)).toString('hex')}`;
  const value = emergency ? `${EMERGENCY_ROTATION}:${token}` : token;
  // Far below the bound; checked so a change of format can never produce a value the controller ignores.
  const problem = rotateRequestProblem(value);
  if (problem !== undefined) throw new Error(`renew token ${value} is over ${MAX_ROTATE_REQUEST_BYTES} bytes: ${problem}`);
  return value;
}

/** An object renew annotated. */
export interface Annotated {
  readonly kind: 'Service' | 'Secret';
  readonly namespace: string;
  readonly name: string;
}

/** Renew found nothing to annotate (no labelled Service, no Secret yet). */
export class NothingToRenewError extends Error {
  override readonly name = 'NothingToRenewError';
}

const patchBody = (token: string) => ({ metadata: { annotations: { [ROTATE_ANNOTATION]: token } } });

/**
 * Sets the rotation annotation, as the controller reads it: on every labelled Service of the
 * namespace (any one would do; all of them keep the namespace's requests consistent, and the
 * controller issues once), or on the client or CA Secret. The Secret's existence is checked by the
 * patch itself (404: not issued yet).
 */
export async function requestRenewal(
  api: KubeRestClient,
  target: RenewTarget,
  token: string,
  names: { readonly esoNamespace: string; readonly caSecretName: string; readonly clientSecretName: string },
): Promise<Annotated[]> {
  if (target.kind === 'namespace') {
    const list = await api.get<ListPage<V1Service>>(corePath('services', target.namespace), { labelSelector: PROVIDER_SERVICE_SELECTOR, limit: 500 });
    const services = list.items.map((s) => s.metadata?.name).filter((n): n is string => n !== undefined);
    if (services.length === 0) {
      throw new NothingToRenewError(`namespace ${target.namespace} has no Service labelled ${PROVIDER_SERVICE_SELECTOR}: the controller issues nothing there`);
    }
    for (const name of services) await api.mergePatch(corePath('services', target.namespace, name), patchBody(token));
    return services.map((name) => ({ kind: 'Service', namespace: target.namespace, name }));
  }
  const name = target.kind === 'ca' ? names.caSecretName : names.clientSecretName;
  try {
    await api.mergePatch(corePath('secrets', names.esoNamespace, name), patchBody(token));
  } catch (e) {
    if (e instanceof KubeApiError && e.code === 404) {
      throw new NothingToRenewError(
        `Secret ${names.esoNamespace}/${name} does not exist: the controller has not issued it yet (or --eso-namespace / --${target.kind}-secret-name differ from the controller's)`,
      );
    }
    throw e;
  }
  return [{ kind: 'Secret', namespace: names.esoNamespace, name }];
}
