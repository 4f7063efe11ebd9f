import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';

/** A user the apiserver knows by a static bearer token (`--token-auth-file`). */
export interface IdentitySpec {
  /** User name, as RBAC subjects name it (kind User). */
  readonly name: string;
  /** Groups the user belongs to, e.g. `system:masters` for an admin. */
  readonly groups?: readonly string[];
}

/** An identity with the token the apiserver knows it by. */
export interface StaticIdentity extends IdentitySpec {
  readonly token: string;
}

/** The admin every control plane has: group `system:masters` bypasses RBAC. */
export const ADMIN: IdentitySpec = { name: 'admin', groups: ['system:masters'] };

/**
 * kube-controller-manager's user, which the apiserver's bootstrap RBAC binds to ClusterRole
 * system:kube-controller-manager.
 */
export const KUBE_CONTROLLER_MANAGER: IdentitySpec = { name: 'system:kube-controller-manager' };
/**
 * kube-scheduler's user, bound to ClusterRole system:kube-scheduler.
 */
export const KUBE_SCHEDULER: IdentitySpec = { name: 'system:kube-scheduler' };
/**
 * kube-proxy's user, bound to ClusterRole system:node-proxier.
 */
export const KUBE_PROXY: IdentitySpec = { name: 'system:kube-proxy' };

/**
 * The identity a kubelet has on node `nodeName`: user `system:node:<nodeName>` in group
 * `system:nodes`, which the Node authorizer and NodeRestriction recognise (with
 * `nodeAuthorization: true`).
 */
export function nodeIdentity(nodeName: string): IdentitySpec {
  return { name: `system:node:${nodeName}`, groups: ['system:nodes'] };
}

const USER_NAME = /^[A-Za-z0-9:._@-]+$/;
const KEPT_TOKEN = /^([0-9a-f]{48}),([^,]+),/;

/**
 * Validates the specs and gives each a token, the admin first: the one `tokenFile` already holds
 * for that user if there is one (a kept folder's tokens stay valid), else a random one.
 */
export function provisionIdentities(specs: readonly IdentitySpec[], tokenFile: string): Map<string, StaticIdentity> {
  const kept = new Map<string, string>();
  if (existsSync(tokenFile)) {
    for (const line of readFileSync(tokenFile, 'utf8').split('\n')) {
      const match = KEPT_TOKEN.exec(line);
      if (match) kept.set(match[2]!, match[1]!);
    }
  }
  const all = new Map<string, StaticIdentity>();
  for (const spec of [ADMIN, ...specs]) {
    if (!USER_NAME.test(spec.name)) {
      throw new Error(`identity name ${JSON.stringify(spec.name)} must match ${USER_NAME} (it is written into the apiserver's token CSV)`);
    }
    for (const g of spec.groups ?? []) {
      if (!USER_NAME.test(g)) throw new Error(`group ${JSON.stringify(g)} of identity ${spec.name} must match ${USER_NAME}`);
    }
    if (all.has(spec.name)) {
      if (spec.name === ADMIN.name) throw new Error(`identity name "${ADMIN.name}" is reserved for the control plane's admin`);
      throw new Error(`identity ${JSON.stringify(spec.name)} is listed twice`);
    }
    all.set(spec.name, { ...spec, token: kept.get(spec.name) ?? randomBytes(24).toString('hex') });
  }
  return all;
}

/**
 * Writes the CSV `token,user,uid,"group1,group2"` the apiserver reads with `--token-auth-file`;
 * without groups the column is left out, as an empty one would put the user in group "".
 */
export function writeTokenFile(path: string, identities: ReadonlyMap<string, StaticIdentity>): void {
  const groupsColumn = (groups: readonly string[] | undefined): string => (groups?.length ? `,"${groups.join(',')}"` : '');
  const lines = [...identities.values()].map(({ name, groups, token }) => `${token},${name},uid-${name}${groupsColumn(groups)}`);
  writeFileSync(path, lines.join('\n') + '\n', { mode: 0o600 });
}

/** Where clients reach the apiserver, and what they trust. */
export interface ApiServerEndpoint {
  /** https://host:port */
  readonly url: string;
  /** The apiserver's serving CA (PEM). */
  readonly caPem: string;
  /** The name to verify the serving certificate against when the url's host is not in it (a forwarder's address). */
  readonly tlsServerName?: string | undefined;
}

/** A kubeconfig for `user` with a bearer token, trusting the apiserver's CA. */
export function tokenKubeConfig(endpoint: ApiServerEndpoint, user: string, token: string, namespace = 'default'): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: 'eso-mtls',
        server: endpoint.url,
        caData: Buffer.from(endpoint.caPem).toString('base64'),
        skipTLSVerify: false,
        ...(endpoint.tlsServerName === undefined ? {} : { tlsServerName: endpoint.tlsServerName }),
      },
    ],
    users: [{ name: user, token }],
    contexts: [{ name: user, cluster: 'eso-mtls', user, namespace }],
    currentContext: user,
  });
  return kc;
}

/** Writes `kc` to `path` (JSON, which is YAML), readable by its owner only (it holds a token). */
export function writeKubeconfig(path: string, kc: KubeConfig): void {
  writeFileSync(path, `${kc.exportConfig()}\n`, { mode: 0o600 });
}
