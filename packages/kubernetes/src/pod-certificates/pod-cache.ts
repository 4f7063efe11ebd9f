import type { PodMetadataView } from '@eso-mtls/core';
import { apiErrorOf } from '../client/api-error.js';
import { Informer, type InformerOptions, type ListPage } from '../informers/informer.js';
import type { Logger } from '../runtime/logger.js';
import { type KubeRestClient, corePath } from '../client/rest-client.js';

/** `Accept` of a metadata-only read: the apiserver answers with PartialObjectMetadata, never the pod's spec. */
export const METADATA_ONLY = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';
/** The same for a list (a watch's events are single objects: {@link METADATA_ONLY}). */
const METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';

/** Pods cached at most, over every namespace followed (about 0.5 KB each: name, UID and labels). */
export const MAX_CACHED_PODS = 10_000;
/** Namespaces followed at most: each is one watch on the apiserver. */
export const MAX_CACHED_NAMESPACES = 200;

/** A pod as the cache keeps it: identity and labels, from PartialObjectMetadata. */
interface CachedPod {
  readonly metadata?: {
    readonly name?: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly resourceVersion?: string;
    readonly labels?: Readonly<Record<string, string>>;
  };
}

const trimPod = (p: CachedPod): CachedPod => {
  const m = p.metadata ?? {};
  return { metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion, labels: m.labels ?? {} } };
};

/** Options of {@link PodReader}. */
export interface PodReaderOptions {
  readonly api: KubeRestClient;
  readonly informerOptions: InformerOptions;
  readonly logger: Logger;
  /** Pods cached at most (default {@link MAX_CACHED_PODS}); a namespace that would pass it is read with GETs. */
  readonly maxPods?: number;
  /** Namespaces followed at most (default {@link MAX_CACHED_NAMESPACES}); the pods of the others are read with GETs. */
  readonly maxNamespaces?: number;
}

/** Where a pod read was answered from. */
export type PodSource = 'cache' | 'api';

/**
 * The signer's pod reads: from a metadata-only watch of each namespace followed (those with a
 * labelled Service, and ESO's), when the cached pod has the request's UID; otherwise a
 * metadata-only GET. A UID identifies one incarnation of a pod, and NodeRestriction checked when
 * the node made the request that the pod of that UID runs on the request's node (a pod never
 * changes node), so a UID match is also a node match. The metadata has no node name to compare.
 * The cache holds at most `maxPods` pods: a namespace that would pass the bound is not cached;
 * and it follows at most `maxNamespaces` namespaces, each one watch, in the order they came.
 */
export class PodReader {
  private readonly followed = new Map<string, Informer<CachedPod>>();
  // Namespaces left to GETs because their pods would pass the bound (until they are followed again).
  private readonly tooLarge = new Set<string>();
  private readonly maxPods: number;
  /** Reads answered by the cache and by a GET. */
  readonly stats = { cache: 0, api: 0 };

  constructor(private readonly options: PodReaderOptions) {
    this.maxPods = options.maxPods ?? MAX_CACHED_PODS;
  }

  /** Pods cached now. */
  get size(): number {
    let n = 0;
    for (const informer of this.followed.values()) n += informer.size;
    return n;
  }

  /** True once `namespace`'s pods are cached (listed, and watched since). */
  cached(namespace: string): boolean {
    return this.followed.get(namespace)?.hasSynced ?? false;
  }

