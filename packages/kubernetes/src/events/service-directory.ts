import type { V1Service } from '@kubernetes/client-node';
import type { InvolvedObject } from './involved-object.js';

/**
 * The most Services one namespace-wide report is about: a namespace's labelled Services share one
 * Secret, so a change of it (or a failure to write it) is one fact, logged once and given an Event on
 * at most this many of them. An Event on each made a change cost a namespace's worth of Events
 * (about 600 per label toggle at 600 Services).
 */
export const MAX_SERVICES_REPORTED = 10;

/**
 * The Services a namespace-wide report names and puts its Events on: `first` (those it is about,
 * such as the Services a new certificate adds), then the others in order, at most
 * {@link MAX_SERVICES_REPORTED}.
 */
export function reportedServices(services: readonly string[], first: readonly string[] = []): string[] {
  const chosen = new Set<string>();
  for (const name of [...first.slice(0, MAX_SERVICES_REPORTED), ...services.slice(0, MAX_SERVICES_REPORTED)]) {
    if (chosen.size >= MAX_SERVICES_REPORTED) break;
    chosen.add(name);
  }
  return [...chosen];
}

/**
 * Log fields for the Services a namespace-wide line is about: how many, and the ones
 * {@link reportedServices} picks, so a line stays the same size at 1 or 10,000 Services.
 */
export function servicesFields(services: readonly string[], first: readonly string[] = []): { services: number; sample: string[] } {
  return { services: services.length, sample: reportedServices(services, first) };
}

/** The labelled Services of one snapshot, by namespace: where a round's Events about them go. */
export class ServiceDirectory {
  private readonly uids = new Map<string, string | undefined>();

  constructor(services: ReadonlyMap<string, readonly V1Service[]>) {
    for (const [namespace, list] of services) for (const s of list) this.uids.set(`${namespace}/${s.metadata?.name}`, s.metadata?.uid);
  }

  /** The named Services of `namespace` as Event targets, with their uids where the cache has them. */
  refs(namespace: string, names: readonly string[]): InvolvedObject[] {
    return names.map((name) => ({ namespace, name, uid: this.uids.get(`${namespace}/${name}`) }));
  }
}
