import { type IncomingMessage, request as httpRequest } from 'node:http';
import { Agent, type AgentOptions, request as httpsRequest } from 'node:https';
import { statusOf } from './api-error.js';
import type { ClusterConnection } from './connection.js';
import { PROXY_CONNECT_TIMEOUT_MS, ProxyTunnelAgent, parseProxyUrl } from './proxy.js';
import { RequestCounter, classifyRequest } from './request-counter.js';

/** A non-2xx answer of the apiserver: HTTP status, the raw body (a JSON Status), and its reason. */
export class KubeApiError extends Error {
  /** Always `KubeApiError`. */
  override readonly name = 'KubeApiError';
  /** The Status `reason` (`NotFound`, `AlreadyExists`, `Conflict`, `Expired`...), when the body is one. */
  readonly reason: string | undefined;
  /**
   * @param code - The HTTP status code.
   * @param body - The response body, usually a JSON Status.
   * @param method - The request's method.
   * @param path - The request's path.
   */
  constructor(
    readonly code: number,
    readonly body: string,
    method: string,
    path: string,
  ) {
    const status = statusOf(body);
    super(`${method} ${path}: HTTP ${code}${status.reason ? ` ${status.reason}` : ''}: ${status.message ?? body.slice(0, 200)}`);
    this.reason = status.reason;
  }
  /** Alias of {@link code}, as a watch error carries it. */
  get statusCode(): number {
    return this.code;
  }
}

/** A mutating request refused by the fence (writesAllowed() was false); nothing was sent. */
export class WriteFencedError extends Error {
  /** Always `WriteFencedError`. */
  override readonly name = 'WriteFencedError';
}

/** Query parameters; undefined values are left out. */
export type Query = Readonly<Record<string, string | number | boolean | undefined>>;

/** A running watch. */
export interface WatchHandle {
  /** Ends the watch. */
  abort(): void;
}

/** Options of {@link KubeRestClient}. */
export interface KubeRestClientOptions {
  /** Counts every request but watches (the informers count those) by verb and resource (default: a new one). */
  readonly counter?: RequestCounter;
  /** Most connections kept open for requests (default 16: the adapter's write concurrency). Watches have their own. */
  readonly maxSockets?: number;
  /**
   * Fencing, checked as the very last step before a mutating request (POST, PUT, PATCH, DELETE)
   * is sent, with the request's resource (`secrets`, `events`...): when it returns false the
   * request fails with {@link WriteFencedError} unsent.
   */
  readonly writesAllowed?: (resource: string) => boolean;
  /** A request (not a watch) with no complete answer after this long is aborted (default 60 s). */
  readonly requestTimeoutMs?: number;
}

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The few apiserver calls the adapter makes, as JSON over node:https with one keep-alive pool.
 * It replaces client-node's generated clients: importing those loads every API model (some 70 MB
 * of RSS), and client-node 1.x opens a fresh TLS connection per request. With `connection.proxy`
 * set, every connection (requests and watches) is a CONNECT tunnel through that HTTP proxy.
 */
export class KubeRestClient {
  private readonly agent: Agent;
  private readonly watchAgent: Agent;
  private readonly base: URL;

  /** Requests made (watches are counted by the informers), by verb and resource. */
  readonly counter: RequestCounter;
  /** Connections opened (each a TLS handshake), requests and watches together: keep-alive keeps it low. */
  connectionsOpened = 0;
  private readonly seenSockets = new WeakSet<object>();

