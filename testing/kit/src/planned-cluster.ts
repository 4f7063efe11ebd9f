// The core's planner driving real Secret folders: plan, execute, apply to an in-memory store, and
// write every changed Secret kubelet-style into the folder its pod mounts.
import { CertificateCache, executePlan, MemoryStore, planRotation, resolvePolicy, ROTATE_ANNOTATION, type Policy, type SecretWrite } from '@eso-mtls/core';
import { createNodeCryptoBackend, createNodeVerifier } from '@eso-mtls/core/node';
import type { CertificateWatcher } from '@eso-mtls/grpc';
import { writeAtomically } from './demo.js';

/**
 * A cluster with one provider Service and ESO's client Secret. The plan clock runs at least as
 * fast as the wall clock and can be advanced, so schedule waits (propagation, connection age) are
 * short while every certificate is still valid for real TLS.
 */
export class PlannedCluster {
  readonly store = new MemoryStore();
  readonly policy: Policy;
  private readonly cache = new CertificateCache(createNodeVerifier());
  private readonly crypto = createNodeCryptoBackend();
  private planNow = Date.now();

  constructor(
    readonly namespace: string,
    readonly service: string,
    private readonly dirs: { readonly client: string; readonly server: string },
  ) {
    // One-second propagation and connection age: the schedule's waits, without real minutes.
    this.policy = resolvePolicy({ propagationDelay: 1000, maxConnectionAge: 1000 });
    this.store.setServices(namespace, [{ name: service }]);
  }

  /** Moves the plan clock forward (the real clock moves it too). */
  advance(ms: number): void {
    this.planNow = Math.max(this.planNow, Date.now()) + ms;
  }

  /**
   * Plans, executes and applies one reconcile, and writes the client and provider folders it
   * changed, unless `deferFolders` (the caller then writes them with {@link writeFolder}).
   */
  async reconcile(options: { readonly deferFolders?: boolean } = {}): Promise<SecretWrite[]> {
    this.planNow = Math.max(this.planNow, Date.now());
    const plan = planRotation(this.store.snapshot(), { now: this.planNow, policy: this.policy, cache: this.cache });
    const writes = await executePlan(plan, { crypto: this.crypto });
    for (const w of writes) {
      this.store.apply(w);
      if (!options.deferFolders) await this.writeFolder(w);
    }
    return writes;
  }

  /** Writes a leaf or bundle write into the folder that Secret is mounted at (the kubelet's part). */
  async writeFolder(w: SecretWrite): Promise<void> {
    if (w.target === 'ca') return;
    const dir = w.target === 'client' ? this.dirs.client : this.dirs.server;
    await writeAtomically(dir, { 'tls.crt': w.data['tls.crt']!, 'tls.key': w.data['tls.key']!, 'ca.crt': w.data['ca.crt']! });
  }

  /** The `eso-mtls.io/rotate` annotation on the provider Service. */
  requestServerRotation(token: string): void {
    this.store.setServices(this.namespace, [{ name: this.service, rotateRequest: token }]);
  }

  /** The `eso-mtls.io/rotate` annotation on the client Secret or the CA Secret. */
  requestRotation(target: 'client' | 'ca', token: string): void {
    const state = this.store.get(target);
    if (state === undefined) throw new Error(`no ${target} Secret yet`);
    this.store.put(target, { data: state.data, ownership: state.ownership, annotations: { ...state.annotations, [ROTATE_ANNOTATION]: token } });
  }
}

/** Resolves once `watcher` serves exactly `write`'s tls.crt and ca.crt; rejects on a refused load or after 5 s. */
export function loaded(watcher: CertificateWatcher, write: SecretWrite): Promise<void> {
  const matches = () => watcher.current?.certificate === write.data['tls.crt'] && watcher.current?.caBundle === write.data['ca.crt'];
  if (matches()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = () => (clearTimeout(timer), offs.forEach((f) => f()));
    const timer = setTimeout(() => (done(), reject(new Error(`${watcher.directory} did not load the ${write.kind} write within 5 s`))), 5000);
    const offs = [
      watcher.onMaterial(() => matches() && (done(), resolve())),
      watcher.onFailure((f) => (done(), reject(new Error(`${watcher.directory} refused the ${write.kind} write: ${f.message}`)))),
    ];
  });
}
