import { PROVIDER_LABEL, isDnsName } from '../x509/names.js';

/**
 * A label a namespace must carry before its labelled Services are served (threat T3, rogue
 * registration): the controller's own check, which holds whether or not the admission policy of
 * deploy/overlays/provider-label-policy is installed. A cluster admin sets the label; see
 * docs/label-policy.md.
 */
export interface NamespaceRequirement {
  /** The label key, e.g. `eso-mtls.io/providers-allowed`. */
  readonly key: string;
  /** The value it must have, e.g. `true`. */
  readonly value: string;
}

/** The namespaces that carry a {@link NamespaceRequirement}'s label, as a set of names. */
export interface AllowedNamespaces {
  /** Whether `namespace` carries the label. */
  has(namespace: string): boolean;
}

// A label name, and a label value: 63 characters at most, alphanumeric at both ends, `-_.` inside.
const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** True for a Kubernetes label key: an optional DNS-subdomain prefix and `/`, then a name. */
function isLabelKey(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash < 0) return LABEL_NAME.test(key);
  const prefix = key.slice(0, slash);
  return isDnsName(prefix) && LABEL_NAME.test(key.slice(slash + 1));
}

/**
 * Reads `key=value` (a label selector of one equality; the value may not be empty); undefined
 * when it is not one. A bare `key` is refused: the value must be said, as the policy's is.
 */
export function parseNamespaceRequirement(text: string): NamespaceRequirement | undefined {
  const eq = text.indexOf('=');
  if (eq < 0) return undefined;
  const key = text.slice(0, eq);
  const value = text.slice(eq + 1);
  return isLabelKey(key) && LABEL_NAME.test(value) ? { key, value } : undefined;
}

/** `key=value`: the label selector of the allowed namespaces, and how messages name the requirement. */
export function formatNamespaceRequirement(requirement: NamespaceRequirement): string {
  return `${requirement.key}=${requirement.value}`;
}

/** Why the labelled Services of `namespace` are not served: for Events, logs and Denied requests. */
export function notAllowedMessage(namespace: string, requirement: NamespaceRequirement): string {
  return `namespace ${namespace} is not allowed to have provider Services: it lacks the label ${formatNamespaceRequirement(requirement)}, which the controller requires (--require-namespace-label), so Services labelled ${PROVIDER_LABEL} there get no certificate. A cluster admin allows it with: kubectl label namespace ${namespace} ${formatNamespaceRequirement(requirement)}`;
}
