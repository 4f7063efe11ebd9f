import {
  CertificateCache,
  type CertificateView,
  type CryptoBackend,
  type Instant,
  MemoryStore,
  type Plan,
  type Policy,
  type SecretWrite,
  type ProviderService,
  type SecretState,
  days,
  executePlan,
  issueCa,
  issueClientLeaf,
  issueServerLeaf,
  planRotation,
  resolvePolicy,
  seededRandom,
  type KeyedCertificate,
  type Issued,
} from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';

/** A fixed start instant for planner tests (midnight, so times read well in failures). */
export const T0: Instant = Date.UTC(2026, 0, 1);

/** The default policy. */
export const policy: Policy = resolvePolicy();

/** node:crypto with seeded serial numbers, so jitter and therefore timings are reproducible. */
export function testCrypto(seed = 1): CryptoBackend {
  return { ...createNodeCryptoBackend(), random: seededRandom(seed) };
}

/** A CertificateView built from plain data, for rules that only read fields. */
export function view(fields: Partial<CertificateView> & { serialNumber: string }): CertificateView {
  return {
    pem: `pem-${fields.serialNumber}`,
    der: new Uint8Array(),
    subject: `CN=${fields.serialNumber}`,
    issuer: 'CN=ca',
    subjectCommonName: undefined,
    notBefore: T0,
    notAfter: T0 + days(90),
    isCa: false,
    pathLenConstraint: undefined,
    dnsNames: [],
    uris: [],
    extendedKeyUsage: [],
    subjectKeyIdentifier: undefined,
    authorityKeyIdentifier: undefined,
    subjectPublicKeyInfo: new Uint8Array(),
    tbsCertificate: new Uint8Array(),
    signatureAlgorithm: '1.2.840.10045.4.3.2',
    signatureValue: new Uint8Array(),
    ...fields,
  };
}

/** Real certificates, issued by the core's own x509 layer. */
export class Pki {
  readonly crypto: CryptoBackend;
  readonly cache: CertificateCache;
  constructor(
    readonly policy: Policy = resolvePolicy(),
    seed = 1,
  ) {
    this.crypto = testCrypto(seed);
    this.cache = new CertificateCache(this.crypto.verifier);
  }
  ca(now: Instant, commonName?: string): Promise<Issued> {
    return issueCa({ crypto: this.crypto, policy: this.policy, now }, commonName ? { commonName } : {});
  }
  server(ca: KeyedCertificate, now: Instant, dnsNames: readonly string[]): Promise<Issued> {
    return issueServerLeaf({ crypto: this.crypto, policy: this.policy, now }, ca, dnsNames);
  }
  client(ca: KeyedCertificate, now: Instant): Promise<Issued> {
    return issueClientLeaf({ crypto: this.crypto, policy: this.policy, now }, ca);
  }
  /** Secret data of a leaf Secret. */
  leafData(leaf: KeyedCertificate, bundle: readonly CertificateView[]): Record<string, string> {
    return { 'tls.crt': leaf.certificate.pem, 'tls.key': leaf.privateKeyPem, 'ca.crt': bundle.map((c) => c.pem).join('') };
  }
}

/** Plans at `now` against the store. */
export function planAt(store: MemoryStore, pki: Pki, now: Instant): Plan {
  return planRotation(store.snapshot(), { now, policy: pki.policy, cache: pki.cache });
}

/** Plans, executes and applies at `now`; returns the plan and the writes. */
export async function reconcile(store: MemoryStore, pki: Pki, now: Instant): Promise<{ plan: Plan; writes: SecretWrite[] }> {
  const plan = planAt(store, pki, now);
  const writes = await executePlan(plan, { crypto: pki.crypto });
  for (const w of writes) store.apply(w);
  return { plan, writes };
}

/** A short summary of writes, e.g. `ca:create client:initial namespace/a:initial`. */
export function describeWrites(writes: readonly SecretWrite[]): string[] {
  return writes.map((w) => {
    const target = typeof w.target === 'string' ? w.target : `namespace/${w.target.namespace}`;
    return w.kind === 'ca' ? `ca:${(w.phases ?? []).join('+')}` : w.kind === 'bundle' ? `${target}:bundle` : `${target}:${w.reason}`;
  });
}

/** The text of one data key of a Secret ('' when absent). */
export const text = (s: SecretState | undefined, key: string): string => String(s?.data[key] ?? '');

/** A converged cluster of the planner tests: Service `p` in namespace `a`, `q` in `b`, every Secret issued at T0. */
export async function convergedCluster(
  services: Readonly<Record<string, readonly ProviderService[]>> = { a: [{ name: 'p' }], b: [{ name: 'q' }] },
): Promise<{ pki: Pki; store: MemoryStore }> {
  const pki = new Pki();
  const store = new MemoryStore();
  for (const [namespace, list] of Object.entries(services)) store.setServices(namespace, list);
  await reconcile(store, pki, T0);
  return { pki, store };
}
