import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A user the apiserver knows by a static bearer token (`--token-auth-file`). */
export interface IdentitySpec {
  /** User name, as RBAC subjects name it (kind User). */
  readonly name: string;
  /** Groups the user belongs to, e.g. `system:masters` for an admin. */
  readonly groups?: readonly string[];
}

/** An identity with its token and the kubeconfig file written for it. */
export interface Identity extends IdentitySpec {
  readonly token: string;
  readonly kubeconfigPath: string;
}

/** The admin every control plane has: group `system:masters` bypasses RBAC. */
export const ADMIN: IdentitySpec = { name: 'admin', groups: ['system:masters'] };

/**
 * The identity a kubelet has on node `nodeName`: user `system:node:<nodeName>` in group
 * `system:nodes`, which the Node authorizer and NodeRestriction recognise (with
 * `startControlPlane({ nodeAuthorization: true })`). Pass it in `identities`; its kubeconfig is
 * `plane.kubeconfigFor('system:node:<nodeName>')`.
 */
export function nodeIdentity(nodeName: string): IdentitySpec {
  return { name: `system:node:${nodeName}`, groups: ['system:nodes'] };
}

const USER_NAME = /^[A-Za-z0-9:._@-]+$/;

/** Validates the specs and gives each a random token; the admin comes first. */
export function provisionIdentities(specs: readonly IdentitySpec[]): Map<string, { spec: IdentitySpec; token: string }> {
  const all = new Map<string, { spec: IdentitySpec; token: string }>();
  for (const spec of [ADMIN, ...specs]) {
    if (!USER_NAME.test(spec.name)) {
      throw new Error(`identity name ${JSON.stringify(spec.name)} must match ${USER_NAME} (it is written into the apiserver's token CSV)`);
    }
    for (const g of spec.groups ?? []) {
      if (!USER_NAME.test(g)) throw new Error(`group ${JSON.stringify(g)} of identity ${spec.name} must match ${USER_NAME}`);
    }
    if (all.has(spec.name)) {
      if (spec === ADMIN || spec.name === ADMIN.name) throw new Error(`identity name "${ADMIN.name}" is reserved for the control plane's admin`);
      throw new Error(`identity ${JSON.stringify(spec.name)} is listed twice`);
    }
    all.set(spec.name, { spec, token: randomBytes(24).toString('hex') });
  }
  return all;
}

/** Writes the CSV `token,user,uid,"group1,group2"` the apiserver reads with `--token-auth-file`. */
export function writeTokenFile(path: string, identities: Map<string, { spec: IdentitySpec; token: string }>): void {
  const lines = [...identities.values()].map(({ spec, token }) => `${token},${spec.name},uid-${spec.name},"${(spec.groups ?? []).join(',')}"`);
  writeFileSync(path, lines.join('\n') + '\n', { mode: 0o600 });
}

/** Writes a kubeconfig (JSON, which is YAML) for `user` against `server`, trusting `caPem`. */
export function writeKubeconfig(dir: string, user: string, token: string, server: string, caPem: string): string {
  const path = join(dir, `kubeconfig-${user.replace(/[^A-Za-z0-9._-]/g, '_')}.json`);
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'envtest', cluster: { server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') } }],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: user, context: { cluster: 'envtest', user, namespace: 'default' } }],
    'current-context': user,
  };
  writeFileSync(path, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
  return path;
}
