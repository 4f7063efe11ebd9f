import type { CaStatus, Instant, MemoryStore, Plan, SecretWrite } from '@eso-mtls/core';
import type { CaCertificateEntry, ControllerCertificateSource, ProviderCertificateEntry, RefusedServiceEntry } from '@eso-mtls/metrics';

/**
 * What the controller's metrics read at scrape time in the demo: the labelled Services of the
 * in-memory cluster, each with its namespace's certificate notAfter from the latest plan or a
 * leaf written since, the client certificate and the CAs. The Kubernetes adapter's
 * CertificateStatusView does the same over its informer cache.
 */
export class DemoCertificateStatus implements ControllerCertificateSource {
  private notAfterByNamespace = new Map<string, Instant | undefined>();
  private clientNotAfter: Instant | undefined;
  private ca: CaStatus | undefined;
  private refused: readonly RefusedServiceEntry[] = [];
  private pausedUntil: Instant | undefined;

  constructor(private readonly store: MemoryStore) {}

  /** Called with each plan. */
  update(plan: Pick<Plan, 'status' | 'refused'>): void {
    const { status } = plan;
    this.notAfterByNamespace = new Map(status.namespaces.map((n) => [n.namespace, n.notAfter]));
    this.clientNotAfter = status.client;
    this.ca = status.ca;
    this.pausedUntil = status.signingPausedUntil;
    this.refused = plan.refused.map(({ namespace, service, reason }) => ({ namespace, service, reason }));
  }

  /** Called with each write applied to the store, so a new certificate shows before the next plan. */
  recordWrite(write: SecretWrite): void {
    if (write.notAfter === undefined) return;
    if (write.kind === 'serverLeaf' && typeof write.target === 'object') this.notAfterByNamespace.set(write.target.namespace, write.notAfter);
    if (write.kind === 'clientLeaf') this.clientNotAfter = write.notAfter;
  }

  /** One controller, always the leader. */
  isLeader(): boolean {
    return true;
  }

  *providerCertificates(): Iterable<ProviderCertificateEntry> {
    for (const namespace of this.store.providerNamespaces()) {
      for (const { name } of this.store.servicesOf(namespace)) yield { namespace, service: name, notAfter: this.notAfterByNamespace.get(namespace) };
    }
  }

  clientCertificate(): { readonly notAfter: Instant } | undefined {
    return this.clientNotAfter === undefined ? undefined : { notAfter: this.clientNotAfter };
  }

  *caCertificates(): Iterable<CaCertificateEntry> {
    const ca = this.ca;
    if (!ca) return;
    if (ca.active !== undefined) yield { state: 'active', notAfter: ca.active };
    if (ca.next !== undefined) yield { state: 'next', notAfter: ca.next };
    for (const notAfter of ca.retired) yield { state: 'retired', notAfter };
  }

  refusedServices(): Iterable<RefusedServiceEntry> {
    return this.refused;
  }

  signingPausedUntil(): Instant | undefined {
    return this.pausedUntil;
  }
}
