// Whether the cluster's Secrets are what the design promises at a simulated instant: pure
// functions over what was read, so a failing soak names each problem.
import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import { secretPayload } from './kubelet.js';

/** Where the soak's Secrets live. */
export interface SecretNames {
  readonly esoNamespace: string;
  readonly ca: string;
  readonly client: string;
  readonly provider: string;
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** The certificates of a PEM text; none when any of them does not parse. */
export function certificates(pem: string | undefined): X509Certificate[] {
  try {
    return (pem?.match(PEM_CERT) ?? []).map((c) => new X509Certificate(c));
  } catch {
    return [];
  }
}

/** What is wrong with one certificate/key pair at `now`, signed by one of `trusted`; undefined when nothing. */
export function pairProblem(
  data: Record<string, string> | undefined,
  now: number,
  trusted: readonly X509Certificate[],
  dnsNames: readonly string[],
): string | undefined {
  if (data === undefined) return 'missing';
  const [leaf] = certificates(data['tls.crt']);
  if (leaf === undefined) return 'tls.crt holds no certificate';
  if (Date.parse(leaf.validFrom) > now || Date.parse(leaf.validTo) < now)
    return `not valid at ${new Date(now).toISOString()} (${leaf.validFrom} to ${leaf.validTo})`;
  if (!trusted.some((ca) => leaf.verify(ca.publicKey))) return 'not signed by a CA of the CA Secret';
  try {
    const publicOfKey = createPublicKey(createPrivateKey(data['tls.key'] ?? '')).export({ type: 'spki', format: 'der' });
    if (!publicOfKey.equals(leaf.publicKey.export({ type: 'spki', format: 'der' }))) return 'tls.key does not match tls.crt';
  } catch {
    return 'tls.key is not a private key';
  }
  const sans = (leaf.subjectAltName ?? '').split(', ');
  const missing = dnsNames.filter((n) => !sans.includes(`DNS:${n}`));
  if (missing.length > 0) return `lacks ${missing.join(', ')}`;
  const bundle = certificates(data['ca.crt']);
  if (!bundle.some((c) => leaf.verify(c.publicKey))) return 'ca.crt does not hold its signer';
  return undefined;
}

/** The design's four names of a Service. */
export function serviceNames(namespace: string, service: string, clusterDomain = 'cluster.local'): string[] {
  return [service, `${service}.${namespace}`, `${service}.${namespace}.svc`, `${service}.${namespace}.svc.${clusterDomain}`];
}

/** Every CA certificate the CA Secret trusts: active, next and retired. */
export function trustedCas(ca: V1Secret | undefined): X509Certificate[] {
  const data = ca === undefined ? {} : secretPayload(ca);
  return [...certificates(data['ca.crt']), ...certificates(data['next.crt']), ...certificates(data['retired.crt'])];
}

/**
 * Problems of the Secrets at simulated `now`: the CA Secret, ESO's client Secret, and the provider
 * Secret of every namespace in `labelled` (namespace -> its labelled Services).
 */
export function secretProblems(secrets: readonly V1Secret[], names: SecretNames, labelled: ReadonlyMap<string, readonly string[]>, now: number): string[] {
  const find = (ns: string, name: string): V1Secret | undefined => secrets.find((s) => s.metadata?.namespace === ns && s.metadata?.name === name);
  const ca = find(names.esoNamespace, names.ca);
  const trusted = trustedCas(ca);
  const problems: string[] = [];
  const caData = ca === undefined ? {} : secretPayload(ca);
  const [active] = certificates(caData['ca.crt']);
  // A recovery (the CA key was lost) holds only the next CA until it may sign: a valid state.
  if (active === undefined && certificates(caData['next.crt']).length === 0) return [`${names.esoNamespace}/${names.ca}: neither an active nor a next CA`];
  if (active !== undefined && Date.parse(active.validTo) < now) problems.push(`${names.esoNamespace}/${names.ca}: the active CA expired`);
  const client = find(names.esoNamespace, names.client);
  const clientProblem = pairProblem(client && secretPayload(client), now, trusted, []);
  if (clientProblem) problems.push(`${names.esoNamespace}/${names.client}: ${clientProblem}`);
  for (const [ns, services] of labelled) {
    const secret = find(ns, names.provider);
    const problem = pairProblem(
      secret && secretPayload(secret),
      now,
      trusted,
      services.flatMap((s) => serviceNames(ns, s)),
    );
    if (problem) problems.push(`${ns}/${names.provider}: ${problem}`);
  }
  return problems;
}
