import {
  type CertificateCache,
  type Instant,
  type MaterializedCa,
  type ObservedBundle,
  isDnsName,
  observePublishedBundle,
  publishedBundleWrite,
} from '@eso-mtls/core';
import { apiErrorOf } from '../client/api-error.js';
import { Informer, type InformerOptions, type ListPage } from '../informers/informer.js';
import { COMPONENT_LABEL, INSTALLATION_ANNOTATION, MANAGED_BY, MANAGED_BY_LABEL, TRUST_BUNDLE_COMPONENT, isOurTrustBundle } from '../installation/ownership.js';
import { type KubeRestClient, certificatesPath } from '../client/rest-client.js';
import type { PublishResult } from '../rounds/ca-follower.js';

/** The label on our ClusterTrustBundles, which every shipped `clusterTrustBundle` projection selects. */
export const TRUST_BUNDLE_LABEL = 'eso-mtls.io/trust-bundle';
/** Label selector of our ClusterTrustBundles. */
export const TRUST_BUNDLE_SELECTOR = `${TRUST_BUNDLE_LABEL}=true`;

/** A ClusterTrustBundle (certificates.k8s.io/v1), as much of it as we read. */
export interface ClusterTrustBundle {
  /** Its name, labels and annotations (cluster-scoped: no namespace). */
  readonly metadata?: {
    readonly name?: string;
    readonly namespace?: string;
    readonly resourceVersion?: string;
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
  };
  /** Its signer name, and the PEM CA certificates it holds. */
  readonly spec?: { readonly signerName?: string; readonly trustBundle?: string };
}

/**
 * A signer name as Kubernetes accepts it for PodCertificateRequests and ClusterTrustBundles: a
 * DNS domain the project owns, a slash, and a path of DNS labels (`eso-mtls.io/provider-server`).
 */
export function isSignerName(s: string): boolean {
  const slash = s.indexOf('/');
  if (slash <= 0 || s.length > 253) return false;
  const domain = s.slice(0, slash);
  const path = s.slice(slash + 1);
  return isDnsName(domain) && domain.includes('.') && path.length > 0 && path.split('/').every((p) => /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(p));
}

/**
 * The name of a signer's ClusterTrustBundle: the apiserver requires `<signer name with / replaced
 * by :>:<suffix>`; ours is `ca`.
 */
export function trustBundleName(signerName: string): string {
  return `${signerName.replaceAll('/', ':')}:ca`;
}

/** A ClusterTrustBundle the shipped projections select besides ours, and why that is a conflict. */
export interface StrayTrustBundle {
  /** The bundle's name. */
  readonly name: string;
  /** Which of our signer names it is for. */
  readonly signerName: string;
  /** The conflict, in a sentence for an Event, a log line and `eso-mtls status`. */
  readonly message: string;
}

/**
 * The bundles among `bundles` that carry our label for one of `signerNames` under another name
 * than that signer's bundle of ours. Every shipped projection selects by signer name and that
 * label, so the kubelet adds what each holds to the pods' trust as if we had published it. Making
 * one needs `attest` on the signer name. By name, at most `max` (the rest are not named).
 */
export function strayTrustBundles(bundles: Iterable<ClusterTrustBundle>, signerNames: readonly string[], max = MAX_STRAYS): StrayTrustBundle[] {
  const strays: StrayTrustBundle[] = [];
  for (const b of bundles) {
    const signerName = b.spec?.signerName;
    const name = b.metadata?.name ?? '';
    if (signerName === undefined || !signerNames.includes(signerName) || b.metadata?.labels?.[TRUST_BUNDLE_LABEL] !== 'true') continue;
    if (name === trustBundleName(signerName)) continue;
    const message =
      `ClusterTrustBundle ${name} of signer ${signerName} carries the label ${TRUST_BUNDLE_SELECTOR} but is not ${trustBundleName(signerName)}, ` +
      `the bundle this installation publishes: every shipped projection of ${signerName} selects it too, so pods trust the CAs it holds. ` +
      `It is left alone: delete it, or remove its label ${TRUST_BUNDLE_LABEL}`;
    strays.push({ name, signerName, message });
  }
  return strays.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).slice(0, max);
}

/** Stray bundles named per report: each needs `attest`, but their number is still not ours to trust. */
const MAX_STRAYS = 20;

/**
 * The ClusterTrustBundles of our signer names: watched (by our label), observed for the CA
 * activation, and brought to the CA layout's bundle after each CA write. A bundle of our name that
 * another party wrote is never touched.
 */
export class TrustBundles {
  readonly informer: Informer<ClusterTrustBundle>;