  /**
   * @param connection - The apiserver to talk to, and how.
   * @param options - Request counting, connection limits and write fencing.
   */
  constructor(
    readonly connection: ClusterConnection,
    private readonly options: KubeRestClientOptions = {},
  ) {
    this.counter = options.counter ?? new RequestCounter();
    this.base = new URL(connection.server.endsWith('/') ? connection.server : `${connection.server}/`);
    if (this.base.protocol !== 'https:' && this.base.protocol !== 'http:') {
      throw new Error(`apiserver URL ${connection.server} (${connection.description}): expected https://host[:port]`);
    }
    const tls = { ...connection.tls, keepAlive: true };
    const proxy = connection.proxy;
    if (proxy && this.base.protocol !== 'https:') {
      throw new Error(`apiserver URL ${connection.server} (${connection.description}): only https:// apiservers are reached through a proxy`);
    }
    // Parsed (and refused if unsupported) here too, for connections built by hand.
    const proxyUrl = proxy ? parseProxyUrl(proxy.url, `${proxy.from} of ${connection.description}`) : undefined;
    // A request's own timeout starts only once it has a socket, so the CONNECT gets the same bound.
    const agent = (agentOptions: AgentOptions, connectTimeoutMs: number): Agent =>
      proxyUrl ? new ProxyTunnelAgent(proxyUrl, agentOptions, connectTimeoutMs) : new Agent(agentOptions);
    this.agent = agent({ ...tls, maxSockets: options.maxSockets ?? 16 }, Math.min(PROXY_CONNECT_TIMEOUT_MS, options.requestTimeoutMs ?? 60_000));
    this.watchAgent = agent(tls, PROXY_CONNECT_TIMEOUT_MS);
  }

  /** GET of one object; KubeApiError with code 404 when it does not exist. */
  get<T>(path: string, query?: Query): Promise<T> {
    return this.request<T>('GET', path, { query });
  }

