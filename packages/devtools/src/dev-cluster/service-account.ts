import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, type KubernetesObject, KubernetesObjectApi, PatchStrategy, loadAllYaml } from '@kubernetes/client-node';
import type { Clone } from './clone.js';

/** The controller's ServiceAccount as deploy/base ships it. */
export interface ServiceAccountRef {
  readonly namespace: string;
  readonly name: string;
}

/** How long the controller's token is valid; dev-cluster mints a new one each time it starts. */
export const TOKEN_LIFETIME_SECONDS = 24 * 3600;

/**
 * Creates (server-side apply, so a later `kubectl apply --server-side -k deploy/namespace` and
 * `-k deploy` share the fields) ESO's Namespace from deploy/namespace and the controller's
 * ServiceAccount from deploy/base, which must exist before
 * a token can be requested for it. The RBAC that gives the account its rights is applied by the
 * user with the rest of deploy/, so the controller runs under exactly the shipped rules.
 */
export async function createControllerServiceAccount(admin: KubeConfig, clone: Clone): Promise<ServiceAccountRef> {
  const objects = [join(clone.deployNamespace, 'namespace.yaml'), join(clone.deployBase, 'serviceaccount.yaml')].flatMap(
    (f) => loadAllYaml(readFileSync(f, 'utf8')) as KubernetesObject[],
  );
  const api = KubernetesObjectApi.makeApiClient(admin);
  for (const object of objects) {
    try {
      await api.patch(object, undefined, undefined, 'eso-mtls-dev-cluster', true, PatchStrategy.ServerSideApply);
    } catch (e) {
      throw new Error(`creating ${object.kind} ${object.metadata?.name} from ${join(clone.root, 'deploy')}: ${(e as Error).message}`, { cause: e });
    }
  }
  const account = objects.find((o) => o.kind === 'ServiceAccount');
  if (account?.metadata?.name === undefined || account.metadata.namespace === undefined) {
    throw new Error(`${join(clone.deployBase, 'serviceaccount.yaml')} holds no ServiceAccount with a name and a namespace`);
  }
  return { namespace: account.metadata.namespace, name: account.metadata.name };
}

/** A real token of the ServiceAccount from the TokenRequest API, so requests are made as it, under its RBAC. */
export async function serviceAccountToken(admin: KubeConfig, account: ServiceAccountRef): Promise<string> {
  const core = admin.makeApiClient(CoreV1Api);
  const request = await core.createNamespacedServiceAccountToken({
    name: account.name,
    namespace: account.namespace,
    body: { spec: { audiences: [], expirationSeconds: TOKEN_LIFETIME_SECONDS } },
  });
  const token = request.status?.token;
  if (!token) throw new Error(`the TokenRequest for ServiceAccount ${account.namespace}/${account.name} returned no token`);
  return token;
}