  constructor(
    private readonly api: KubeRestClient,
    private readonly signerNames: readonly string[],
    private readonly installation: string,
    private readonly cache: CertificateCache,
    options: InformerOptions,
  ) {
    const path = certificatesPath('clustertrustbundles');
    this.informer = new Informer<ClusterTrustBundle>(
      {
        description: `ClusterTrustBundles labelled ${TRUST_BUNDLE_SELECTOR}`,
        resource: 'clustertrustbundles',
        list: (page) => api.get<ListPage<ClusterTrustBundle>>(path, { labelSelector: TRUST_BUNDLE_SELECTOR, ...page }),
        watchPath: path,
        labelSelector: TRUST_BUNDLE_SELECTOR,
      },
      options,
    );
  }

  /** Each signer's bundle as the CA activation reads it; one not ours (or absent) holds nothing. */
  observed(): ObservedBundle[] {
    return this.signerNames.map((signer) => observePublishedBundle(this.ours(signer), this.cache));
  }

  /** Writes each signer's bundle that differs from `ca.bundle`; failures are returned, not thrown. */
  async publish(ca: MaterializedCa, now: Instant): Promise<PublishResult> {
    let written = 0;
    const failed: { name: string; message: string }[] = [];
    const conflicts: { name: string; message: string }[] = strayTrustBundles(this.informer.list(), this.signerNames);
    for (const signer of this.signerNames) {
      const name = trustBundleName(signer);
      const existing = this.informer.get('', name);
      if (existing !== undefined && !this.isOurs(existing, signer)) {
        conflicts.push(foreign(name));
        continue;
      }
      const current = this.ours(signer);
      const write = publishedBundleWrite(current, ca, this.cache, now);
      if (write === undefined) continue;
      const body = (over: ClusterTrustBundle | undefined) => ({
        apiVersion: 'certificates.k8s.io/v1',
        kind: 'ClusterTrustBundle',
        metadata: {
          name,
          labels: {
            ...(over?.metadata?.labels ?? {}),
            [TRUST_BUNDLE_LABEL]: 'true',
            [MANAGED_BY_LABEL]: MANAGED_BY,
            [COMPONENT_LABEL]: TRUST_BUNDLE_COMPONENT,
          },
          annotations: { ...(over?.metadata?.annotations ?? {}), ...write.annotations, [INSTALLATION_ANNOTATION]: this.installation },
          ...(over?.metadata?.resourceVersion ? { resourceVersion: over.metadata.resourceVersion } : {}),
        },
        spec: { signerName: signer, trustBundle: write.text },
      });
      try {
        const stored = existing
          ? await this.api.replace<ClusterTrustBundle>(certificatesPath('clustertrustbundles', undefined, name), body(existing))
          : await this.createOrReclaim(name, signer, body);
        if (stored === 'foreign') {
          conflicts.push(foreign(name));
          continue;
        }
        this.informer.cacheAhead(stored);
        written++;
      } catch (e) {
        failed.push({ name, message: `writing ClusterTrustBundle ${name} failed: ${(e as Error).message}` });
      }
    }
    return { written, failed, conflicts };
  }

  /**
   * Creates the bundle. One of its name that exists already is invisible to the informer, which
   * selects by our label: ours (someone removed the label, so projections no longer select it)
   * gets the label back; another party's is left alone.
   */
  private async createOrReclaim(
    name: string,
    signer: string,
    body: (over: ClusterTrustBundle | undefined) => unknown,
  ): Promise<ClusterTrustBundle | 'foreign'> {
    try {
      return await this.api.create<ClusterTrustBundle>(certificatesPath('clustertrustbundles'), body(undefined));
    } catch (e) {
      if (apiErrorOf(e).code !== 409) throw e;
      const path = certificatesPath('clustertrustbundles', undefined, name);
      const found = await this.api.get<ClusterTrustBundle>(path);
      if (!this.isOurs(found, signer)) return 'foreign';
      return this.api.replace<ClusterTrustBundle>(path, body(found));
    }
  }

  private ours(signer: string): { text: string; annotations: Readonly<Record<string, string>> } | undefined {
    const bundle = this.informer.get('', trustBundleName(signer));
    if (bundle === undefined || !this.isOurs(bundle, signer)) return undefined;
    return { text: bundle.spec?.trustBundle ?? '', annotations: bundle.metadata?.annotations ?? {} };
  }

  /** Ours, for `signer` (a bundle of our name that names another signer is not). */
  private isOurs(bundle: ClusterTrustBundle, signer: string): boolean {
    const m = bundle.metadata ?? {};
    return isOurTrustBundle({ labels: m.labels, annotations: m.annotations, signerName: bundle.spec?.signerName }, signer, this.installation);
  }
}

/** The standing conflict of a bundle of our name that another party wrote. */
function foreign(name: string): { name: string; message: string } {
  return { name, message: `ClusterTrustBundle ${name} exists but was not written by this installation; it is left alone` };
}
