import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import type { KubeRestClient } from '../client/rest-client.js';
import { corePath } from '../client/rest-client.js';
import { Informer, type InformerEvent, type InformerOptions, type InformerStats, type ListPage, ResourceNotServedError } from '../informers/informer.js';
import type { CaSource, IssuerReference } from '../installation/ca-source.js';
import { CA_REQUEST_SELECTOR, type CertificateRequestObject, caRequestPath } from './certificate-requests.js';
import { apiErrorOf } from '../client/api-error.js';
import { type ServedIssuer, issuersPath, servedIssuer } from './issuer-api.js';
import { type IssuerObject, describeIssuer } from './issuer-readiness.js';
import { quoted } from './upstream-read.js';
import { allAttempted, startAllAttempted, stopAll, summedStats } from '../informers/informer-set.js';

/*
 * The caches an upstream CA source is read from, each by name or label in ESO's namespace (or the
 * one ClusterIssuer), so RBAC may grant them by name: the trust anchors, and either the user's
 * Secret or our CertificateRequests and the issuer. A change to any of them wakes the reconciler,
 * as a change to our own Secrets does.
 */

/** An Issuer or ClusterIssuer as cached: its name for the cache, its generation and conditions for its readiness. */
type CachedIssuer = IssuerObject & {
  readonly metadata?: { readonly name?: string; readonly namespace?: string; readonly resourceVersion?: string; readonly generation?: number };
};

type UpstreamObject = V1Secret | V1ConfigMap | CertificateRequestObject | CachedIssuer;

const byName = (name: string): string => `metadata.name=${name}`;

/**
 * The issuer's cache, by name. Where its kind is served is looked up before each list (an external
 * issuer's group may serve `v1beta1` only, and its kind may be namespaced or not), and it may not be
 * served at all (cert-manager or the issuer not installed yet): the cache is then empty and synced,
 * {@link IssuerCache.unreadable} says why, and it is listed again until it is served.
 */
export class IssuerCache {
  readonly informer: Informer<CachedIssuer>;
  private found: ServedIssuer | undefined;
  private unserved = 'it was not listed yet';

  constructor(api: KubeRestClient, issuer: IssuerReference, namespace: string, options: InformerOptions) {
    const fieldSelector = byName(issuer.name);
    // Read at each list's GET and each watch, which follows a list: where that list found the kind.
    const path = (): string => (this.found ? issuersPath(issuer, namespace, this.found) : '');
    const plural = (): string => this.found?.plural ?? 'issuers';
    const list = async (page: { limit: number; continue?: string }): Promise<ListPage<CachedIssuer>> => {
      try {
        this.found = await servedIssuer(api, issuer);
        return await api.get<ListPage<CachedIssuer>>(path(), { fieldSelector, ...page });
      } catch (e) {
        if (e instanceof ResourceNotServedError) this.unserved = e.message;
        else if (apiErrorOf(e).code === 404) this.unserved = `the apiserver answered 404 for ${path()}`;
        throw e;
      }
    };
    this.informer = new Informer<CachedIssuer>(
      {
        description: describeIssuer(issuer, namespace),
        get resource() {
          return plural();
        },
        list,
        get watchPath() {
          return path();
        },
        fieldSelector,
        mayBeUnserved: true,
        transform: (i) => ({ metadata: { ...(i.metadata ?? {}) }, ...(i.status ? { status: i.status } : {}) }),
      },
      options,
    );
  }

  /** Where the last list found the issuer's kind served (its version, plural, scope), or undefined before. */
  get served(): ServedIssuer | undefined {
    return this.found;
  }

  /** The issuer as cached (the one object of its name, in whichever scope its kind has), or undefined. */
  get object(): CachedIssuer | undefined {
    return this.informer.list().next().value;
  }

  /** Why the issuer cannot be read: its kind is not served, or its list fails; undefined once it is read. */
  get unreadable(): { readonly reason: 'not_served' | 'refused'; readonly detail: string } | undefined {
    if (!this.informer.served) return { reason: 'not_served', detail: this.unserved };
    const error = this.informer.hasSynced ? undefined : this.informer.lastError;
    return error && { reason: 'refused', detail: `the apiserver refused its list (${quoted(error)})` };
  }
}

