import {
  type AllowedNamespaces,
  MAX_ROTATE_REQUEST_BYTES,
  PROVIDER_LABEL,
  PROVIDER_SECRET_NAME,
  ROTATE_ANNOTATION,
  SecretKeys,
  formatNamespaceRequirement,
  isExternalName,
} from '@eso-mtls/core';
import type { V1Namespace, V1Secret, V1Service } from '@kubernetes/client-node';
import type { BackoffOptions } from '../client/backoff.js';
import type { Timers } from '../runtime/clock.js';
import { Informer, type InformerEvent, type InformerStats, type ListPage } from './informer.js';
import { type KubeRestClient, corePath } from '../client/rest-client.js';
import { InternedValues } from './interned-values.js';
import type { Installation } from '../installation/installation.js';
import { allSynced, startAll, stopAll, summedStats } from './informer-set.js';

/** Tuning shared by the informers. */
export interface InformerTuning {
  readonly pageSize?: number;
  readonly watchTimeoutSeconds?: number;
  readonly backoff?: BackoffOptions;
  /** Told about every failed list or watch, and every throwing listener, before the retry. */
  readonly onError?: (error: Error) => void;
  /** How long a watch ran, and when to retry (default: the process's own timers). */
  readonly timers?: Timers;
}

/**
 * What the adapter reads of a Service: name, namespace, uid, resourceVersion, creationTimestamp
 * (a namespace's oldest labelled Service dates it, for the cap on namespaces), the provider label
 * and the rotate annotation, its selector, and its type when it is ExternalName. Everything else a tenant put there is dropped, and a rotate value
 * too long to be honoured is kept as a copy of its first bytes, enough to be refused.
 *
 * @internal Shared with \@eso-mtls/controller; not part of the supported API.
 */
export function trimService(s: V1Service): V1Service {
  const m = s.metadata ?? {};
  const label = m.labels?.[PROVIDER_LABEL];
  const rotate = m.annotations?.[ROTATE_ANNOTATION];
  const selector = boundedSelector(s.spec?.selector);
  // The type only when ExternalName: its selector selects no pod for a certificate.
  const spec = { ...(selector === undefined ? {} : { selector }), ...(isExternalName(s.spec ?? {}) ? { type: 'ExternalName' } : {}) };
  return {
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      ...(m.creationTimestamp === undefined ? {} : { creationTimestamp: m.creationTimestamp }),
      ...(label === undefined ? {} : { labels: { [PROVIDER_LABEL]: label } }),
      ...(rotate === undefined ? {} : { annotations: { [ROTATE_ANNOTATION]: boundedCopy(rotate, MAX_ROTATE_REQUEST_BYTES + 1) } }),
    },
    ...(Object.keys(spec).length === 0 ? {} : { spec }),
  };
}

/**
 * The most selector pairs kept of a Service (pod-certificate mode matches them against pod labels).
 * The apiserver bounds each key and value; a Service with more pairs keeps none, so it selects no
 * pod: dropping some pairs would make it select more pods than it asks for.
 */
export const MAX_SELECTOR_PAIRS = 64;

function boundedSelector(selector: Readonly<Record<string, string>> | undefined): Record<string, string> | undefined {
  if (selector === undefined) return undefined;
  const pairs = Object.entries(selector);
  return pairs.length === 0 || pairs.length > MAX_SELECTOR_PAIRS ? undefined : Object.fromEntries(pairs);
}

/** At most `max` characters of `text`, copied so that a long original is not kept alive by a slice. */
function boundedCopy(text: string, max: number): string {
  return text.length <= max ? text : Buffer.from(text.slice(0, max), 'utf16le').toString('utf16le');
}

/**
 * What the adapter reads of a Secret: its identity, ownership metadata, type, data and whether it is
 * immutable (a write refused then is a refusal, not a transient failure: write-refusals.ts); no managedFields.
 *
 * @internal Shared with \@eso-mtls/controller; not part of the supported API.
 */
export function trimSecret(s: V1Secret): V1Secret {
  const m = s.metadata ?? {};
  return {
    type: s.type,
    data: s.data,
    ...(s.immutable === true ? { immutable: true } : {}),
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      labels: m.labels,
      annotations: m.annotations,
      resourceVersion: m.resourceVersion,
      ...(m.ownerReferences ? { ownerReferences: m.ownerReferences } : {}),
      ...(m.finalizers ? { finalizers: m.finalizers } : {}),
    },
  };
}

/** The Secret with its trust bundle text replaced by the equal one `bundles` already holds, if any. */
function shareBundle(s: V1Secret, bundles: InternedValues<string>): V1Secret {
  const bundle = s.data?.[SecretKeys.caCertificate];
  if (bundle === undefined) return s;
  return { ...s, data: { ...s.data, [SecretKeys.caCertificate]: bundles.get(bundle, () => bundle) } };
}

/** What the adapter keeps of a namespace that carries the required label: its name and version. */
function trimNamespace(n: V1Namespace): V1Namespace {
  const m = n.metadata ?? {};
  return { metadata: { name: m.name, uid: m.uid, resourceVersion: m.resourceVersion } };
}

/** Label selector of the provider Services. */
export const PROVIDER_SERVICE_SELECTOR = `${PROVIDER_LABEL}=true`;

