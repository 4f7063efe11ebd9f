import {
  type ProviderNamespace, type ProviderService, ROTATE_ANNOTATION, type SecretState, type Snapshot, describeTarget,
} from '@eso-mtls/core';
import type { V1Secret, V1Service } from '@kubernetes/client-node';
import type { ClusterInformers } from './cluster-informers.js';
import type { IssuanceLedger } from './ledger.js';
import { type SecretComponent, classifyOwnership } from './ownership.js';

/** A snapshot and the raw Secrets it was built from, by target, to merge metadata into writes. */
export interface BuiltSnapshot {
  readonly snapshot: Snapshot;
  readonly secrets: ReadonlyMap<string, V1Secret>;
  /** Labelled Services by namespace, for Events. */
  readonly services: ReadonlyMap<string, readonly V1Service[]>;
}

/**
 * Builds the core's {@link Snapshot} from the informer caches. Decoded Secret states are memoised
 * per cached object (a watch event replaces the object), so a resync decodes nothing again.
 */
export class SnapshotBuilder {
  private readonly decoded = new WeakMap<V1Secret, SecretState>();

  constructor(
    private readonly informers: ClusterInformers,
    private readonly ledger: IssuanceLedger,
    private readonly installation: string,
    private readonly esoNamespace: string,
    private readonly caSecretName: string,
    private readonly clientSecretName: string,
  ) {}

  /** The snapshot of the caches as they are now; records managed Secrets in the ledger. */
  build(): BuiltSnapshot {
    const secrets = new Map<string, V1Secret>();
    const services = new Map<string, V1Service[]>();
    for (const svc of this.informers.services.list()) {
      const ns = svc.metadata?.namespace;
      if (!ns || !svc.metadata?.name) continue;
      let list = services.get(ns);
      if (!list) services.set(ns, (list = []));
      list.push(svc);
    }
    const providerSecrets = new Map<string, V1Secret>();
    for (const s of this.informers.providerSecrets.list()) {
      if (s.metadata?.namespace) providerSecrets.set(s.metadata.namespace, s);
    }

    const ca = this.informers.caSecret.get(this.esoNamespace, this.caSecretName);
    const client = this.informers.clientSecret.get(this.esoNamespace, this.clientSecretName);
    const caSecret = ca && this.state(ca, 'ca');
    const clientSecret = client && this.state(client, 'client-tls');
    if (ca) secrets.set(describeTarget('ca'), ca);
    if (client) secrets.set(describeTarget('client'), client);
    if (clientSecret?.ownership === 'managed') this.ledger.record('client');

    const names = [...new Set([...services.keys(), ...providerSecrets.keys()])].sort();
    const namespaces: ProviderNamespace[] = names.map((namespace) => {
      const raw = providerSecrets.get(namespace);
      const secret = raw && this.state(raw, 'provider-tls');
      if (raw) secrets.set(describeTarget({ namespace }), raw);
      if (secret?.ownership === 'managed') this.ledger.record({ namespace });
      const svcs: ProviderService[] = (services.get(namespace) ?? [])
        .map((s) => ({ name: s.metadata!.name!, rotateRequest: s.metadata?.annotations?.[ROTATE_ANNOTATION] }))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      return { namespace, services: svcs, ...(secret ? { secret } : {}), previouslyIssued: this.ledger.has({ namespace }) };
    });
    const snapshot: Snapshot = {
      ...(caSecret ? { caSecret } : {}),
      ...(clientSecret ? { clientSecret } : {}),
      clientPreviouslyIssued: this.ledger.has('client'),
      namespaces,
    };
    return { snapshot, secrets, services };
  }

  private state(secret: V1Secret, component: SecretComponent): SecretState {
    let state = this.decoded.get(secret);
    if (!state) {
      const data: Record<string, Uint8Array> = {};
      for (const [key, value] of Object.entries(secret.data ?? {})) data[key] = Buffer.from(value ?? '', 'base64');
      state = {
        data,
        ownership: classifyOwnership(secret, component, this.installation),
        annotations: { ...(secret.metadata?.annotations ?? {}) },
        version: secret.metadata?.resourceVersion,
      };
      this.decoded.set(secret, state);
    }
    return state;
  }
}
