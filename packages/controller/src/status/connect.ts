import { KubeRestClient } from '@eso-mtls/kubernetes';
import { loadConnection } from '../kube-config.js';
import type { KubeconfigChoice } from './options.js';

/** How long one request of status or renew may take before it is abandoned. */
export const CLI_REQUEST_TIMEOUT_MS = 30_000;

/**
 * A REST client for the user's own credentials, through the controller's kubeconfig loader
 * (`kubeconfig` undefined: in-cluster); its errors name the setting that chose the file.
 * Read-only callers simply never call a mutating method.
 */
export async function connectAsUser(
  kubeconfig: KubeconfigChoice | undefined,
  env: Readonly<Record<string, string | undefined>>,
): Promise<{ api: KubeRestClient; server: string }> {
  const { connection } = await loadConnection(kubeconfig?.path, env, kubeconfig?.setting);
  return { api: new KubeRestClient(connection, { maxSockets: 4, requestTimeoutMs: CLI_REQUEST_TIMEOUT_MS }), server: connection.server };
}
