/** A Secret the plan writes: the CA Secret, the client Secret, or a provider namespace's Secret. */
export type SecretTarget = 'ca' | 'client' | { readonly namespace: string };

/** `ca`, `client` or `namespace/<name>`: for logs, maps and messages. */
export function describeTarget(target: SecretTarget): string {
  return typeof target === 'string' ? target : `namespace/${target.namespace}`;
}
