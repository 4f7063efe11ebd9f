import { Agent } from 'node:https';
import {
  CoreV1Api, type KubeConfig, type RequestContext, type ResponseContext, ServerConfiguration, Watch, createConfiguration,
} from '@kubernetes/client-node';
import { type RequestCounter, classifyRequest } from './request-counter.js';

/** The API handles the adapter uses, all counting into one {@link RequestCounter}. */
export interface KubernetesClients {
  readonly core: CoreV1Api;
  readonly watch: Watch;
  readonly counter: RequestCounter;
  /** Closes the kept-alive connections. */
  close(): void;
}

/** Options of {@link createKubernetesClients}. */
export interface KubernetesClientOptions {
  /** Most connections kept open to the apiserver (default 16: the adapter's write concurrency). */
  readonly maxSockets?: number;
}

/**
 * CoreV1Api and Watch over `kubeConfig`, with two changes to client-node's defaults: requests
 * share one keep-alive agent (client-node 1.x makes a fresh https.Agent, so a fresh TLS handshake,
 * per request), and every request is counted by verb and resource in `counter`.
 * Credentials are still applied by the KubeConfig per request, so rotated tokens are picked up.
 */
export async function createKubernetesClients(kubeConfig: KubeConfig, counter: RequestCounter, options: KubernetesClientOptions = {}): Promise<KubernetesClients> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster: set current-context, or pass --kubeconfig with a context that names a cluster');
  // The TLS settings (CA, client certificate, skip-verify) the KubeConfig would give each request's agent.
  const probe: { agent?: Agent } = {};
  await kubeConfig.applyToHTTPSOptions(probe as never);
  const tls = (probe.agent as (Agent & { options?: Record<string, unknown> }) | undefined)?.options ?? {};
  const agent = new Agent({ ...tls, keepAlive: true, maxSockets: options.maxSockets ?? 16 });

  const auth = {
    getName: () => 'kubeconfig with a shared keep-alive agent',
    async applySecurityAuthentication(context: RequestContext): Promise<void> {
      await kubeConfig.applySecurityAuthentication(context);
      context.setAgent(agent);
    },
  };
  const countRequests = {
    pre: async (context: RequestContext): Promise<RequestContext> => {
      const kind = classifyRequest(context.getHttpMethod(), context.getUrl());
      if (kind) counter.record(kind.verb, kind.resource);
      return context;
    },
    post: async (context: ResponseContext): Promise<ResponseContext> => context,
  };
  const configuration = createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: auth },
    promiseMiddleware: [countRequests],
  });
  return {
    core: new CoreV1Api(configuration),
    watch: new Watch(kubeConfig),
    counter,
    close: () => agent.destroy(),
  };
}
