import { Agent } from 'node:https';
import {
  CoreV1Api, type KubeConfig, type RequestContext, type ResponseContext, ServerConfiguration, Watch, createConfiguration, wrapHttpLibrary,
} from '@kubernetes/client-node';
import { nodeHttpLibrary } from './http-library.js';
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
  /**
   * Fencing, checked as the very last step before a mutating request (POST, PUT, PATCH, DELETE)
   * is sent: when it returns false the request fails with {@link WriteFencedError} unsent.
   */
  readonly writesAllowed?: () => boolean;
}

/** A mutating request refused by the fence (writesAllowed() was false); nothing was sent. */
export class WriteFencedError extends Error {
  override readonly name = 'WriteFencedError';
}

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * CoreV1Api and Watch over `kubeConfig`, with three changes to client-node's defaults: requests
 * share one keep-alive agent (client-node 1.x makes a fresh https.Agent, so a fresh TLS handshake,
 * per request), go through node:https rather than node-fetch (see {@link nodeHttpLibrary}), and
 * are counted by verb and resource in `counter`.
 * Credentials are still applied by the KubeConfig per request, so rotated tokens are picked up.
 * With `writesAllowed`, every mutating request passes the fence at the moment it is sent.
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
      const method = context.getHttpMethod().toUpperCase();
      if (options.writesAllowed && MUTATING.has(method) && !options.writesAllowed()) {
        throw new WriteFencedError(`${method} ${new URL(context.getUrl()).pathname} not sent: writes are not allowed (leadership lost)`);
      }
      const kind = classifyRequest(context.getHttpMethod(), context.getUrl());
      if (kind) counter.record(kind.verb, kind.resource);
      return context;
    },
    post: async (context: ResponseContext): Promise<ResponseContext> => context,
  };
  const configuration = createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    httpApi: wrapHttpLibrary(nodeHttpLibrary),
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
