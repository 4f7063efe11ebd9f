import { existsSync } from 'node:fs';
import { KubeConfig, type RequestContext } from '@kubernetes/client-node';

/** A write was refused locally because this replica may not write (not the leader, or stopping). */
export class FencedWriteError extends Error {
  override readonly name = 'FencedWriteError';
}

/**
 * A KubeConfig that refuses every non-GET request while `writesAllowed()` is false, checked when
 * the request is signed, the last step before it is sent. The adapter checks the same fence before
 * each write; this second check shrinks the window in which a process stopped between the two
 * (SIGSTOP, a frozen VM) could still send a write after it resumes.
 */
export class FencedKubeConfig extends KubeConfig {
  constructor(private readonly writesAllowed: () => boolean) {
    super();
  }

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const method = context.getHttpMethod();
    if (method !== 'GET' && method !== 'HEAD' && !this.writesAllowed()) {
      throw new FencedWriteError(`${method} ${new URL(context.getUrl()).pathname} not sent: this replica is not the leader (or is stopping)`);
    }
  }
}

/** Where the controller's API credentials came from, for the start-up log line. */
export type KubeConfigSource = { readonly kind: 'file'; readonly path: string } | { readonly kind: 'in-cluster'; readonly server: string };

/**
 * Loads `kc` from `--kubeconfig`, or in-cluster (service account token and CA under
 * /var/run/secrets/kubernetes.io/serviceaccount, apiserver from KUBERNETES_SERVICE_HOST/PORT).
 * Throws an Error saying what is missing and what to do.
 */
export function loadKubeConfig(kc: KubeConfig, kubeconfigPath: string | undefined, env: Readonly<Record<string, string | undefined>> = process.env): KubeConfigSource {
  if (kubeconfigPath !== undefined) {
    if (!existsSync(kubeconfigPath)) throw new Error(`--kubeconfig ${kubeconfigPath}: no such file`);
    try {
      kc.loadFromFile(kubeconfigPath);
    } catch (e) {
      throw new Error(`--kubeconfig ${kubeconfigPath}: cannot read it as a kubeconfig: ${(e as Error).message}`, { cause: e });
    }
    if (!kc.getCurrentCluster()) throw new Error(`--kubeconfig ${kubeconfigPath}: its current context names no cluster; set current-context`);
    return { kind: 'file', path: kubeconfigPath };
  }
  const token = '/var/run/secrets/kubernetes.io/serviceaccount/token';
  if (!env.KUBERNETES_SERVICE_HOST || !env.KUBERNETES_SERVICE_PORT) {
    throw new Error('not running in a cluster (KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT unset): pass --kubeconfig or set ESO_MTLS_KUBECONFIG');
  }
  if (!existsSync(token)) {
    throw new Error(`in-cluster configuration needs the service account token at ${token}: set automountServiceAccountToken, or pass --kubeconfig`);
  }
  kc.loadFromCluster();
  return { kind: 'in-cluster', server: kc.getCurrentCluster()!.server };
}