/** Keeps only the data keys read, and no managedFields: a Secret holding other keys costs nothing more. */
function keepKeys<T extends { metadata?: object; data?: Record<string, string>; binaryData?: Record<string, string> }>(keys: readonly string[]): (o: T) => T {
  const pick = (d: Record<string, string> | undefined): Record<string, string> | undefined =>
    d && Object.fromEntries(Object.entries(d).filter(([k]) => keys.includes(k)));
  return (o) => {
    const m = (o.metadata ?? {}) as { name?: string; namespace?: string; resourceVersion?: string; uid?: string };
    return {
      metadata: { name: m.name, namespace: m.namespace, resourceVersion: m.resourceVersion, uid: m.uid },
      data: pick(o.data),
      binaryData: pick(o.binaryData),
    } as T;
  };
}

/** The upstream source's caches. */
export class UpstreamInformers {
  /** The trust anchors' Secret or ConfigMap. */
  readonly anchors: Informer<V1Secret | V1ConfigMap>;
  /** `secret`: the user's Secret. */
  readonly sourceSecret: Informer<V1Secret> | undefined;
  /** `issuer`: our CertificateRequests in ESO's namespace. */
  readonly requests: Informer<CertificateRequestObject> | undefined;
  /** `issuer`: the issuer. */
  readonly issuer: IssuerCache | undefined;

  constructor(api: KubeRestClient, source: Exclude<CaSource, { kind: 'self-signed' }>, namespace: string, options: InformerOptions) {
    const lister =
      <T>(path: string, selector: { labelSelector?: string; fieldSelector?: string }) =>
      (page: { limit: number; continue?: string }): Promise<ListPage<T>> =>
        api.get<ListPage<T>>(path, { ...selector, ...page });
    const named = <T extends object>(description: string, resource: string, path: string, name: string, transform: (o: T) => T): Informer<T> =>
      new Informer<T>(
        { description, resource, list: lister<T>(path, { fieldSelector: byName(name) }), watchPath: path, fieldSelector: byName(name), transform },
        options,
      );
    const { trustAnchors } = source;
    const anchorsResource = trustAnchors.kind === 'Secret' ? 'secrets' : 'configmaps';
    this.anchors = named<V1Secret | V1ConfigMap>(
      `${trustAnchors.kind} ${namespace}/${trustAnchors.name} (trust anchors)`,
      anchorsResource,
      corePath(anchorsResource, namespace),
      trustAnchors.name,
      keepKeys([trustAnchors.key]),
    );
    this.sourceSecret =
      source.kind === 'secret'
        ? named<V1Secret>(
            `Secret ${namespace}/${source.secretName} (the CA source)`,
            'secrets',
            corePath('secrets', namespace),
            source.secretName,
            keepKeys(['tls.crt', 'tls.key']),
          )
        : undefined;
    if (source.kind !== 'issuer') {
      this.requests = undefined;
      this.issuer = undefined;
      return;
    }
    const requestsPath = caRequestPath(namespace);
    this.requests = new Informer<CertificateRequestObject>(
      {
        description: `CertificateRequests labelled ${CA_REQUEST_SELECTOR}`,
        resource: 'certificaterequests',
        list: lister(requestsPath, { labelSelector: CA_REQUEST_SELECTOR }),
        watchPath: requestsPath,
        labelSelector: CA_REQUEST_SELECTOR,
        mayBeUnserved: true,
        transform: (r) => ({ metadata: r.metadata, spec: r.spec, ...(r.status ? { status: r.status } : {}) }),
      },
      options,
    );
    this.issuer = new IssuerCache(api, source.issuer, namespace, options);
  }

  private get all(): Informer<UpstreamObject>[] {
    return [this.anchors, this.sourceSecret, this.requests, this.issuer?.informer].filter((i) => i !== undefined) as Informer<UpstreamObject>[];
  }

  /**
   * Starts every informer and resolves once each has listed once or failed to: an upstream input
   * the controller cannot read (RBAC naming another object, an issuer's resource misspelt) is
   * reported as the source's problem and never holds the Secret rounds.
   */
  start(): Promise<void> {
    return startAllAttempted(this.all);
  }

  /** Stops every watch. */
  stop(): Promise<void> {
    return stopAll(this.all);
  }

  /** True once every cache has listed once or failed to (its failure is then reported as the source's problem). */
  get hasSynced(): boolean {
    return allAttempted(this.all);
  }

  /** Subscribes to every change of every cache. */
  onChange(listener: (event: InformerEvent<UpstreamObject>) => void): () => void {
    const off = this.all.map((i) => i.onChange(listener));
    return () => off.forEach((f) => f());
  }

  /** The stats of each informer, summed. */
  stats(): InformerStats {
    return summedStats(this.all);
  }
}