  /** Starts caching `namespace`'s pods, unless it is cached already or was too large. */
  follow(namespace: string): void {
    if (namespace === '' || this.followed.has(namespace) || this.tooLarge.has(namespace)) return;
    if (this.followed.size >= (this.options.maxNamespaces ?? MAX_CACHED_NAMESPACES)) return;
    const { api } = this.options;
    const path = corePath('pods', namespace);
    const informer: Informer<CachedPod> = new Informer<CachedPod>(
      {
        description: `pod metadata in namespace ${namespace}`,
        resource: 'pods',
        list: async (page) => {
          const listed = await api.request<ListPage<CachedPod> & { metadata?: { remainingItemCount?: number } }>('GET', path, {
            query: page,
            accept: METADATA_LIST,
          });
          // An empty PartialObjectMetadataList has `items: null`.
          const items = listed.items ?? [];
          // The first page says how many follow: a namespace past the bound is never listed whole.
          const pods = items.length + (listed.metadata?.remainingItemCount ?? 0);
          if (page.continue === undefined && pods > this.room(namespace)) {
            this.drop(namespace, pods);
            throw new Error(`namespace ${namespace} has too many pods to cache`);
          }
          return { ...listed, items };
        },
        watchPath: path,
        transform: trimPod,
      },
      { ...this.options.informerOptions, watch: { watch: (p, query, onEvent, done) => api.watch(p, query, onEvent, done, { accept: METADATA_ONLY }) } },
    );
    informer.onChange((e) => {
      if (e.type === 'ADDED' && this.size > this.maxPods) this.drop(namespace, informer.size);
    });
    this.followed.set(namespace, informer);
    informer.start();
  }

  /** Stops caching every namespace not in `namespaces` (their Services went), and follows the rest. */
  retain(namespaces: ReadonlySet<string>): void {
    for (const namespace of [...this.followed.keys()]) if (!namespaces.has(namespace)) void this.unfollow(namespace);
    // A namespace that shrank may fit now: it is tried again once its Services come back.
    for (const namespace of this.tooLarge) if (!namespaces.has(namespace)) this.tooLarge.delete(namespace);
    for (const namespace of namespaces) this.follow(namespace);
  }

  /**
   * The pod `namespace/name` as the signer decides on it: the cached one when it has `uid`, else
   * a metadata-only GET (undefined when it does not exist). Throws when the GET fails.
   */
  async read(namespace: string, name: string, uid: string): Promise<{ pod: PodMetadataView | undefined; source: PodSource }> {
    const informer = this.followed.get(namespace);
    const cached = informer?.hasSynced ? informer.get(namespace, name) : undefined;
    if (cached?.metadata?.uid !== undefined && cached.metadata.uid === uid) {
      this.stats.cache++;
      return { pod: { uid, labels: cached.metadata.labels ?? {} }, source: 'cache' };
    }
    this.stats.api++;
    return { pod: await this.get(namespace, name), source: 'api' };
  }

  /** A metadata-only GET of the pod; undefined when it does not exist. */
  async get(namespace: string, name: string): Promise<PodMetadataView | undefined> {
    if (namespace === '' || name === '') return undefined;
    try {
      const pod = await this.options.api.request<CachedPod>('GET', corePath('pods', namespace, name), { accept: METADATA_ONLY });
      return { uid: pod.metadata?.uid ?? '', labels: pod.metadata?.labels ?? {} };
    } catch (e) {
      if (apiErrorOf(e).code === 404) return undefined;
      throw e;
    }
  }

  /** Stops every watch. */
  async stop(): Promise<void> {
    await Promise.all([...this.followed.keys()].map((namespace) => this.unfollow(namespace)));
  }

  /** Pods the cache may still take for `namespace`. */
  private room(namespace: string): number {
    let others = 0;
    for (const [ns, informer] of this.followed) if (ns !== namespace) others += informer.size;
    return this.maxPods - others;
  }

  private drop(namespace: string, pods: number): void {
    this.tooLarge.add(namespace);
    this.options.logger.info(
      { namespace, pods, maxPods: this.maxPods },
      'pods of this namespace are not cached (the cache would pass its bound); the signer reads them with metadata-only GETs',
    );
    void this.unfollow(namespace);
  }

  private async unfollow(namespace: string): Promise<void> {
    const informer = this.followed.get(namespace);
    if (!informer) return;
    this.followed.delete(namespace);
    await informer.stop();
  }
}
