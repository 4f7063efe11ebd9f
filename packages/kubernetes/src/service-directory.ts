import type { V1Service } from '@kubernetes/client-node';
import type { ServiceReference } from './event-recorder.js';

/** The labelled Services of one snapshot, by namespace: where a round's Events about them go. */
export class ServiceDirectory {
  private readonly uids = new Map<string, string | undefined>();

  constructor(services: ReadonlyMap<string, readonly V1Service[]>) {
    for (const [namespace, list] of services) for (const s of list) this.uids.set(`${namespace}/${s.metadata?.name}`, s.metadata?.uid);
  }

  /** The named Services of `namespace` as Event targets, with their uids where the cache has them. */
  refs(namespace: string, names: readonly string[]): ServiceReference[] {
    return names.map((name) => ({ namespace, name, uid: this.uids.get(`${namespace}/${name}`) }));
  }
}
