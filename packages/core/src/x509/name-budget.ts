import { type ServiceRef, serviceDnsNames } from './names.js';

/**
 * The largest server certificate we issue, in DER bytes. A TLS peer refuses a Certificate message
 * above its cap: 100 KiB in OpenSSL and Node, 256 KiB in Go. The provider sends its leaf alone, and
 * a pod-certificate chain is capped at 100 KiB of PEM, which 64 KiB of DER stays under (≈ 88 KiB).
 */
export const MAX_SERVER_CERTIFICATE_BYTES = 64 * 1024;

/**
 * Everything in a server leaf but its dNSNames stays under this: issuer and subject names, an
 * RSA-3072 key and signature, the extensions (about 1.3 KB measured, with RSA-3072 everywhere).
 */
export const SERVER_CERTIFICATE_OVERHEAD_BYTES = 4 * 1024;

/** DER bytes the dNSNames of one server certificate may take: the certificate bound less the overhead. */
export const MAX_DNS_NAME_BYTES = MAX_SERVER_CERTIFICATE_BYTES - SERVER_CERTIFICATE_OVERHEAD_BYTES;

/** DER bytes of one dNSName GeneralName: the [2] tag, the length octets, the name (ASCII). */
export function dnsNameBytes(name: string): number {
  return 1 + (name.length < 0x80 ? 1 : name.length < 0x100 ? 2 : 3) + name.length;
}

/** DER bytes of a set of dNSNames, as {@link MAX_DNS_NAME_BYTES} counts them. */
export function dnsNamesBytes(names: Iterable<string>): number {
  let total = 0;
  for (const n of names) total += dnsNameBytes(n);
  return total;
}

/** The Services of a namespace split by whether their names fit in its certificate. */
export interface FittedServices<S extends ServiceRef> {
  /** The Services whose names go into the certificate. */
  readonly fitted: readonly S[];
  /** Each refused Service, with the bytes its names would have brought the certificate to. */
  readonly refused: readonly { readonly service: S; readonly bytes: number }[];
  /** The fitted Services with a name the current certificate lacks (every one when there is none): whom a new certificate is for. */
  readonly added: readonly S[];
  /** dNSName bytes of the fitted Services' names. */
  readonly bytes: number;
  /** The fitted Services' DNS names, sorted and de-duplicated: the certificate's subjectAltName. */
  readonly dnsNames: readonly string[];
}

/**
 * Which Services' names go into a namespace's one certificate, within `budget` bytes of dNSNames.
 * Services the current certificate already serves come first, then the others by name, so a new
 * Service never pushes out one that is served, and renewals keep the set that last fitted.
 * `services` must have valid names (see serviceDnsNames).
 */
export function fitServiceNames<S extends ServiceRef>(
  services: readonly S[],
  served: readonly string[] | undefined,
  clusterDomain: string,
  budget: number = MAX_DNS_NAME_BYTES,
): FittedServices<S> {
  const servedNames = new Set(served ?? []);
  const withNames = services.map((service) => ({ service, names: serviceDnsNames(service, clusterDomain) }));
  const isServed = (names: readonly string[]): boolean => names.every((n) => servedNames.has(n));
  const ordered = [...withNames.filter((s) => isServed(s.names)), ...withNames.filter((s) => !isServed(s.names))];
  const taken = new Set<string>();
  const fitted = new Set<S>();
  const added = new Set<S>();
  const refused: { service: S; bytes: number }[] = [];
  let bytes = 0;
  for (const { service, names } of ordered) {
    const more = dnsNamesBytes(names.filter((n) => !taken.has(n)));
    if (bytes + more > budget) {
      refused.push({ service, bytes: bytes + more });
      continue;
    }
    for (const n of names) taken.add(n);
    bytes += more;
    fitted.add(service);
    if (!isServed(names)) added.add(service);
  }
  return {
    fitted: services.filter((s) => fitted.has(s)),
    added: services.filter((s) => added.has(s)),
    refused,
    bytes,
    dnsNames: [...taken].sort(),
  };
}
