import type { Instant, PodMetadataView, SelectingService } from '@eso-mtls/core';
import { serverNames } from '@eso-mtls/core';

/** A pod we issued a server certificate to, and the names it carries. */
export interface IssuedPod {
  readonly namespace: string;
  readonly podName: string;
  readonly podUid: string;
  readonly dnsNames: readonly string[];
  readonly notAfter: Instant;
}

/** Pods tracked at most; beyond, the oldest issuance is forgotten (its pod is then not counted). */
const MAX_TRACKED = 100_000;

/**
 * The latest server certificate issued to each pod, in this process's memory: pod certificates
 * live in the pods, not in the API. It feeds the stale-names gauge: pods serving names that no
 * labelled Service gives them any more (a Service renamed, unlabelled or reselected). A controller
 * restart forgets them until each pod's next refresh.
 */
export class IssuedPods {
  private readonly pods = new Map<string, IssuedPod>();

  /** Remembers the latest issuance for a pod. */
  record(pod: IssuedPod): void {
    this.pods.delete(pod.podUid);
    this.pods.set(pod.podUid, pod);
    if (this.pods.size > MAX_TRACKED) this.pods.delete(this.pods.keys().next().value as string);
  }

  /** Pods tracked now. */
  get size(): number {
    return this.pods.size;
  }

  /**
   * Per namespace, the live pods whose certificate's names differ from what a request now would
   * get. Expired certificates and pods gone (or replaced under the same name) are forgotten.
   */
  async staleNames(
    now: Instant,
    readPod: (namespace: string, name: string) => Promise<PodMetadataView | undefined>,
    services: ReadonlyMap<string, readonly SelectingService[]>,
    clusterDomain: string,
  ): Promise<Map<string, number>> {
    const stale = new Map<string, number>();
    for (const pod of [...this.pods.values()]) {
      if (pod.notAfter <= now) {
        this.pods.delete(pod.podUid);
        continue;
      }
      const meta = await readPod(pod.namespace, pod.podName);
      if (meta === undefined || meta.uid !== pod.podUid) {
        this.pods.delete(pod.podUid);
        continue;
      }
      const names = serverNames(pod.namespace, pod.podName, meta.labels, services.get(pod.namespace) ?? [], clusterDomain);
      const current = names.kind === 'names' ? names.dnsNames : [];
      if (!sameNames(current, pod.dnsNames)) stale.set(pod.namespace, (stale.get(pod.namespace) ?? 0) + 1);
    }
    return stale;
  }
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  const sorted = [...b].sort();
  return a.length === b.length && [...a].sort().every((n, i) => n === sorted[i]);
}
