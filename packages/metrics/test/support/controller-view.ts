import type {
  CaCertificateEntry,
  ControllerCertificateSource,
  NamespaceLeftBehindEntry,
  ProviderCertificateEntry,
  RefusedServiceEntry,
  UpstreamProblemEntry,
  UpstreamSourceEntry,
} from '@eso-mtls/metrics';
import type { ExclusionReason } from '@eso-mtls/core';

/** A controller's view held in plain fields, changed by the test between scrapes. */
export class ControllerView implements ControllerCertificateSource {
  leader = true;
  services: ProviderCertificateEntry[] = [];
  client: { notAfter: number } | undefined = undefined;
  cas: CaCertificateEntry[] = [];
  refused: RefusedServiceEntry[] = [];
  pausedUntil: number | undefined = undefined;
  staleNames = new Map<string, number>();
  notServed: Record<ExclusionReason, number> = { cap: 0, not_allowed: 0 };
  leftBehind: NamespaceLeftBehindEntry[] = [];
  upstream: UpstreamSourceEntry | undefined = undefined;
  upstreamProblemList: UpstreamProblemEntry[] = [];

  isLeader(): boolean {
    return this.leader;
  }
  providerCertificates(): Iterable<ProviderCertificateEntry> {
    return this.services;
  }
  clientCertificate(): { notAfter: number } | undefined {
    return this.client;
  }
  caCertificates(): Iterable<CaCertificateEntry> {
    return this.cas;
  }
  refusedServices(): Iterable<RefusedServiceEntry> {
    return this.refused;
  }
  signingPausedUntil(): number | undefined {
    return this.pausedUntil;
  }
  podCertificatesStaleNames(): ReadonlyMap<string, number> {
    return this.staleNames;
  }
  namespacesNotServed(): Readonly<Record<ExclusionReason, number>> {
    return this.notServed;
  }
  namespacesLeftBehind(): Iterable<NamespaceLeftBehindEntry> {
    return this.leftBehind;
  }
  upstreamSource(): UpstreamSourceEntry | undefined {
    return this.upstream;
  }
  upstreamProblems(): Iterable<UpstreamProblemEntry> {
    return this.upstreamProblemList;
  }
}
