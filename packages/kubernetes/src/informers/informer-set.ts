import type { Informer, InformerStats } from './informer.js';

/*
 * What a set of informers does together (the cluster's caches, an upstream source's): start and
 * wait for each to list once (or, for the upstream source, to have tried), stop, tell whether all
 * have, and sum their stats.
 */

/** An informer of any kind of object, as far as its lifecycle goes. */
type AnyInformer = Pick<Informer<never>, 'start' | 'stop' | 'synced' | 'attempted' | 'hasSynced' | 'lastError' | 'stats'>;

/** Starts every informer and resolves once each has listed once. */
export async function startAll(informers: readonly AnyInformer[]): Promise<void> {
  for (const informer of informers) informer.start();
  await Promise.all(informers.map((i) => i.synced));
}

/**
 * Starts every informer and resolves once each has listed once or failed to: for caches whose
 * failure is reported elsewhere and must not hold the caller's start (an upstream CA source's).
 */
export async function startAllAttempted(informers: readonly AnyInformer[]): Promise<void> {
  for (const informer of informers) informer.start();
  await Promise.all(informers.map((i) => i.attempted));
}

/** True once every informer has listed once or failed to. */
export const allAttempted = (informers: readonly AnyInformer[]): boolean => informers.every((i) => i.hasSynced || i.lastError !== undefined);

/** Stops every watch. */
export async function stopAll(informers: readonly AnyInformer[]): Promise<void> {
  await Promise.all(informers.map((i) => i.stop()));
}

/** True once every informer has listed once. */
export const allSynced = (informers: readonly AnyInformer[]): boolean => informers.every((i) => i.hasSynced);

/** The stats of each informer, summed. */
export function summedStats(informers: readonly AnyInformer[]): InformerStats {
  const total: InformerStats = { lists: 0, listPages: 0, watches: 0, bookmarks: 0, expired: 0, errors: 0, notHeld: 0 };
  for (const i of informers) for (const k of Object.keys(total) as (keyof InformerStats)[]) total[k] += i.stats[k];
  return total;
}
