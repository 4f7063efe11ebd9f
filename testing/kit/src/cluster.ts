// The installed controller seen from its cluster: the shipped names, provider namespaces,
// convergence as Node's own X509Certificate checks it, the shipped roles, the Lease, the audit log.
import { X509Certificate } from 'node:crypto';
import { CoordinationV1Api, CoreV1Api, type KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import type { AuditEvent, ControlPlane } from '../../envtest/src/index.js';
import { text } from './secrets.js';

export const ESO_NS = 'external-secrets-system';
export const PROVIDER_SECRET = 'external-secrets-provider-tls';
export const CA_SECRET = 'eso-provider-ca-internal';
export const CLIENT_SECRET = 'eso-provider-client-tls';
export const SA_USER = 'system:serviceaccount:external-secrets-system:eso-mtls-controller';

/** Creates `namespace` with labelled provider Services named `services`. */
export async function createProviderNamespace(admin: KubeConfig, namespace: string, services: readonly string[]): Promise<void> {
  const core = admin.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  for (const name of services) await createProviderService(admin, namespace, name);
}

export async function createProviderService(admin: KubeConfig, namespace: string, name: string): Promise<void> {
  await admin.makeApiClient(CoreV1Api).createNamespacedService({
    namespace,
    body: {
      metadata: { name, labels: { 'external-secrets.io/provider': 'true' } },
      spec: { ports: [{ name: 'grpc', port: 8443 }] },
    },
  });
}

/**
 * True when every namespace in `expected` holds a provider Secret whose certificate, checked with
 * Node's X509Certificate, is signed by the stored CA and names each of its Services.
 */
export async function converged(admin: KubeConfig, expected: ReadonlyMap<string, readonly string[]>): Promise<boolean> {
  const core = admin.makeApiClient(CoreV1Api);
  const secrets = (await core.listSecretForAllNamespaces()).items;
  const find = (ns: string, name: string) => secrets.find((s) => s.metadata?.namespace === ns && s.metadata?.name === name);
  const caPem = text(find(ESO_NS, CA_SECRET), 'ca.crt');
  if (!caPem || !text(find(ESO_NS, CLIENT_SECRET), 'tls.crt')) return false;
  const ca = new X509Certificate(caPem);
  for (const [ns, services] of expected) {
    const leafPem = text(find(ns, PROVIDER_SECRET), 'tls.crt');
    if (!leafPem) return false;
    const leaf = new X509Certificate(leafPem);
    if (!leaf.verify(ca.publicKey)) return false;
    const sans = (leaf.subjectAltName ?? '').split(', ');
    for (const s of services) if (!sans.includes(`DNS:${s}.${ns}.svc.cluster.local`)) return false;
  }
  return true;
}

/**
 * Every value of every Secret that holds a private key, in each form a log could leak it: the
 * Secret's base64, the PEM text, and each base64 line of the PEM body (the DER).
 */
export async function privateKeyForms(admin: KubeConfig): Promise<string[]> {
  const secrets = (await admin.makeApiClient(CoreV1Api).listSecretForAllNamespaces()).items;
  const forms: string[] = [];
  for (const s of secrets) {
    for (const b64 of Object.values(s.data ?? {})) {
      const pem = Buffer.from(b64, 'base64').toString('utf8');
      if (!pem.includes('PRIVATE KEY')) continue;
      forms.push(b64, pem);
      const body = pem.split('\n').filter((l) => l && !l.startsWith('-----'));
      forms.push(body.join(''), ...body.filter((l) => l.length >= 40));
    }
  }
  return forms;
}

/** Binds the shipped ClusterRole and both shipped Roles to a static-token user. */
export async function bindShippedRoles(admin: KubeConfig, user: string): Promise<void> {
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  const subjects = [{ kind: 'User', name: user, apiGroup: 'rbac.authorization.k8s.io' }];
  const safe = user.replace(/[^a-z0-9-]/g, '-');
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: `eso-mtls-controller-${safe}` },
      subjects,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'eso-mtls-controller' },
    },
  });
  for (const role of ['eso-mtls-controller-secrets', 'eso-mtls-controller-leader-election']) {
    await rbac.createNamespacedRoleBinding({
      namespace: ESO_NS,
      body: { metadata: { name: `${role}-${safe}` }, subjects, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role } },
    });
  }
}

/** The Lease's holder, or undefined when absent. */
export async function leaseHolder(admin: KubeConfig, name = 'eso-mtls-controller'): Promise<string | undefined> {
  try {
    return (await admin.makeApiClient(CoordinationV1Api).readNamespacedLease({ name, namespace: ESO_NS })).spec?.holderIdentity;
  } catch {
    return undefined;
  }
}

/** Audit events of writes (create/update/patch/delete) to Secrets or Events by `user`. */
export function writesBy(plane: ControlPlane, user: string, resources: readonly string[] = ['secrets', 'events']): AuditEvent[] {
  return plane
    .auditEvents()
    .filter((e) => e.user.username === user && ['create', 'update', 'patch', 'delete'].includes(e.verb) && resources.includes(e.objectRef?.resource ?? ''));
}