  /** POST (create). */
  create<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>('POST', path, { body });
  }

  /** PUT (update); the body's metadata.resourceVersion makes it conditional. */
  replace<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>('PUT', path, { body });
  }

  /** PATCH with a JSON merge patch (RFC 7386). */
  mergePatch<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>('PATCH', path, { body, contentType: 'application/merge-patch+json' });
  }

  /** One request; resolves with the parsed JSON body of a 2xx answer, rejects with {@link KubeApiError} otherwise. */
  async request<T>(method: string, path: string, init: { query?: Query; body?: unknown; contentType?: string; accept?: string } = {}): Promise<T> {
    const url = this.url(path, init.query);
    const headers: Record<string, string> = { Accept: init.accept ?? 'application/json' };
    await this.connection.authorize(headers);
    const body = init.body === undefined ? undefined : JSON.stringify(init.body);
    if (body !== undefined) {
      headers['Content-Type'] = init.contentType ?? 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(body));
    }
    // The fence is checked after the (possibly slow) credential lookup: nothing is awaited between it and the send.
    const kind = classifyRequest(method, url.href);
    if (MUTATING.has(method) && this.options.writesAllowed && !this.options.writesAllowed(kind?.resource ?? url.pathname)) {
      throw new WriteFencedError(`${method} ${url.pathname} not sent: writes are not allowed (not the leader, or stopping)`);
    }
    if (kind) this.counter.record(kind.verb, kind.resource);
    const res = await this.send(method, url, headers, body, this.agent, this.options.requestTimeoutMs ?? 60_000);
    const text = (await readAll(res, method, url)).toString('utf8');
    const code = res.statusCode ?? 0;
    if (code < 200 || code > 299) throw new KubeApiError(code, text, method, url.pathname);
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new Error(`${method} ${url.pathname}: HTTP ${code} with a body that is not JSON: ${text.slice(0, 200)}`);
    }
  }

  /**
   * Starts a watch of a collection (`watch=true` is added to `query`): `onEvent` gets each event's
   * type and object, `done` is called once, with undefined when the server ended the watch and an
   * error otherwise (a KubeApiError carrying statusCode 410 when the resourceVersion is too old).
   * The signature is client-node's Watch.watch, so either can drive an Informer; `init.accept`
   * asks for another representation (a metadata-only watch).
   */
  async watch(
    path: string,
    query: Query,
    onEvent: (type: string, object: unknown) => void,
    done: (error?: unknown) => void,
    init: { accept?: string } = {},
  ): Promise<WatchHandle> {
    const url = this.url(path, { ...query, watch: true });
    const headers: Record<string, string> = { Accept: init.accept ?? 'application/json' };
    await this.connection.authorize(headers);
    let finished = false;
    const finish = (error?: unknown): void => {
      if (finished) return;
      finished = true;
      done(error);
    };
    const abort = new AbortController();
    this.send('GET', url, headers, undefined, this.watchAgent, undefined, abort.signal).then(async (res) => {
      const code = res.statusCode ?? 0;
      if (code !== 200) {
        finish(new KubeApiError(code, (await readAll(res, 'GET', url)).toString('utf8'), 'WATCH', url.pathname));
        return;
      }
      let pending = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        pending += chunk;
        let newline: number;
        while (!finished && (newline = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, newline).trim();
          pending = pending.slice(newline + 1);
          if (line === '') continue;
          let event: { type?: unknown; object?: unknown };
          try {
            event = JSON.parse(line) as typeof event;
          } catch {
            finish(new Error(`watch ${url.pathname}: a line that is not JSON: ${line.slice(0, 200)}`));
            res.destroy();
            return;
          }
          onEvent(String(event.type), event.object);
        }
      });
      res.on('error', finish);
      res.on('close', () => finish(res.complete ? undefined : new Error(`watch ${url.pathname}: connection closed`)));
    }, finish);
    return {
      abort: () => {
        abort.abort();
        finish(new Error(`watch ${url.pathname}: aborted`));
      },
    };
  }

  /** Closes the kept-alive connections and any watch. */
  close(): void {
    this.agent.destroy();
    this.watchAgent.destroy();
  }

  private url(path: string, query?: Query): URL {
    const url = new URL(path.replace(/^\//, ''), this.base);
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    return url;
  }

  private send(
    method: string,
    url: URL,
    headers: Record<string, string>,
    body: string | undefined,
    agent: Agent,
    timeoutMs?: number,
    signal?: AbortSignal,
  ): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
      const req = send(
        url,
        { method, headers, agent: url.protocol === 'http:' ? undefined : agent, signal, ...(timeoutMs ? { timeout: timeoutMs } : {}) },
        resolve,
      );
      req.once('socket', (socket) => {
        // reusedSocket is false for a queued request handed a freed socket, so track sockets themselves.
        if (!this.seenSockets.has(socket)) {
          this.seenSockets.add(socket);
          this.connectionsOpened++;
        }
      });
      if (timeoutMs) req.on('timeout', () => req.destroy(new Error(`${method} ${url.pathname}: no answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(body);
    });
  }
}

/** Collects a response body, failing if the connection closed before all of it arrived. */
function readAll(res: IncomingMessage, method: string, url: URL): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (chunk: Buffer) => chunks.push(chunk));
    res.on('error', reject);
    res.on('close', () => {
      if (!res.complete) reject(new Error(`connection closed before the whole response to ${method} ${url.pathname} arrived`));
      else resolve(Buffer.concat(chunks));
    });
  });
}

/**
 * `/apis/certificates.k8s.io/v1/[namespaces/<ns>/]<resource>[/<name>]`: pod certificate requests and
 * trust bundles. The collection of every namespace without one.
 */
export function certificatesPath(resource: 'podcertificaterequests' | 'clustertrustbundles', namespace?: string, name?: string): string {
  return corePath(resource, namespace, name).replace(/^\/api\/v1/, '/apis/certificates.k8s.io/v1');
}

/** `/api/v1/namespaces/<ns>/<resource>[/<name>]`, or the cluster-wide collection without a namespace. */
export function corePath(resource: string, namespace?: string, name?: string): string {
  const scope = namespace === undefined ? '' : `/namespaces/${encodeURIComponent(namespace)}`;
  return `/api/v1${scope}/${resource}${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;
}
