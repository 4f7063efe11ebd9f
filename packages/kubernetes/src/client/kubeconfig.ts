import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse } from 'yaml';
import { type ClusterConnection, type ConnectionTls, describeProxy } from './connection.js';
import { chooseProxy } from './proxy.js';

/**
 * A kubeconfig that needs something only client-node's KubeConfig does (an exec plugin, an auth
 * provider, impersonation). `feature` names it; the caller may fall back to client-node.
 */
export class UnsupportedKubeconfigError extends Error {
  /** Always `UnsupportedKubeconfigError`. */
  override readonly name = 'UnsupportedKubeconfigError';
  /**
   * @param path - The kubeconfig file.
   * @param feature - What in it the reader does not support.
   */
  constructor(
    readonly path: string,
    readonly feature: string,
  ) {
    super(`kubeconfig ${path}: ${feature} is not supported by the eso-mtls reader; use client-node's KubeConfig (connectionFromKubeConfig)`);
  }
}

/** Options of {@link loadKubeconfigFile}. */
export interface KubeconfigOptions {
  /** Context to use instead of current-context. */
  readonly context?: string;
  /** The clock for re-reading token files (default Date.now). */
  readonly now?: () => number;
  /** Reads a file (default fs.readFileSync); tests inject failures. */
  readonly readFile?: (path: string) => Buffer;
  /** HTTPS_PROXY/NO_PROXY (or lower-case), used when the cluster has no proxy-url (default process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** Options of {@link loadInClusterConnection}. */
export interface InClusterOptions {
  /** KUBERNETES_SERVICE_HOST/PORT, and HTTPS_PROXY/NO_PROXY (or lower-case) as client-go reads them (default process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Default /var/run/secrets/kubernetes.io/serviceaccount. */
  readonly serviceAccountDir?: string;
  /** The clock for re-reading the token file (default Date.now). */
  readonly now?: () => number;
  /** Reads a file (default fs.readFileSync); tests inject failures. */
  readonly readFile?: (path: string) => Buffer;
}

/** client-go re-reads token files at most this often: bound service account tokens rotate hourly. */
export const TOKEN_REREAD_MS = 60_000;

type Entry = Record<string, unknown>;

// Settings that change authentication; silently ignoring any of them would connect as someone
// else, or not at all.
const UNSUPPORTED_USER = ['exec', 'auth-provider', 'as', 'as-uid', 'as-groups', 'as-user-extra'];

/**
 * Reads a kubeconfig file (YAML or JSON) into a {@link ClusterConnection} without client-node:
 * server, certificate-authority(-data), insecure-skip-tls-verify, tls-server-name, proxy-url (an
 * http:// CONNECT proxy; without it HTTPS_PROXY/NO_PROXY decide, as in client-go), client
 * certificates, token, tokenFile (re-read at most once a minute) and basic auth. Relative file
 * paths are resolved against the kubeconfig's directory, as kubectl does. Anything else that
 * affects authentication throws {@link UnsupportedKubeconfigError}; other errors, such as a
 * proxy-url that is not http://, name the field.
 */
export function loadKubeconfigFile(path: string, options: KubeconfigOptions = {}): ClusterConnection {
  const read = options.readFile ?? ((p: string) => readFileSync(p));
  const fail = (what: string): never => {
    throw new Error(`kubeconfig ${path}: ${what}`);
  };
  let doc: unknown;
  try {
    doc = parse(read(path).toString('utf8'));
  } catch (e) {
    fail(`cannot read it: ${(e as Error).message}`);
  }
  if (!isEntry(doc)) return fail('not a kubeconfig (expected a mapping with clusters, users and contexts)');
  const contextName = options.context ?? str(doc['current-context']);
  if (!contextName) return fail('no current-context is set; set one, or name a context');
  const context = named(doc, 'contexts', 'context', contextName) ?? fail(`context "${contextName}" is not defined under contexts`);
  const clusterName = str(context.cluster) ?? fail(`context "${contextName}" names no cluster`);
  const cluster =
    named(doc, 'clusters', 'cluster', clusterName) ?? fail(`cluster "${clusterName}" (of context "${contextName}") is not defined under clusters`);
  const userName = str(context.user);
  const user: Entry = userName
    ? (named(doc, 'users', 'user', userName) ?? fail(`user "${userName}" (of context "${contextName}") is not defined under users`))
    : {};
  for (const key of UNSUPPORTED_USER) if (user[key] !== undefined) throw new UnsupportedKubeconfigError(path, `user ${key}`);

  const server = str(cluster.server) ?? fail(`cluster "${clusterName}" has no server`);
  const proxyUrl = cluster['proxy-url'];
  if (proxyUrl !== undefined && typeof proxyUrl !== 'string') fail(`cluster "${clusterName}" proxy-url must be a string, like http://proxy:3128`);
  const proxy = chooseProxy(server, str(proxyUrl), options.env ?? process.env, `kubeconfig ${path}: cluster "${clusterName}"`);
  const base = dirname(resolve(path));
  // A `<key>-data` (base64) or a `<key>` file path, resolved against the kubeconfig's directory.
  const material = (entry: Entry, key: string, owner: string): Buffer | undefined => {
    const data = str(entry[`${key}-data`]);
    if (data) return base64Data(data) ?? fail(`${owner} ${key}-data is not base64 (standard alphabet, padded, as kubectl writes it)`);
    const file = str(entry[key]);
    if (!file) return undefined;
    const full = isAbsolute(file) ? file : resolve(base, file);
    try {
      return read(full);
    } catch (e) {
      return fail(`${owner} ${key} ${full}: ${(e as Error).message}`);
    }
  };
  const ca = material(cluster, 'certificate-authority', `cluster "${clusterName}"`);
  const cert = material(user, 'client-certificate', `user "${userName}"`);
  const key = material(user, 'client-key', `user "${userName}"`);
  if ((cert === undefined) !== (key === undefined)) fail(`user "${userName}" has a client certificate without its key, or a key without its certificate`);
  const tls: ConnectionTls = {
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
    ...(cluster['insecure-skip-tls-verify'] === true ? { rejectUnauthorized: false } : {}),
    ...(str(cluster['tls-server-name']) ? { servername: str(cluster['tls-server-name']) } : {}),
  };

  const token = str(user.token);
  const tokenFile = str(user.tokenFile);
  const username = str(user.username);
  let authorize: ClusterConnection['authorize'] = async () => undefined;
  if (token) {
    authorize = async (headers) => {
      headers.Authorization = `Bearer ${token}`;
    };
  } else if (tokenFile) {
    const readToken = cachedFile(
      isAbsolute(tokenFile) ? tokenFile : resolve(base, tokenFile),
      read,
      options.now ?? Date.now,
      `kubeconfig ${path}: user "${userName}" tokenFile`,
    );
    authorize = async (headers) => {
      headers.Authorization = `Bearer ${readToken()}`;
    };
  } else if (username) {
    const basic = Buffer.from(`${username}:${str(user.password) ?? ''}`).toString('base64');
    authorize = async (headers) => {
      headers.Authorization = `Basic ${basic}`;
    };
  }
  return {
    server,
    tls,
    authorize,
    ...(proxy ? { proxy } : {}),
    description: `kubeconfig ${path} (context ${contextName}, cluster ${clusterName}, user ${userName ?? 'none'})${describeProxy(proxy)}`,
  };
}

/**
 * The in-cluster connection: the apiserver at KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT,
 * trusted through the service account's ca.crt, authenticated with its token, which is re-read at
 * most once a minute (the kubelet rotates bound tokens). HTTPS_PROXY/NO_PROXY apply, as client-go's
 * InClusterConfig leaves them to Go's ProxyFromEnvironment. Errors say what is missing.
 */
export function loadInClusterConnection(options: InClusterOptions = {}): ClusterConnection {
  const env = options.env ?? process.env;
  const dir = options.serviceAccountDir ?? '/var/run/secrets/kubernetes.io/serviceaccount';
  const read = options.readFile ?? ((p: string) => readFileSync(p));
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw new Error('not running in a cluster (KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT unset): pass --kubeconfig or set ESO_MTLS_KUBECONFIG');
  }
  const tokenPath = `${dir}/token`;
  let ca: Buffer;
  try {
    ca = read(`${dir}/ca.crt`);
  } catch (e) {
    throw new Error(
      `in-cluster configuration needs the service account CA at ${dir}/ca.crt: ${(e as Error).message}; set automountServiceAccountToken, or pass --kubeconfig`,
      { cause: e },
    );
  }
  const readToken = cachedFile(tokenPath, read, options.now ?? Date.now, 'in-cluster service account token');
  try {
    readToken();
  } catch (e) {
    throw new Error(`${(e as Error).message}; set automountServiceAccountToken, or pass --kubeconfig`, { cause: e });
  }
  const server = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const proxy = chooseProxy(server, undefined, env, 'in-cluster');
  return {
    server,
    tls: { ca },
    ...(proxy ? { proxy } : {}),
    authorize: async (headers) => {
      headers.Authorization = `Bearer ${readToken()}`;
    },
    description: `in-cluster service account (${dir})${describeProxy(proxy)}`,
  };
}