/**
 * The four caches the adapter plans from: labelled Services cluster-wide; Secrets named
 * external-secrets-provider-tls cluster-wide (field selector, so RBAC may grant Secrets by name
 * only), except in pod-certificate-only mode, which then needs no Secret permission outside the
 * ESO namespace; and the CA and client Secrets in the ESO namespace, each by name. With a
 * namespace requirement, a fifth: the namespaces that carry its label (label selector, names
 * only; needs get, list and watch on namespaces).
 */
export class ClusterInformers {
  readonly services: Informer<V1Service>;
  readonly providerSecrets: Informer<V1Secret>;
  readonly caSecret: Informer<V1Secret>;
  readonly clientSecret: Informer<V1Secret>;
  /** With a namespace requirement: the namespaces carrying its label; undefined otherwise. */
  readonly namespaces: Informer<V1Namespace> | undefined;
  /** With a namespace requirement: whether a namespace carries its label, from {@link namespaces}; undefined otherwise. */
  readonly allowedNamespaces: AllowedNamespaces | undefined;

  private readonly watchesProviderSecrets: boolean;

  constructor(api: KubeRestClient, installation: Installation, tuning: InformerTuning = {}) {
    this.watchesProviderSecrets = installation.secretMode;
    const options = { watch: api, counter: api.counter, ...tuning };
    const bundles = new InternedValues<string>();
    const byName = (name: string): string => `metadata.name=${name}`;
    const lister =
      <T>(path: string, selector: { labelSelector?: string; fieldSelector?: string }) =>
      (page: { limit: number; continue?: string }): Promise<ListPage<T>> =>
        api.get<ListPage<T>>(path, { ...selector, ...page });
    this.services = new Informer<V1Service>(
      {
        description: `Services labelled ${PROVIDER_SERVICE_SELECTOR}`,
        resource: 'services',
        list: lister(corePath('services'), { labelSelector: PROVIDER_SERVICE_SELECTOR }),
        watchPath: corePath('services'),
        labelSelector: PROVIDER_SERVICE_SELECTOR,
        transform: trimService,
      },
      options,
    );
    this.providerSecrets = new Informer<V1Secret>(
      {
        description: `Secrets named ${PROVIDER_SECRET_NAME}`,
        resource: 'secrets',
        list: lister(corePath('secrets'), { fieldSelector: byName(PROVIDER_SECRET_NAME) }),
        watchPath: corePath('secrets'),
        fieldSelector: byName(PROVIDER_SECRET_NAME),
        transform: (s) => shareBundle(trimSecret(s), bundles),
      },
      options,
    );
    const esoSecret = (name: string): Informer<V1Secret> =>
      new Informer<V1Secret>(
        {
          description: `Secret ${installation.esoNamespace}/${name}`,
          resource: 'secrets',
          list: lister(corePath('secrets', installation.esoNamespace), { fieldSelector: byName(name) }),
          watchPath: corePath('secrets', installation.esoNamespace),
          fieldSelector: byName(name),
          transform: trimSecret,
        },
        options,
      );
    this.caSecret = esoSecret(installation.caSecretName);
    this.clientSecret = esoSecret(installation.clientSecretName);
    const allowed = installation.namespaceRequirement && formatNamespaceRequirement(installation.namespaceRequirement);
    const namespaces = (this.namespaces =
      allowed === undefined
        ? undefined
        : new Informer<V1Namespace>(
            {
              description: `namespaces labelled ${allowed}`,
              resource: 'namespaces',
              list: lister(corePath('namespaces'), { labelSelector: allowed }),
              watchPath: corePath('namespaces'),
              labelSelector: allowed,
              transform: trimNamespace,
            },
            options,
          ));
    this.allowedNamespaces = namespaces && { has: (namespace) => namespaces.get('', namespace) !== undefined };
  }

  private get all(): Informer<V1Service | V1Secret | V1Namespace>[] {
    const secrets = this.watchesProviderSecrets ? [this.providerSecrets] : [];
    const namespaces = this.namespaces ? [this.namespaces] : [];
    return [this.services, ...secrets, this.caSecret, this.clientSecret, ...namespaces] as Informer<V1Service | V1Secret | V1Namespace>[];
  }

  /** Starts every informer and resolves once each has listed once. */
  start(): Promise<void> {
    return startAll(this.all);
  }

  /** Stops every watch. */
  stop(): Promise<void> {
    return stopAll(this.all);
  }

  /** True once every cache has listed once. */
  get hasSynced(): boolean {
    return allSynced(this.all);
  }

  /** Subscribes to every change of every cache. */
  onChange(listener: (source: 'services' | 'secrets' | 'namespaces', event: InformerEvent<V1Service | V1Secret | V1Namespace>) => void): () => void {
    const off = [
      this.services.onChange((e) => listener('services', e)),
      ...(this.namespaces ? [this.namespaces.onChange((e) => listener('namespaces', e))] : []),
      ...[...(this.watchesProviderSecrets ? [this.providerSecrets] : []), this.caSecret, this.clientSecret].map((i) =>
        i.onChange((e) => listener('secrets', e)),
      ),
    ];
    return () => off.forEach((f) => f());
  }

  /** The stats of each informer, summed. */
  stats(): InformerStats {
    return summedStats(this.all);
  }
}
