// grpc-js ends a failed connection's details with "Resolution note: <note>", where the note is
// usually empty; a message ending in a blank label reads as if something were cut off.
const EMPTY_RESOLUTION_NOTE = /\.?\s*Resolution note:\s*$/;
// grpc-js's own words for a name that does not resolve, and Node's (getaddrinfo) beneath them.
const UNRESOLVED = /Name resolution failed for target dns:([A-Za-z0-9.-]+):(\d+)|getaddrinfo (?:ENOTFOUND|EAI_AGAIN) ([A-Za-z0-9.-]+)/;
// A Kubernetes Service's DNS name: <service>.<namespace>.svc, optionally followed by the cluster domain.
const SERVICE_NAME = /\.svc(\.|$)/;

/** True when grpc-js's `details` say the name dialled does not resolve. */
export const isNameResolutionFailure = (details: string): boolean => UNRESOLVED.test(details);

/**
 * grpc-js's details of a call that failed on the network, as our error carries them: without an
 * empty "Resolution note:", and, when a Service name (`*.svc`) does not resolve, with what to do
 * about it: only the cluster's DNS knows that name, and outside the cluster `connectTo` dials
 * somewhere else (loopback, a port-forward) while the certificate is still verified against it.
 */
export function networkFailureDetails(details: string): string {
  const trimmed = details.replace(EMPTY_RESOLUTION_NOTE, '');
  const m = UNRESOLVED.exec(trimmed);
  const host = m?.[1] ?? m?.[3];
  if (host === undefined || !SERVICE_NAME.test(host)) return trimmed;
  const address = `${host}:${m?.[2] ?? '<port>'}`;
  return (
    `${trimmed}. ${host} is a cluster Service name, which only the cluster's DNS resolves: outside the cluster, ` +
    `dial with connectTo, e.g. pool.channel('${address}', { connectTo: '127.0.0.1:<port>' }) through a port-forward; ` +
    `the provider's certificate is still verified against ${host}`
  );
}