/** A trimmed file's text, re-read at most every {@link TOKEN_REREAD_MS}; a failed re-read keeps the last good value. */
function cachedFile(path: string, read: (p: string) => Buffer, now: () => number, what: string): () => string {
  let value: string | undefined;
  let readAt = -Infinity;
  return () => {
    if (value === undefined || now() - readAt >= TOKEN_REREAD_MS) {
      try {
        const text = read(path).toString('utf8').trim();
        if (text === '') throw new Error('the file is empty');
        value = text;
      } catch (e) {
        if (value === undefined) throw new Error(`${what} ${path}: ${(e as Error).message}`, { cause: e });
      }
      readAt = now();
    }
    return value;
  };
}

// Go's base64.StdEncoding, which client-go decodes `-data` fields with: padded, and line breaks
// ignored. Buffer.from(text, 'base64') would instead skip what it cannot read and return the rest.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The bytes of a kubeconfig `-data` field, or undefined when it is not base64 as client-go reads it. */
function base64Data(text: string): Buffer | undefined {
  const compact = text.replace(/[\r\n]/g, '');
  return BASE64.test(compact) ? Buffer.from(compact, 'base64') : undefined;
}

function isEntry(v: unknown): v is Entry {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** The `field` mapping of the entry named `name` in the list `list` (`clusters`/`cluster`...). */
function named(doc: Entry, list: string, field: string, name: string): Entry | undefined {
  const items = doc[list];
  if (!Array.isArray(items)) return undefined;
  for (const item of items) {
    if (isEntry(item) && item.name === name) return isEntry(item[field]) ? item[field] : {};
  }
  return undefined;
}
