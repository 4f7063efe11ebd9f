import type { KubeConfig } from '@kubernetes/client-node';
import { type ProxyChoice, chooseProxy, redactProxyUrl } from './proxy.js';

/** TLS settings of every connection to the apiserver. */
export interface ConnectionTls {
  /** Trusted CA certificates (PEM); unset trusts Node's default roots. */
  readonly ca?: string | Buffer;
  /** Client certificate chain and key (PEM), for certificate authentication. */
  readonly cert?: string | Buffer;
  readonly key?: string | Buffer;
  /** False only for a kubeconfig with insecure-skip-tls-verify. */
  readonly rejectUnauthorized?: boolean;
  /** SNI and name to verify, when it differs from the server URL's host (kubeconfig tls-server-name). */
  readonly servername?: string;
}

/**
 * How to reach and authenticate to one apiserver: what the adapter needs of a kubeconfig. Build it
 * with {@link loadKubeconfigFile}, {@link loadInClusterConnection} or, from a client-node
 * KubeConfig you already hold, {@link connectionFromKubeConfig}.
 */
export interface ClusterConnection {
  /** Base URL, e.g. `https://10.96.0.1:443`; a path prefix (behind a proxy) is kept. */
  readonly server: string;
  readonly tls: ConnectionTls;
  /**
   * The HTTP proxy to tunnel through (CONNECT), already decided for this server: a kubeconfig's
   * proxy-url, or HTTPS_PROXY unless NO_PROXY or loopback exempts the server (see chooseProxy).
   * Unset: connect directly. The URL may hold the proxy's password; `from` names the setting.
   */
  readonly proxy?: ProxyChoice;
  /**
   * Adds the credential headers (Authorization) to one request. Called for every request, so a
   * rotated service account token or a refreshed exec credential is picked up.
   */
  authorize(headers: Record<string, string>): Promise<void>;
  /** Where it came from, for log lines; never a credential. */
  readonly description: string;
}

/** The part of client-node's KubeConfig that {@link connectionFromKubeConfig} uses. */
export type KubeConfigLike = Pick<KubeConfig, 'getCurrentCluster' | 'applyToHTTPSOptions'>;

/** Options of {@link connectionFromKubeConfig}. */
export interface KubeConfigConnectionOptions {
  /** HTTPS_PROXY/NO_PROXY and their lower-case forms, used when the cluster has no proxy-url (default process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/**
 * A {@link ClusterConnection} over a client-node KubeConfig, for every authentication client-node
 * knows (exec plugins, OIDC and cloud auth providers, basic auth). TLS settings are read once here;
 * headers are asked of the KubeConfig per request. The cluster's proxy-url, or else HTTPS_PROXY
 * and NO_PROXY, choose the proxy as in client-go (client-node's own proxy agent is not used).
 * Only the type of KubeConfig is imported, so this costs nothing unless the caller has loaded
 * client-node already.
 */
export async function connectionFromKubeConfig(kubeConfig: KubeConfigLike, settings: KubeConfigConnectionOptions = {}): Promise<ClusterConnection> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster: set current-context, or pass a kubeconfig with a context that names a cluster');
  const proxy = chooseProxy(cluster.server, cluster.proxyUrl || undefined, settings.env ?? process.env, `kubeconfig cluster "${cluster.name}"`);
  const probe: { agent?: { options?: Record<string, unknown> }; headers?: Record<string, unknown> } = {};
  await kubeConfig.applyToHTTPSOptions(probe as never);
  const agentOptions = probe.agent?.options ?? {};
  const pick = <T>(key: string): T | undefined => (agentOptions[key] ?? undefined) as T | undefined;
  const tls: ConnectionTls = {
    ca: pick('ca'),
    cert: pick('cert'),
    key: pick('key'),
    rejectUnauthorized: pick<boolean>('rejectUnauthorized') ?? (cluster.skipTLSVerify ? false : undefined),
    servername: pick<string>('servername') ?? cluster.tlsServerName,
  };
  return {
    server: cluster.server,
    tls,
    ...(proxy ? { proxy } : {}),
    description: `client-node KubeConfig (cluster ${cluster.name})${describeProxy(proxy)}`,
    async authorize(headers) {
      const options: { headers?: Record<string, unknown>; auth?: string } = {};
      await kubeConfig.applyToHTTPSOptions(options as never);
      // Basic auth arrives as `auth` (user:password), not as a header.
      if (options.auth) headers.Authorization = `Basic ${Buffer.from(options.auth).toString('base64')}`;
      for (const [name, value] of Object.entries(options.headers ?? {})) {
        if (value !== undefined) headers[name] = String(value);
      }
    },
  };
}

/** ` through proxy <url without password> (<setting>)` for a connection's description, or nothing. */
export function describeProxy(proxy: ProxyChoice | undefined): string {
  return proxy ? ` through proxy ${redactProxyUrl(proxy.url)} (${proxy.from})` : '';
}
