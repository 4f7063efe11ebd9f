/** The Service label that makes ESO issue a server certificate for a Service's namespace. */
export const PROVIDER_LABEL = 'external-secrets.io/provider';
/** The one Secret name ESO writes into provider namespaces. */
export const PROVIDER_SECRET_NAME = 'external-secrets-provider-tls';
/** Subject common name of the ESO core client certificate. */
export const CLIENT_COMMON_NAME = 'external-secrets-core';

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MAX_LABEL = 63;
const MAX_NAME = 253;

/** True when `s` is an RFC 1123 label as Kubernetes defines it (lower case, at most 63 characters). */
export function isDnsLabel(s: string): boolean {
  return s.length > 0 && s.length <= MAX_LABEL && DNS1123_LABEL.test(s);
}

/** True when `s` is an RFC 1123 subdomain: dot-separated labels, at most 253 characters in all. */
export function isDnsName(s: string): boolean {
  return s.length > 0 && s.length <= MAX_NAME && s.split('.').every(isDnsLabel);
}

/** A Service, by namespace and name, as the planner needs to know it. */
export interface ServiceRef {
  /** The Service's namespace. */
  readonly namespace: string;
  /** The Service's name. */
  readonly name: string;
}

/** Raised for a Service or namespace name that cannot appear in a DNS SAN. */
export class InvalidNameError extends Error {
  /** Always `InvalidNameError`. */
  override readonly name = 'InvalidNameError';
}

/**
 * The DNS subjectAltNames of one Service, from the design: `svc`, `svc.ns`, `svc.ns.svc` and
 * `svc.ns.svc.<clusterDomain>`. Throws {@link InvalidNameError} naming the offending value when
 * a name is not a DNS-1123 label or the longest name would exceed 253 characters.
 */
export function serviceDnsNames(service: ServiceRef, clusterDomain: string): string[] {
  const { name, namespace } = service;
  if (!isDnsLabel(name)) {
    throw new InvalidNameError(
      `Service name ${JSON.stringify(name)} in namespace ${JSON.stringify(namespace)} is not a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters)`,
    );
  }
  if (!isDnsLabel(namespace)) {
    throw new InvalidNameError(`namespace ${JSON.stringify(namespace)} is not a DNS-1123 label`);
  }
  if (!isDnsName(clusterDomain)) {
    throw new InvalidNameError(`cluster domain ${JSON.stringify(clusterDomain)} is not a DNS name`);
  }
  const fqdn = `${name}.${namespace}.svc.${clusterDomain}`;
  if (fqdn.length > MAX_NAME) {
    throw new InvalidNameError(`DNS name ${fqdn} of Service ${namespace}/${name} is longer than ${MAX_NAME} characters`);
  }
  return [name, `${name}.${namespace}`, `${name}.${namespace}.svc`, fqdn];
}

/**
 * The DNS subjectAltNames of a namespace's one server certificate: the sorted, de-duplicated
 * union of the names of every labelled Service in it. A namespace holds one Secret
 * (`external-secrets-provider-tls`), so all its providers share one certificate.
 */
export function namespaceDnsNames(services: readonly ServiceRef[], clusterDomain: string): string[] {
  const names = new Set<string>();
  for (const s of services) for (const n of serviceDnsNames(s, clusterDomain)) names.add(n);
  return [...names].sort();
}

/** The URI SAN of the ESO client identity: `spiffe://<clusterDomain>/ns/<namespace>/sa/<serviceAccount>`. */
export function clientSpiffeId(clusterDomain: string, esoNamespace: string, serviceAccount: string): string {
  return `spiffe://${clusterDomain}/ns/${esoNamespace}/sa/${serviceAccount}`;
}
