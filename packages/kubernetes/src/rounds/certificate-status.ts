import {
  type CaStatus,
  EXCLUSION_REASONS,
  type ExclusionReason,
  type Instant,
  type MaterializedCa,
  type Plan,
  type SecretWrite,
  type UpstreamPlan,
} from '@eso-mtls/core';
import type {
  CaCertificateEntry,
  ControllerCertificateSource,
  NamespaceLeftBehindEntry,
  ProviderCertificateEntry,
  RefusedServiceEntry,
  UpstreamProblemEntry,
  UpstreamSourceEntry,
} from '@eso-mtls/metrics';
import type { V1Service } from '@kubernetes/client-node';
import type { Informer } from '../informers/informer.js';

/** A labelled Service, as the expiry gauges name it. */
export interface LabelledService {
  readonly namespace: string;
  readonly service: string;
}

/** The labelled Services in an informer's cache now (so a deleted Service's series disappears at once). */
export function* informerServices(services: Informer<V1Service>): Iterable<LabelledService> {
  for (const svc of services.list()) {
    const namespace = svc.metadata?.namespace;
    const service = svc.metadata?.name;
    if (namespace && service) yield { namespace, service };
  }
}

/**
 * The read-only view the controller's metrics are computed from at scrape time: one entry per
 * labelled Service `services` lists (the adapter's informer cache, or the demo's in-memory cluster), with its
 * namespace's certificate notAfter from the latest plan, or from a leaf written since; the client
 * certificate; every CA by state; the Services refused, the namespaces not served or left behind by
 * the CA rotation and the pause of signing, and the upstream CA source with its standing problems,
 * from the latest plan; whether this replica leads, and the pod signer's stale names, from
 * the functions given. The whole source in one object, so a consumer cannot leave a part out.
 */
export class CertificateStatusView implements ControllerCertificateSource {
  private notAfterByNamespace = new Map<string, Instant | undefined>();
  private clientNotAfter: Instant | undefined;
  private ca: CaStatus | undefined;
  private refused: readonly RefusedServiceEntry[] = [];
  private pausedUntil: Instant | undefined;
  private notServed: Readonly<Record<ExclusionReason, number>> = countExcluded([]);
  private leftBehind: readonly NamespaceLeftBehindEntry[] = [];
  private upstream: UpstreamPlan | undefined;

  constructor(
    private readonly services: () => Iterable<LabelledService>,
    private readonly leader: () => boolean,
    /** Pod-certificate mode: the pod signer's last count; without it, an empty map. */
    private readonly staleNames: () => ReadonlyMap<string, number>,
  ) {}

  /** Called with each plan (its status is what the cluster held when it was planned). */
  update(plan: Pick<Plan, 'status' | 'refused'> & Partial<Pick<Plan, 'excluded' | 'leftBehind' | 'upstream'>>): void {
    const { status } = plan;
    this.notAfterByNamespace = new Map(status.namespaces.map((n) => [n.namespace, n.notAfter]));
    this.clientNotAfter = status.client;
    this.ca = status.ca;
    this.pausedUntil = status.signingPausedUntil;
    this.refused = plan.refused.map(({ namespace, service, reason }) => ({ namespace, service, reason }));
    this.notServed = countExcluded(plan.excluded ?? []);
    this.leftBehind = (plan.leftBehind ?? []).map(({ namespace, reason }) => ({ namespace, reason }));
    // A plan without its upstream part judged none (the CA Secret is not ours): what was judged last stands.
    if (plan.upstream) this.upstream = plan.upstream;
  }

  /** Called once a CA Secret write has landed, with the CAs it holds. */
  recordCa(ca: MaterializedCa): void {
    this.ca = { active: ca.active?.certificate.notAfter, next: ca.next?.certificate.notAfter, retired: ca.retired.map((c) => c.notAfter) };
  }

  /**
   * Called with each leaf written, so the expiry gauges show a new certificate as soon as it is
   * stored rather than after the next plan.
   */
  recordWrite(write: SecretWrite): void {
    if (write.notAfter === undefined) return;
    if (write.kind === 'serverLeaf' && typeof write.target === 'object') this.notAfterByNamespace.set(write.target.namespace, write.notAfter);
    if (write.kind === 'clientLeaf') this.clientNotAfter = write.notAfter;
  }

  /** Whether this replica exports gauges (the leader). */
  isLeader(): boolean {
    return this.leader();
  }

  /** One entry per labelled Service, with its namespace's certificate notAfter. */
  *providerCertificates(): Iterable<ProviderCertificateEntry> {
    for (const { namespace, service } of this.services()) yield { namespace, service, notAfter: this.notAfterByNamespace.get(namespace) };
  }

  /** notAfter of the ESO client certificate, if one is in use. */
  clientCertificate(): { readonly notAfter: Instant } | undefined {
    const notAfter = this.clientNotAfter;
    return notAfter === undefined ? undefined : { notAfter };
  }

  /** Every CA certificate in the CA Secret, by state. */
  *caCertificates(): Iterable<CaCertificateEntry> {
    const ca = this.ca;
    if (!ca) return;
    if (ca.active !== undefined) yield { state: 'active', notAfter: ca.active };
    if (ca.next !== undefined) yield { state: 'next', notAfter: ca.next };
    for (const notAfter of ca.retired) yield { state: 'retired', notAfter };
  }

  /** The Services whose rotation request or names the latest plan refused. */
  refusedServices(): Iterable<RefusedServiceEntry> {
    return this.refused;
  }

  /** While no CA signs (a recovery waits for its new CA's propagation): when one is expected to sign again. */
  signingPausedUntil(): Instant | undefined {
    return this.pausedUntil;
  }

  /** Provider namespaces the latest plan left out, by why: the cap on namespaces, or the namespace requirement. */
  namespacesNotServed(): Readonly<Record<ExclusionReason, number>> {
    return this.notServed;
  }

  /** The provider namespaces the latest plan's CA rotation went on without (their Secret refuses our writes). */
  namespacesLeftBehind(): Iterable<NamespaceLeftBehindEntry> {
    return this.leftBehind;
  }

  /** The upstream CA source the plans judge (`--ca-issuer`, `--ca-from-secret`); undefined with the self-signed CA. */
  upstreamSource(): UpstreamSourceEntry | undefined {
    const upstream = this.upstream;
    return upstream && { source: upstream.source, kind: upstream.kind };
  }

  /** The upstream CA source's problems that stood at the latest plan that judged it, one per reason. */
  upstreamProblems(): Iterable<UpstreamProblemEntry> {
    const upstream = this.upstream;
    if (!upstream) return [];
    const reasons = new Set(upstream.problems.map((p) => p.reason));
    return [...reasons].map((reason) => ({ source: upstream.source, reason }));
  }

  /** Pod-certificate mode: per namespace, pods serving names their Services no longer give them. */
  podCertificatesStaleNames(): ReadonlyMap<string, number> {
    return this.staleNames();
  }
}

function countExcluded(excluded: readonly { readonly reason: ExclusionReason }[]): Record<ExclusionReason, number> {
  const counts = Object.fromEntries(EXCLUSION_REASONS.map((r) => [r, 0])) as Record<ExclusionReason, number>;
  for (const e of excluded) counts[e.reason]++;
  return counts;
}
