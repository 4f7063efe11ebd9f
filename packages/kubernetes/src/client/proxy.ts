import { request as httpRequest } from 'node:http';
import { Agent, type AgentOptions, type RequestOptions } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { proxyFromEnvironment, readProxyEnvironment } from './no-proxy.js';

/**
 * How long the proxy may take to open a tunnel. Go's Transport gives a CONNECT one minute when
 * the request has no deadline of its own; a proxy that never answers must not hang a watch forever.
 */
export const PROXY_CONNECT_TIMEOUT_MS = 60_000;

/** The proxy chosen for an apiserver, and where the setting came from (`proxy-url`, `HTTPS_PROXY`...). */
export interface ProxyChoice {
  /** The proxy's URL, credentials included: redact it with {@link redactProxyUrl} before logging. */
  readonly url: string;
  /** The setting it came from. */
  readonly from: string;
}

/** A proxy URL for messages: the password replaced by `xxxxx`, as Go's url.Redacted does. */
export function redactProxyUrl(value: string): string {
  return value.replace(/\/\/([^/@:]*):[^/@]*@/, '//$1:xxxxx@');
}

/**
 * Parses a proxy URL and refuses what we cannot honour, naming `field`. Only http:// proxies
 * are supported (a CONNECT tunnel, TLS to the apiserver inside it): an https:// proxy (TLS to
 * the proxy) or a socks5:// one would otherwise be bypassed silently, so they are errors.
 */
export function parseProxyUrl(value: string, field: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${field} ${JSON.stringify(redactProxyUrl(value))} is not a URL: expected http://[user:password@]host[:port]`);
  }
  if (url.protocol !== 'http:') {
    throw new Error(
      `${field} ${redactProxyUrl(value)}: the ${url.protocol.replace(/:$/, '')}:// scheme is not supported; eso-mtls reaches the apiserver only through http:// proxies (HTTP CONNECT). Use an http:// proxy, or remove the setting`,
    );
  }
  if (url.hostname === '') throw new Error(`${field} ${redactProxyUrl(value)} names no host: expected http://[user:password@]host[:port]`);
  return url;
}

/**
 * The proxy for `server`, as client-go decides it: a kubeconfig's proxy-url applies to every host
 * (client-go sets http.ProxyURL, loopback included); without one, HTTPS_PROXY/NO_PROXY decide, as
 * Go's ProxyFromEnvironment does. `owner` names the kubeconfig cluster for messages. Throws when the
 * chosen proxy cannot be honoured, naming the setting.
 */
export function chooseProxy(
  server: string,
  proxyUrl: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
  owner: string,
): ProxyChoice | undefined {
  let choice: ProxyChoice | undefined;
  if (proxyUrl !== undefined) {
    parseProxyUrl(proxyUrl, `${owner} proxy-url`);
    choice = { url: proxyUrl, from: 'proxy-url' };
  } else {
    let target: URL;
    try {
      target = new URL(server);
    } catch {
      return undefined; // the server URL itself is refused where it is used, with its own message
    }
    const fromEnv = proxyFromEnvironment(target, readProxyEnvironment(env));
    if (!fromEnv) return undefined;
    const url = withDefaultScheme(fromEnv.value);
    parseProxyUrl(url, fromEnv.variable);
    choice = { url, from: fromEnv.variable };
  }
  if (!server.startsWith('https://')) {
    throw new Error(
      `${choice.from === 'proxy-url' ? `${owner} proxy-url` : choice.from} ${redactProxyUrl(choice.url)} applies to the apiserver ${server}, but only https:// apiservers are reached through a proxy (CONNECT); use https, or remove the proxy setting`,
    );
  }
  return choice;
}

/** Go reads an environment proxy without a scheme (`proxy:3128`) as http://. */
function withDefaultScheme(value: string): string {
  try {
    const url = new URL(value);
    if (url.host !== '') return value;
  } catch {
    // not a URL as written: try it as host[:port]
  }
  return `http://${value}`;
}

/**
 * An https Agent whose connections are CONNECT tunnels through an HTTP proxy, with TLS to the
 * apiserver inside: the CA, client certificate and server name checks are the agent's options,
 * exactly as without a proxy. Credentials in the proxy URL go as Proxy-Authorization: Basic.
 */
export class ProxyTunnelAgent extends Agent {
  /** `proxy` as {@link parseProxyUrl} returns it. */
  constructor(
    private readonly proxy: URL,
    options: AgentOptions,
    private readonly connectTimeoutMs = PROXY_CONNECT_TIMEOUT_MS,
  ) {
    super(options);
  }

  override createConnection(options: RequestOptions, callback?: (err: Error | null, stream: Duplex) => void): undefined {
    const host = String(options.host ?? 'localhost');
    const authority = `${host.includes(':') ? `[${host}]` : host}:${options.port ?? 443}`;
    openTunnel(this.proxy, authority, this.connectTimeoutMs).then(
      (socket) => {
        // The Agent asks for TCP keep-alive through these; the tunnel's socket is the TCP one.
        const { keepAlive, keepAliveInitialDelay } = options as { keepAlive?: boolean; keepAliveInitialDelay?: number };
        if (keepAlive) socket.setKeepAlive(true, keepAliveInitialDelay);
        // The parent's createConnection is tls.connect plus its session cache; over our socket.
        const tlsSocket = super.createConnection({ ...options, socket } as RequestOptions);
        callback?.(null, tlsSocket!);
      },
      (error: Error) => callback?.(error, undefined as never),
    );
    return undefined;
  }
}

/** Opens a CONNECT tunnel to `authority` (host:port) through `proxy`; resolves with the raw socket. */
export function openTunnel(proxy: URL, authority: string, timeoutMs: number): Promise<Socket> {
  const name = redactProxyUrl(proxy.href.replace(/\/$/, ''));
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { Host: authority };
    if (proxy.username !== '' || proxy.password !== '') {
      const credentials = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
      headers['Proxy-Authorization'] = `Basic ${Buffer.from(credentials).toString('base64')}`;
    }
    const req = httpRequest({
      host: proxy.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: proxy.port || 80,
      method: 'CONNECT',
      path: authority,
      headers,
      agent: false,
      timeout: timeoutMs,
    });
    req.once('connect', (res, socket: Socket, head: Buffer) => {
      const code = res.statusCode ?? 0;
      if (code < 200 || code > 299) {
        socket.destroy();
        reject(new Error(`proxy ${name} refused CONNECT ${authority}: HTTP ${code} ${res.statusMessage ?? ''}`.trimEnd()));
        return;
      }
      socket.setTimeout(0);
      if (head.length > 0) socket.unshift(head);
      resolve(socket);
    });
    req.once('timeout', () => req.destroy(new Error(`proxy ${name}: no answer to CONNECT ${authority} within ${timeoutMs} ms`)));
    req.once('error', (e) =>
      reject(e.message.startsWith(`proxy ${name}`) ? e : new Error(`proxy ${name}: CONNECT ${authority} failed: ${e.message}`, { cause: e })),
    );
    req.end();
  });
}
