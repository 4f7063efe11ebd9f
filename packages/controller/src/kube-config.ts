import { existsSync } from 'node:fs';
import {
  type ClusterConnection,
  UnsupportedKubeconfigError,
  connectionFromKubeConfig,
  loadInClusterConnection,
  loadKubeconfigFile,
  redactProxyUrl,
} from '@eso-mtls/kubernetes';

/** Where the controller's API credentials came from, for the start-up log line. */
export type KubeConfigSource = (
  | {
      readonly kind: 'file';
      readonly path: string;
      /** `eso-mtls`: our own reader. `client-node`: the file needs something only client-node does (exec, auth-provider, impersonation). */
      readonly reader: 'eso-mtls' | 'client-node';
      /** Why client-node was needed. */
      readonly feature?: string;
    }
  | { readonly kind: 'in-cluster'; readonly server: string }
) & {
  /** The HTTP proxy the connection tunnels through, password hidden, and the setting that chose it. */
  readonly proxy?: string;
};

/**
 * The apiserver connection from `--kubeconfig`, or in-cluster (service account token and CA under
 * /var/run/secrets/kubernetes.io/serviceaccount, apiserver from KUBERNETES_SERVICE_HOST/PORT).
 * Kubeconfigs are read by @eso-mtls/kubernetes's own reader; one that needs an exec plugin, an
 * auth provider or impersonation is handed to client-node's KubeConfig, loaded only then because
 * it costs some 70 MB of memory. Either way the proxy is ours: the cluster's proxy-url, else
 * HTTPS_PROXY/NO_PROXY from `env`, as client-go. Throws an Error saying what is missing and what
 * to do, or naming a proxy setting that cannot be honoured. `setting` is what named the file, for
 * those errors: `--kubeconfig` (the default), or `$KUBECONFIG` when the user's environment chose it.
 */
export async function loadConnection(
  kubeconfigPath: string | undefined,
  env: Readonly<Record<string, string | undefined>> = process.env,
  setting = '--kubeconfig',
): Promise<{ connection: ClusterConnection; source: KubeConfigSource }> {
  if (kubeconfigPath === undefined) {
    const connection = loadInClusterConnection({ env });
    return { connection, source: { kind: 'in-cluster', server: connection.server, ...proxyOf(connection) } };
  }
  if (!existsSync(kubeconfigPath)) throw new Error(`${setting} ${kubeconfigPath}: no such file`);
  let unsupported: UnsupportedKubeconfigError;
  try {
    const connection = loadKubeconfigFile(kubeconfigPath, { env });
    return { connection, source: { kind: 'file', path: kubeconfigPath, reader: 'eso-mtls', ...proxyOf(connection) } };
  } catch (e) {
    if (!(e instanceof UnsupportedKubeconfigError)) throw e;
    unsupported = e;
  }
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  try {
    kc.loadFromFile(kubeconfigPath);
  } catch (cause) {
    throw new Error(`${setting} ${kubeconfigPath}: cannot read it as a kubeconfig: ${(cause as Error).message}`, { cause });
  }
  if (!kc.getCurrentCluster()) throw new Error(`${setting} ${kubeconfigPath}: its current context names no cluster; set current-context`);
  let connection: ClusterConnection;
  try {
    connection = await connectionFromKubeConfig(kc, { env });
  } catch (cause) {
    // client-node reads the files and runs the exec plugin only here, and words its errors without
    // the kubeconfig (some are TypeErrors about a field of the wrong type): name it.
    const why = cause instanceof Error ? cause.message : String(cause);
    throw new Error(`${setting} ${kubeconfigPath}: ${why} (read with client-node, for its ${unsupported.feature})`, { cause });
  }
  return { connection, source: { kind: 'file', path: kubeconfigPath, reader: 'client-node', feature: unsupported.feature, ...proxyOf(connection) } };
}

function proxyOf(connection: ClusterConnection): { proxy?: string } {
  return connection.proxy ? { proxy: `${redactProxyUrl(connection.proxy.url)} (${connection.proxy.from})` } : {};
}
