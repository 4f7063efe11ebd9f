import {
  type AllowedNamespaces,
  type Instant,
  type IssuanceLedger,
  type ProviderService,
  ROTATE_ANNOTATION,
  SecretKeys,
  type SecretState,
  type Snapshot,
  assembleSnapshot,
  describeTarget,
} from '@eso-mtls/core';
import type { V1Secret, V1Service } from '@kubernetes/client-node';
import { type SecretComponent, classifyOwnership } from '../installation/ownership.js';
import { InternedValues } from '../informers/interned-values.js';
import type { Installation } from '../installation/installation.js';

/**
 * What the builder reads: the adapter's four informer caches, or any source with the same views
 * (`eso-mtls status` lists once instead of watching).
 */
export interface SnapshotSource {
  readonly services: { list(): Iterable<V1Service> };
  readonly providerSecrets: { list(): Iterable<V1Secret> };
  readonly caSecret: { get(namespace: string, name: string): V1Secret | undefined };
  readonly clientSecret: { get(namespace: string, name: string): V1Secret | undefined };
  /** With a namespace requirement: the namespaces that carry its label. */
  readonly allowedNamespaces?: AllowedNamespaces | undefined;
}

/** A snapshot and the raw Secrets it was built from, by target, to merge metadata into writes. */
export interface BuiltSnapshot {
  readonly snapshot: Snapshot;
  readonly secrets: ReadonlyMap<string, V1Secret>;
  /** Labelled Services by namespace, for Events. */
  readonly services: ReadonlyMap<string, readonly V1Service[]>;
}

/**
 * Builds the core's {@link Snapshot} from the informer caches (or another {@link SnapshotSource}).
 * Decoded Secret states are memoised per cached object (a watch event replaces the object), so a
 * resync decodes nothing again.
 */
export class SnapshotBuilder {
  private readonly decoded = new WeakMap<V1Secret, SecretState>();
  /** Decoded trust bundles by their base64 text: every provider Secret holds the same one. */
  private readonly bundles = new InternedValues<Uint8Array>();

  constructor(
    private readonly informers: SnapshotSource,
    /** Whose Secrets are `managed` (others are `foreign`), and where; in pod-certificate-only mode, labelled Services get no provider Secret planned. */
    private readonly installation: Installation,
    /** Where managed Secrets are recorded; status, planning once, gives a fresh one. */
    private readonly ledger: IssuanceLedger,
  ) {}

  /** The snapshot of the caches as they are now (see assembleSnapshot); records managed Secrets in the ledger. */
  build(): BuiltSnapshot {
    const secrets = new Map<string, V1Secret>();
    const services = new Map<string, V1Service[]>();
    const providerServices = new Map<string, ProviderService[]>();
    for (const svc of this.informers.services.list()) {
      const ns = svc.metadata?.namespace;
      const name = svc.metadata?.name;
      if (!ns || !name) continue;
      append(services, ns, svc);
      if (this.installation.secretMode) {
        const createdAt = instantOf(svc.metadata?.creationTimestamp);
        append(providerServices, ns, {
          name,
          rotateRequest: svc.metadata?.annotations?.[ROTATE_ANNOTATION],
          ...(createdAt === undefined ? {} : { createdAt }),
        });
      }
    }
    const providerSecrets = new Map<string, SecretState>();
    for (const s of this.informers.providerSecrets.list()) {
      const namespace = s.metadata?.namespace;
      if (!namespace) continue;
      providerSecrets.set(namespace, this.state(s, 'provider-tls'));
      secrets.set(describeTarget({ namespace }), s);
    }
    const { esoNamespace, caSecretName, clientSecretName } = this.installation;
    const ca = this.informers.caSecret.get(esoNamespace, caSecretName);
    const client = this.informers.clientSecret.get(esoNamespace, clientSecretName);
    if (ca) secrets.set(describeTarget('ca'), ca);
    if (client) secrets.set(describeTarget('client'), client);
    const snapshot = assembleSnapshot(
      {
        caSecret: ca && this.state(ca, 'ca'),
        clientSecret: client && this.state(client, 'client-tls'),
        services: providerServices,
        providerSecrets,
        ...(this.informers.allowedNamespaces ? { allowedNamespaces: this.informers.allowedNamespaces } : {}),
      },
      this.ledger,
    );
    return { snapshot, secrets, services };
  }

  private state(secret: V1Secret, component: SecretComponent): SecretState {
    let state = this.decoded.get(secret);
    if (!state) {
      const data: Record<string, Uint8Array> = {};
      for (const [key, value = ''] of Object.entries(secret.data ?? {})) {
        data[key] = key === SecretKeys.caCertificate ? this.bundles.get(value, () => decode(value)) : decode(value);
      }
      state = {
        data,
        ownership: classifyOwnership(secret, component, this.installation.id),
        annotations: { ...(secret.metadata?.annotations ?? {}) },
        version: secret.metadata?.resourceVersion,
      };
      this.decoded.set(secret, state);
    }
    return state;
  }
}

/**
 * A creationTimestamp as an instant: the informers keep the apiserver's RFC 3339 text (client-node
 * types it as a Date, which a caller's own objects may hold); undefined when absent or unreadable.
 */
function instantOf(timestamp: Date | string | undefined): Instant | undefined {
  if (timestamp === undefined) return undefined;
  const t = timestamp instanceof Date ? timestamp.getTime() : Date.parse(timestamp);
  return Number.isFinite(t) ? t : undefined;
}

/** The bytes of a base64 value, in a buffer of their own: a slice of Node's shared 8 KB pool would keep the whole slab alive. */
const decode = (base64: string): Uint8Array => new Uint8Array(Buffer.from(base64, 'base64'));

function append<T>(map: Map<string, T[]>, key: string, value: T): void {
  let list = map.get(key);
  if (!list) map.set(key, (list = []));
  list.push(value);
}
